/**
 * The pure half of the shell grant (reference §3.5): the tool input, the argv a binary gets, the
 * environment a subprocess sees, exit codes, and every text the model or a log file reads. The
 * `Shell` service (src/shell/Shell.ts) does the spawning; nothing here starts a process.
 */
import { accessSync, constants as fsConstants, realpathSync, statSync } from "node:fs"
import { delimiter, join } from "node:path"
import { constants } from "node:os"
import type { ToolResultData } from "../sandbox/GuestJob.js"
import { strippingPattern } from "../sandbox/grants/EnvGrant.js"

/** Per-stream cap on what the model reads (its start and end); the rest goes to a log file (./ShellOutput.ts). */
export const MAX_SHELL_OUTPUT_BYTES = 16 * 1024

export const SHELL_INTERPRETERS: ReadonlyArray<string> = ["bash", "sh", "zsh", "fish", "dash", "ksh"]

/** Host variables every subprocess gets when the host has them set. */
export const DEFAULT_ENV_BASELINE: ReadonlyArray<string> = [
  "PATH",
  "HOME",
  "USER",
  "LANG",
  "LC_ALL",
  "TMPDIR",
  "TEMP",
  "TMP",
  "CARGO_HOME",
  "RUSTUP_HOME",
  "TERM"
]

/** The synthetic home, under the accessible workdir. */
export const SYNTHETIC_HOME_DIR_NAME = ".capsule-home"

/** The program a bare name resolves to on `PATH`, canonicalized; else the name as given. */
export const resolveBinary = (binary: string, path: string | undefined): string => {
  if (binary.includes("/") || path === undefined) return binary
  for (const dir of path.split(delimiter)) {
    if (dir.length === 0) continue
    const candidate = join(dir, binary)
    try {
      accessSync(candidate, fsConstants.X_OK)
      if (statSync(candidate).isFile()) return realpathSync(candidate)
    } catch {
      // not here
    }
  }
  return binary
}

export const isShellInterpreter = (binary: string): boolean => SHELL_INTERPRETERS.includes(binary)

/** Description of the synthetic tool manifest each `shell.allow` binary gets. */
export const shellToolDescription = (binary: string): string =>
  isShellInterpreter(binary)
    ? `Run a shell command via ${binary} in the capsule workdir. The \`command\` field is passed to ${binary} via -c.`
    : `Run ${binary} in the capsule workdir. The \`command\` field is the argument list — omit the binary name itself (pass -s http://example.com, not ${binary} -s http://example.com).`

export const SHELL_TOOL_INPUT_SCHEMA = "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},\"required\":[\"command\"]}"

/** An `error`-status tool result. */
export const errorResult = (summary: string, data?: string): ToolResultData => ({
  status: "error",
  summary,
  ...(data === undefined ? {} : { data }),
  truncated: false,
  metadata: []
})

/**
 * The `command` of a shell tool call's `input.data`, or the reference's error result when the
 * data is absent, not JSON, or has no non-empty `command` string.
 */
export const parseShellInput = (
  data: string | undefined
): { readonly _tag: "Command"; readonly command: string } | { readonly _tag: "Invalid"; readonly result: ToolResultData } => {
  if (data === undefined) return { _tag: "Invalid", result: errorResult("shell tool input.data is required") }
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch (error) {
    return { _tag: "Invalid", result: errorResult(`shell tool input must be valid JSON: ${(error as Error).message}`) }
  }
  const command = typeof parsed === "object" && parsed !== null ? (parsed as { command?: unknown }).command : undefined
  return typeof command === "string" && command.length > 0
    ? { _tag: "Command", command }
    : { _tag: "Invalid", result: errorResult("shell tool input must include a non-empty 'command' string") }
}

/**
 * Whitespace splitting that honours single and double quotes and backslash escapes (a backslash
 * escapes the next character everywhere, also inside quotes). No globbing, no expansion.
 */
export const splitShellWords = (command: string): Array<string> => {
  const words: Array<string> = []
  let current = ""
  let quote: string | undefined
  let escaped = false
  for (const ch of command) {
    if (escaped) {
      current += ch
      escaped = false
    } else if (ch === "\\") {
      escaped = true
    } else if (quote === undefined && (ch === "\"" || ch === "'")) {
      quote = ch
    } else if (quote !== undefined && ch === quote) {
      quote = undefined
    } else if (quote === undefined && /\s/u.test(ch)) {
      if (current.length > 0) words.push(current)
      current = ""
    } else {
      current += ch
    }
  }
  if (current.length > 0) words.push(current)
  return words
}

/** Interpreters get `-c <command>`; any other binary gets the command split into words. */
export const argvFor = (binary: string, command: string): Array<string> =>
  isShellInterpreter(binary) ? ["-c", command] : splitShellWords(command)

export interface ShellEnvInput {
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** The runtime's inference and identity variables. */
  readonly runtimeVars: Readonly<Record<string, string>>
  /** `capabilities.shell.baseline_env`. */
  readonly baselineEnv: ReadonlyArray<string>
  /** `capabilities.shell.strip_env`. */
  readonly stripPatterns: ReadonlyArray<string>
  /** Absolute path of the accessible workdir. */
  readonly workdir: string
}

/**
 * The subprocess environment, built on an empty map in the reference's order: the default
 * baseline from the host, the runtime variables, `shell.baseline_env` from the host, then every
 * credential-shaped or `strip_env` name removed (runtime variables included), then `HOME` and
 * `USERPROFILE` forced to the synthetic home, which no earlier step can override. Names are in
 * code-unit order, as the reference's sorted map yields them.
 */
