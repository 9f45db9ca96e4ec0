/*
 * The sealed tier's egress relay (x86_64, no libc): bubblewrap's first program when a command has
 * `network.allow`, before the launcher.
 *   egress-relay <port> <socket-path> <seccomp-fd> -- <launcher> <args>...
 * 1. listens on 127.0.0.1:<port> in the sandbox's network namespace (which has only loopback),
 * 2. forks: the child restores the signal mask and execs the launcher (then the command), so the
 *    port is listening before the command's first instruction,
 * 3. the parent drops every capability, sets no_new_privs and non-dumpable (the command cannot
 *    read or write its memory through /proc), loads the seccomp program read from the fd, and
 *    relays: each accepted connection gets its own connection to <socket-path> (the runtime's
 *    proxy, bound in from the host) and bytes are copied both ways with half-close; at most
 *    MAX_PAIRS at a time (one more is accepted and closed at once), 16 KiB buffered per direction,
 * 4. exits with the command's status when the command exits (128 + signal when it was killed).
 * The runtime's proxy decides everything else (policy, limits, timeouts): this only moves bytes.
 * Build (EgressRelay.ts embeds the result):
 *   gcc -Os -static -nostdlib -ffreestanding -fno-builtin -fno-stack-protector -fno-pie -no-pie \
 *       -fno-asynchronous-unwind-tables -Wl,--build-id=none -s -o egress-relay egress-relay.c
 */
typedef unsigned long u64;

static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
  return ret;
}
#define sys(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)

enum {
  SYS_read = 0, SYS_close = 3, SYS_poll = 7, SYS_rt_sigprocmask = 14, SYS_socket = 41, SYS_connect = 42,
  SYS_sendto = 44, SYS_shutdown = 48, SYS_bind = 49, SYS_listen = 50, SYS_setsockopt = 54, SYS_fork = 57,
  SYS_execve = 59, SYS_exit = 60, SYS_wait4 = 61, SYS_capset = 126, SYS_prctl = 157, SYS_accept4 = 288,
  SYS_signalfd4 = 289, SYS_write = 1
};
#define EAGAIN 11
#define EINTR 4
#define NONBLOCK 04000
#define CLOEXEC 02000000
#define MSG_NOSIGNAL 0x4000
#define POLLIN 1
#define POLLOUT 4
#define SIGCHLD_BIT (1UL << (17 - 1))

#define MAX_PAIRS 64
#define BUF 16384

static u64 len(const char *s) { u64 n = 0; while (s[n]) n++; return n; }
static void say(const char *s) { sys(SYS_write, 2, s, len(s)); }
static void die(const char *what, const char *arg, long code) {
  say("murmur egress-relay: "); say(what); if (arg) { say(" "); say(arg); } say("\n");
  sys(SYS_exit, code, 0, 0);
  for (;;) {}
}
static int eq(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }
static long num(const char *p) {
  long n = 0;
  if (!*p) return -1;
  for (; *p; p++) { if (*p < '0' || *p > '9') return -1; n = n * 10 + (*p - '0'); }
  return n;
}

struct half { unsigned char buf[BUF]; long off, end; int eof, shut; };
struct pair { int tcp, sock; struct half up, down; };
/* up: read from tcp, sent to sock (the runtime); down: read from sock, sent to tcp. */

static struct pair pairs[MAX_PAIRS];
static struct { int fd; short events, revents; } fds[2 + 2 * MAX_PAIRS];
static unsigned char filter[65536];
static struct { unsigned short family; char path[108]; } target;
static long target_len;

static void drop(struct pair *p) {
  sys(SYS_close, p->tcp, 0, 0);
  sys(SYS_close, p->sock, 0, 0);
  p->tcp = -1;
  p->sock = -1;
}

/* Reads into an empty buffer when `from` is ready, then sends what is buffered (non-blocking: a
 * full peer just leaves it for the next round); shuts `to` for writing after the last byte. */
