/**
 * The shell's seccomp program, as classic BPF (`struct sock_filter[]`, 8 bytes each, host byte
 * order), generated here so no libseccomp is needed. A deny-list on top of the namespaces: it
 * refuses the syscalls a contained process has no use for and that widen the kernel's attack
 * surface (io_uring, bpf, perf, keyrings, ptrace, mounts and namespaces, module and kexec loading,
 * handle-based opens, userfaultfd), namespace-creating `clone` flags (`clone3` gets ENOSYS so libc
 * falls back to `clone`, whose flags a filter can read), `socket()` for AF_NETLINK and AF_PACKET
 * always and AF_UNIX unless granted, and the TIOCSTI ioctl. Any other architecture than the one
 * it was built for, and x32 syscall numbers, are refused. Only x86_64 is built.
 */

/** `AUDIT_ARCH_X86_64`. */
export const AUDIT_ARCH_X86_64 = 0xc000003e

const EPERM = 1
const ENOSYS = 38
const RET_ALLOW = 0x7fff0000
const RET_KILL_PROCESS = 0x80000000
const retErrno = (errno: number) => 0x00050000 | errno

const X32_BIT = 0x40000000

/** x86_64 numbers of every syscall the program refuses with EPERM, by name. */
export const DENIED_SYSCALLS_X86_64: Readonly<Record<string, number>> = {
  ptrace: 101,
  syslog: 103,
  uselib: 134,
  personality: 135,
  vhangup: 153,
  pivot_root: 155,
  chroot: 161,
  acct: 163,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  iopl: 172,
  ioperm: 173,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  lookup_dcookie: 212,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  fanotify_init: 300,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  kcmp: 312,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442
}

const NR_IOCTL = 16
const NR_SOCKET = 41
const NR_CLONE = 56
const NR_CLONE3 = 435

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME. */
export const CLONE_NEW_MASK = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

const AF_UNIX = 1
const AF_NETLINK = 16
const AF_PACKET = 17
const TIOCSTI = 0x5412

// struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
const OFFSET_NR = 0
const OFFSET_ARCH = 4
const offsetArgLow = (index: number) => 16 + 8 * index

// BPF opcodes
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JSET_K = 0x45
const RET_K = 0x06

interface Instruction {
  readonly code: number
  readonly jt: number
  readonly jf: number
  readonly k: number
}

const stmt = (code: number, k: number): Instruction => ({ code, jt: 0, jf: 0, k })
const jump = (code: number, k: number, jt: number, jf: number): Instruction => ({ code, jt, jf, k })

export interface SeccompOptions {
  /** `capabilities.network.unix_sockets`: AF_UNIX sockets may be created. */
  readonly unixSockets: boolean
}

/** The program as instructions (for tests and for `encode`). */
export const seccompInstructions = (options: SeccompOptions): ReadonlyArray<Instruction> => {
  const program: Array<Instruction> = []
  const deny = retErrno(EPERM)
  program.push(stmt(LD_W_ABS, OFFSET_ARCH))
  program.push(jump(JEQ_K, AUDIT_ARCH_X86_64, 1, 0))
  program.push(stmt(RET_K, RET_KILL_PROCESS))
  program.push(stmt(LD_W_ABS, OFFSET_NR))
  program.push(jump(JSET_K, X32_BIT, 0, 1))
  program.push(stmt(RET_K, deny))
  for (const nr of Object.values(DENIED_SYSCALLS_X86_64)) {
    program.push(jump(JEQ_K, nr, 0, 1))
    program.push(stmt(RET_K, deny))
  }
  program.push(jump(JEQ_K, NR_CLONE3, 0, 1))
  program.push(stmt(RET_K, retErrno(ENOSYS)))
  // clone: flags are args[0]
  program.push(jump(JEQ_K, NR_CLONE, 0, 3))
  program.push(stmt(LD_W_ABS, offsetArgLow(0)))
  program.push(jump(JSET_K, CLONE_NEW_MASK, 0, 1))
  program.push(stmt(RET_K, deny))
  // (reload nr: the accumulator may hold clone's flags)
  program.push(stmt(LD_W_ABS, OFFSET_NR))
  // ioctl: request is args[1]
  program.push(jump(JEQ_K, NR_IOCTL, 0, 3))
  program.push(stmt(LD_W_ABS, offsetArgLow(1)))
  program.push(jump(JEQ_K, TIOCSTI, 0, 1))
  program.push(stmt(RET_K, deny))
  program.push(stmt(LD_W_ABS, OFFSET_NR))
  // socket: family is args[0]
  const families = [AF_NETLINK, AF_PACKET, ...(options.unixSockets ? [] : [AF_UNIX])]
  program.push(jump(JEQ_K, NR_SOCKET, 0, 1 + families.length * 2))
  program.push(stmt(LD_W_ABS, offsetArgLow(0)))
  for (const family of families) {
    program.push(jump(JEQ_K, family, 0, 1))
    program.push(stmt(RET_K, deny))
  }
  program.push(stmt(RET_K, RET_ALLOW))
  return program
}

/** The program as `struct sock_filter[]` bytes, ready for `prctl(PR_SET_SECCOMP)`. */
export const seccompProgram = (options: SeccompOptions): Buffer => {
  const instructions = seccompInstructions(options)
  const bytes = Buffer.alloc(instructions.length * 8)
  instructions.forEach((instruction, index) => {
    bytes.writeUInt16LE(instruction.code, index * 8)
    bytes.writeUInt8(instruction.jt, index * 8 + 2)
    bytes.writeUInt8(instruction.jf, index * 8 + 3)
    bytes.writeUInt32LE(instruction.k >>> 0, index * 8 + 4)
  })
  return bytes
}
