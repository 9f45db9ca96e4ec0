/*
 * The sealed tier's last step inside bubblewrap, before the command (x86_64, no libc).
 *   exec-launcher <seccomp-fd|-> <uid|-> <noexec-mount>... -- <absolute program> <args>...
 * 1. unshare a mount namespace it owns (bwrap's is not: its mounts cannot be changed from inside),
 * 2. remount each named mount noexec (keeping its locked flags: bwrap 0.8 has no noexec option),
 * 3. drop the bounding set; with a uid (the runtime is root: RLIMIT_NPROC binds no process whose
 *    real uid is the host's root), become that uid and gid with no supplementary groups, keeping
 *    only CAP_DAC_OVERRIDE and CAP_FOWNER (ambient, so they survive the exec) for the root-owned
 *    workdir (access(2) too: SECBIT_NO_SETUID_FIXUP), and re-arm the parent-death signal the uid
 *    change cleared; else drop every capability,
 * 4. set no_new_privs, load the classic-BPF seccomp program read from the fd (after the mounts:
 *    it denies mount),
 * 5. execve the program by its absolute path.
 * Build (ExecLauncher.ts embeds the result):
 *   gcc -Os -static -nostdlib -ffreestanding -fno-builtin -fno-stack-protector -fno-pie -no-pie \
 *       -fno-asynchronous-unwind-tables -Wl,--build-id=none -s -o exec-launcher exec-launcher.c
 */
typedef unsigned long u64;

static long sys6(long n, long a, long b, long c, long d, long e) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return ret;
}
#define sys(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0)

static u64 len(const char *s) { u64 n = 0; while (s[n]) n++; return n; }
static void say(const char *s) { sys(1, 2, s, len(s)); }
static void die(const char *what, const char *arg, long code) {
  say("murmur exec-launcher: "); say(what); if (arg) { say(" "); say(arg); } say("\n");
  sys(60, code, 0, 0);
  for (;;) {}
}
static int eq(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }
static long number(const char *s) { long n = 0; for (; *s; s++) n = n * 10 + (*s - '0'); return n; }

static unsigned char filter[65536];

void cmain(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  if (argc < 5) die("usage: exec-launcher <seccomp-fd|-> <uid|-> <noexec-mount>... -- <program> <args>...", 0, 126);
  long i = 3;
  if (sys(272, 0x00020000, 0, 0) != 0) die("unshare(CLONE_NEWNS) failed", 0, 126);
  for (; i < argc && !eq(argv[i], "--"); i++) {
    u64 st[15];
    for (int k = 0; k < 15; k++) st[k] = 0;
    if (sys(137, argv[i], st, 0) != 0) die("statfs failed for", argv[i], 126);
    u64 f = st[10] & (1 | 2 | 4 | 8 | 16 | 64 | 1024 | 2048);
    if (st[10] & 4096) f |= 1UL << 21; /* ST_RELATIME -> MS_RELATIME */
    /* MS_BIND|MS_REMOUNT|MS_NOEXEC|MS_NOSUID|MS_NODEV plus the flags it had */
    if (sys6(165, 0, (long)argv[i], 0, (long)(4096 | 32 | 8 | 2 | 4 | f), 0) != 0) die("remount noexec failed for", argv[i], 126);
  }
  if (i + 1 >= argc) die("missing program after --", 0, 126);
  for (long cap = 0; cap < 64; cap++) sys6(157, 24, cap, 0, 0, 0); /* PR_CAPBSET_DROP */
  sys6(157, 47, 4, 0, 0, 0); /* PR_CAP_AMBIENT_CLEAR_ALL */
  unsigned int kept = 0;
  if (!eq(argv[2], "-")) {
    long uid = number(argv[2]);
    kept = (1u << 1) | (1u << 3); /* CAP_DAC_OVERRIDE, CAP_FOWNER */
    /* SECBIT_NO_SETUID_FIXUP(+LOCKED): access(2) checks with the real uid and, without it, no
       capability, so it would refuse what open(2) allows (the composed root's 0700 dirs, the
       root-owned workdir). */
    if (sys6(157, 28, 0x0c, 0, 0, 0) != 0) die("PR_SET_SECUREBITS failed", 0, 126);
    if (sys6(157, 8, 1, 0, 0, 0) != 0) die("PR_SET_KEEPCAPS failed", 0, 126);
    if (sys(116, 0, 0, 0) != 0) die("setgroups failed", 0, 126);
    if (sys(119, uid, uid, uid) != 0) die("setresgid failed for", argv[2], 126);
    if (sys(117, uid, uid, uid) != 0) die("setresuid failed for", argv[2], 126);
  }
  unsigned int header[2] = { 0x20080522, 0 };
  unsigned int data[6] = { kept, kept, kept, 0, 0, 0 };
  if (sys(126, header, data, 0) != 0) die("capset failed", 0, 126);
  for (long cap = 1; cap <= 3; cap += 2) {
    if ((kept & (1u << cap)) && sys6(157, 47, 2, cap, 0, 0) != 0) die("PR_CAP_AMBIENT_RAISE failed", 0, 126);
  }
  /* A changed uid cleared bwrap's --die-with-parent signal. */
  if (kept && sys6(157, 1, 9, 0, 0, 0) != 0) die("PR_SET_PDEATHSIG failed", 0, 126);
  if (sys6(157, 38, 1, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS failed", 0, 126);
  if (!eq(argv[1], "-")) {
    long fd = number(argv[1]);
    long total = 0;
    for (;;) {
      long n = sys(0, fd, filter + total, sizeof(filter) - total);
      if (n < 0) die("reading the seccomp program failed", 0, 126);
      if (n == 0) break;
      total += n;
      if (total == sizeof(filter)) die("seccomp program too large", 0, 126);
    }
    sys(3, fd, 0, 0);
    if (total == 0 || total % 8 != 0) die("malformed seccomp program", 0, 126);
    struct { unsigned short len; unsigned char *prog; } fprog = { (unsigned short)(total / 8), filter };
    if (sys6(157, 22, 2, (long)&fprog, 0, 0) != 0) die("loading the seccomp program failed", 0, 126);
  }
  sys(59, argv[i + 1], argv + i + 1, envp);
  die("execve failed for", argv[i + 1], 127);
}

__asm__(".globl _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n call cmain\n hlt\n");