static int pump(struct half *h, int from, int to, short from_revents) {
  if (h->off == h->end && !h->eof && from_revents) {
    long n = sys(SYS_read, from, h->buf, BUF);
    if (n < 0 && n != -EAGAIN && n != -EINTR) return -1;
    if (n == 0) h->eof = 1;
    if (n > 0) { h->off = 0; h->end = n; }
  }
  if (h->off < h->end) {
    long n = sys6(SYS_sendto, to, (long)(h->buf + h->off), h->end - h->off, MSG_NOSIGNAL, 0, 0);
    if (n < 0 && n != -EAGAIN && n != -EINTR) return -1;
    if (n > 0) h->off += n;
  }
  if (h->eof && h->off == h->end && !h->shut) { sys(SYS_shutdown, to, 1, 0); h->shut = 1; }
  return 0;
}

static void accept_all(int listener) {
  for (;;) {
    long fd = sys6(SYS_accept4, listener, 0, 0, NONBLOCK | CLOEXEC, 0, 0);
    if (fd < 0) return;
    struct pair *slot = 0;
    for (int i = 0; i < MAX_PAIRS; i++) if (pairs[i].tcp < 0) { slot = &pairs[i]; break; }
    long u = slot ? sys(SYS_socket, 1, 1 | NONBLOCK | CLOEXEC, 0) : -1;
    if (u >= 0 && sys(SYS_connect, u, &target, target_len) != 0) { sys(SYS_close, u, 0, 0); u = -1; }
    if (u < 0) { sys(SYS_close, fd, 0, 0); continue; }
    slot->tcp = (int)fd;
    slot->sock = (int)u;
    slot->up.off = slot->up.end = slot->up.eof = slot->up.shut = 0;
    slot->down.off = slot->down.end = slot->down.eof = slot->down.shut = 0;
  }
}

/* Reads the seccomp program (before the fork, so the command never inherits its fd). */
static long read_filter(const char *seccomp) {
  long fd = num(seccomp);
  if (fd < 0) die("bad seccomp fd", seccomp, 126);
  long total = 0;
  for (;;) {
    long n = sys(SYS_read, fd, filter + total, sizeof(filter) - total);
    if (n < 0) die("reading the seccomp program failed", 0, 126);
    if (n == 0) break;
    total += n;
    if (total == sizeof(filter)) die("seccomp program too large", 0, 126);
  }
  sys(SYS_close, fd, 0, 0);
  if (total == 0 || total % 8 != 0) die("malformed seccomp program", 0, 126);
  return total;
}