export const shellEnv = (input: ShellEnvInput): Record<string, string> => {
  const env = new Map<string, string>()
  const fromHost = (name: string) => {
    const value = Object.hasOwn(input.hostEnv, name) ? input.hostEnv[name] : undefined
    if (value !== undefined) env.set(name, value)
  }
  DEFAULT_ENV_BASELINE.forEach(fromHost)
  for (const [name, value] of Object.entries(input.runtimeVars)) env.set(name, value)
  input.baselineEnv.forEach(fromHost)
  for (const name of [...env.keys()]) {
    if (strippingPattern(name, input.stripPatterns) !== undefined) env.delete(name)
  }
  const home = syntheticHome(input.workdir)
  env.set("HOME", home)
  env.set("USERPROFILE", home)
  return Object.fromEntries([...env.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

export const syntheticHome = (workdir: string): string => join(workdir, SYNTHETIC_HOME_DIR_NAME)

/** The process's exit code, else `128 + signal`, else -1. */
export const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number => {
  if (code !== null) return code
  const number = signal === null ? undefined : constants.signals[signal]
  return number === undefined ? -1 : 128 + number
}

/**
 * A full-output log (`logs/shell-<ms>.log`, or `logs/<work_id>.log` for detached work) is this
 * header, the kept stdout, `SHELL_LOG_STDERR`, the kept stderr and `SHELL_LOG_END`
 * (../sandbox/ShellOutput.ts writes it), then `outputCapNote` when the cap stopped the command.
 */
export const shellLogHeader = (binary: string, argv: ReadonlyArray<string>, exitCode: number): string => {
  const command = argv.length === 0 ? binary : `${binary} ${argv.join(" ")}`
  return `Command: ${command}\nExit code: ${exitCode}\n\nStdout:\n`
}
export const SHELL_LOG_STDERR = "\n\nStderr:\n"
export const SHELL_LOG_END = "\n"

/** Said in the tool result and the log when `capabilities.shell.max_output_bytes` stopped a command. */
export const outputCapNote = (limit: number, droppedBytes: number): string =>
  `Output reached the cap of ${limit} bytes (capabilities.shell.max_output_bytes): the command was killed and output cut there; ${droppedBytes} bytes read past the cap were dropped.`

/** What a finished foreground command hands back: non-zero exits are data, status stays `passed`. */
export const finishedResult = (options: {
  readonly command: string
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  readonly fullOutputPath?: string | undefined
  /** Set when the output cap stopped the command. */
  readonly cap?: { readonly limit: number; readonly droppedBytes: number } | undefined
}): ToolResultData => {
  const base = `$ ${options.command}\nExit code: ${options.exitCode}\nStdout:\n${options.stdout}\nStderr:\n${options.stderr}`
  const truncated = options.fullOutputPath !== undefined
  const capped = options.cap === undefined ? "" : `\n${outputCapNote(options.cap.limit, options.cap.droppedBytes)}`
  return {
    status: "passed",
    summary: `Shell command exited with code ${options.exitCode}`,
    data: truncated ? `${base}\n\nOutput truncated. Full output written to ${options.fullOutputPath}${capped}` : base,
    truncated,
    metadata: truncated ? [["full_output_path", options.fullOutputPath!]] : []
  }
}

/**
 * The result a demoted command hands back to the turn. Constant size: nothing in it derives from
 * the command or its output, and it names no path (the completion does).
 */
export const demotionResult = (workId: string): ToolResultData => ({
  status: "passed",
  summary: `Command still running in the background as ${workId}.`,
  data:
    `The command did not finish in time and is now running in the background as ${workId}. Its result will arrive later as a separate task; there is nothing to poll and no way to ask about it. Continue with other work.`,
  truncated: false,
  metadata: [["work_id", workId]]
})

/** What a detached command left behind. Carries no output: the bytes are in `outputPath`. */
export interface DetachedCompletion {
  readonly workId: string
  /** The resolved program that ran. */
  readonly binary: string
  /** The command text without the binary. */
  readonly command: string
  readonly exitCode: number
  readonly durationMs: number
  /** Workdir-relative, always `logs/<work_id>.log`. */
  readonly outputPath: string
  /** Bytes written to that file, header included. */
  readonly outputBytes: number
  /** Set when `capabilities.shell.max_output_bytes` stopped the command: bytes read past it and dropped. */
  readonly droppedBytes?: number | undefined
  /** Set only when waiting for the command or writing its log failed. */
  readonly error?: string | undefined
}

/** `ok` only for a clean exit with nothing going wrong around it. */
export const completionStatus = (completion: DetachedCompletion): "ok" | "error" =>
  completion.exitCode === 0 && completion.error === undefined ? "ok" : "error"

/** The text of the `completion`-origin task: never the command's output, only where it is. */
export const completionMessage = (completion: DetachedCompletion): string => {
  const lines = [
    "Background shell command finished.",
    `work_id: ${completion.workId}`,
    `binary: ${completion.binary}`,
    `command: ${completion.command}`,
    `status: ${completionStatus(completion)}`,
    `exit_code: ${completion.exitCode}`,
    `duration_ms: ${completion.durationMs}`,
    `output: ${completion.outputPath} (${completion.outputBytes} bytes, in the capsule workdir)`
  ]
  if (completion.droppedBytes !== undefined) {
    lines.push(`output_cap: reached; the command was killed and ${completion.droppedBytes} bytes read past the cap were dropped`)
  }
  if (completion.error !== undefined) lines.push(`wait_error: ${completion.error}`)
  return `${lines.join("\n")}\n\nThe full stdout and stderr are in that file and are not reproduced here.`
}