static void lockdown(long total) {
  for (long cap = 0; cap < 64; cap++) sys6(SYS_prctl, 24, cap, 0, 0, 0, 0); /* PR_CAPBSET_DROP */
  sys6(SYS_prctl, 47, 4, 0, 0, 0, 0); /* PR_CAP_AMBIENT_CLEAR_ALL */
  unsigned int header[2] = { 0x20080522, 0 };
  unsigned int data[6] = { 0, 0, 0, 0, 0, 0 };
  if (sys(SYS_capset, header, data, 0) != 0) die("capset failed", 0, 126);
  if (sys6(SYS_prctl, 38, 1, 0, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS failed", 0, 126);
  if (sys6(SYS_prctl, 4, 0, 0, 0, 0, 0) != 0) die("PR_SET_DUMPABLE failed", 0, 126);
  struct { unsigned short len; unsigned char *prog; } fprog = { (unsigned short)(total / 8), filter };
  if (sys6(SYS_prctl, 22, 2, (long)&fprog, 0, 0, 0) != 0) die("loading the seccomp program failed", 0, 126);
}

void cmain(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  if (argc < 6 || !eq(argv[4], "--")) die("usage: egress-relay <port> <socket-path> <seccomp-fd> -- <launcher> <args>...", 0, 126);
  long port = num(argv[1]);
  if (port <= 0 || port > 65535) die("bad port", argv[1], 126);
  u64 plen = len(argv[2]);
  if (plen == 0 || plen >= sizeof(target.path)) die("bad socket path", argv[2], 126);
  target.family = 1;
  for (u64 k = 0; k < plen; k++) target.path[k] = argv[2][k];
  target_len = 2 + (long)plen + 1;

  long filter_bytes = read_filter(argv[3]);
  long listener = sys(SYS_socket, 2, 1 | NONBLOCK | CLOEXEC, 0);
  if (listener < 0) die("socket failed", 0, 126);
  int one = 1;
  sys6(SYS_setsockopt, listener, 1, 2, (long)&one, sizeof(one), 0); /* SO_REUSEADDR */
  struct { unsigned short family, port; unsigned int addr; unsigned char zero[8]; } in = {
    2, (unsigned short)(((port & 0xff) << 8) | ((port >> 8) & 0xff)), 0x0100007f, { 0 }
  };
  if (sys(SYS_bind, listener, &in, sizeof(in)) != 0) die("bind 127.0.0.1 failed, port", argv[1], 126);
  if (sys(SYS_listen, listener, 128, 0) != 0) die("listen failed", 0, 126);

  u64 mask = SIGCHLD_BIT, old = 0;
  sys6(SYS_rt_sigprocmask, 0, (long)&mask, (long)&old, 8, 0, 0); /* SIG_BLOCK */
  long sfd = sys6(SYS_signalfd4, -1, (long)&mask, 8, NONBLOCK | CLOEXEC, 0, 0);
  if (sfd < 0) die("signalfd failed", 0, 126);
  long child = sys(SYS_fork, 0, 0, 0);
  if (child < 0) die("fork failed", 0, 126);
  if (child == 0) {
    sys6(SYS_rt_sigprocmask, 2, (long)&old, 0, 8, 0, 0); /* SIG_SETMASK */
    sys(SYS_execve, argv[5], argv + 5, envp);
    die("execve failed for", argv[5], 127);
  }
  lockdown(filter_bytes);
  /* The command's stdio is its own: holding it here would keep the runtime's pipes open. */
  for (int k = 0; k < 3; k++) sys(SYS_close, k, 0, 0);
  for (int i = 0; i < MAX_PAIRS; i++) pairs[i].tcp = pairs[i].sock = -1;

  for (;;) {
    fds[0].fd = (int)listener; fds[0].events = POLLIN;
    fds[1].fd = (int)sfd; fds[1].events = POLLIN;
    for (int i = 0; i < MAX_PAIRS; i++) {
      struct pair *p = &pairs[i];
      short t = 0, u = 0;
      if (p->tcp >= 0) {
        if (p->up.off == p->up.end && !p->up.eof) t |= POLLIN;
        if (p->down.off < p->down.end) t |= POLLOUT;
        if (p->down.off == p->down.end && !p->down.eof) u |= POLLIN;
        if (p->up.off < p->up.end) u |= POLLOUT;
      }
      /* A negative fd is skipped: a hung-up socket nobody waits on cannot spin the loop. */
      fds[2 + 2 * i].fd = t ? p->tcp : -1; fds[2 + 2 * i].events = t;
      fds[3 + 2 * i].fd = u ? p->sock : -1; fds[3 + 2 * i].events = u;
    }
    long ready = sys(SYS_poll, fds, 2 + 2 * MAX_PAIRS, -1);
    if (ready < 0 && ready != -EINTR) die("poll failed", 0, 126);
    if (ready <= 0) continue;
    if (fds[1].revents) {
      unsigned char info[128];
      while (sys(SYS_read, sfd, info, sizeof(info)) > 0) {}
      for (;;) {
        int status = 0;
        long pid = sys6(SYS_wait4, -1, (long)&status, 1 /* WNOHANG */, 0, 0, 0);
        if (pid <= 0) break;
        if (pid == child) sys(SYS_exit, (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), 0, 0);
      }
    }
    for (int i = 0; i < MAX_PAIRS; i++) {
      struct pair *p = &pairs[i];
      if (p->tcp < 0) continue;
      short t = fds[2 + 2 * i].revents, u = fds[3 + 2 * i].revents;
      if (!t && !u) continue;
      if ((t | u) & 8 /* POLLERR */ ||
          pump(&p->up, p->tcp, p->sock, t & (POLLIN | 16)) < 0 ||
          pump(&p->down, p->sock, p->tcp, u & (POLLIN | 16)) < 0) {
        drop(p);
        continue;
      }
      if (p->up.shut && p->down.shut) drop(p);
    }
    if (fds[0].revents) accept_all((int)listener);
  }
}

__asm__(".globl _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n call cmain\n hlt\n");
