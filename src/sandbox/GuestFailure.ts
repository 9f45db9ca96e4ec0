/**
 * What a guest that failed says about it, for the model, the task's status and `run`'s output:
 * the sandbox's own message ("tool 'x' trapped: wasm `unreachable` instruction executed") says
 * where, and the guest's last error line says why (a QuickJS exception, a Rust panic's message),
 * read from what it wrote to stderr before it failed (the run keeps the last 16 KiB). The line is
 * bounded and any secret value is replaced before it leaves the host, and the log that has the
 * whole of it is named.
 */
import type { SandboxError } from "./SandboxError.js"

/** Longest error line quoted. */
export const MAX_ERROR_LINE = 300

const ERRORISH = /error|exception|panicked|failed|unreachable|abort|invalid|cannot|not a function|undefined/i

/** The line that says why: a panic's message (the line after "panicked at"), else the last error-looking line, else the last line. */
export const lastErrorLine = (stderr: string): string | undefined => {
  const lines = stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("note: run with `RUST_BACKTRACE"))
  if (lines.length === 0) return undefined
  const panic = lines.map((line) => line.includes("panicked at")).lastIndexOf(true)
  // QuickJS' stack lines ("at run (tool.js:3)") follow the message they belong to.
  const messages = lines.filter((line) => !/^at\s/.test(line))
  const errorish = messages.filter((one) => ERRORISH.test(one)).at(-1)
  const chosen = panic >= 0 && panic + 1 < lines.length ? lines[panic + 1]! : errorish ?? messages.at(-1) ?? lines.at(-1)!
  const line = quickJsException(chosen)
  return line.length > MAX_ERROR_LINE ? `${line.slice(0, MAX_ERROR_LINE)}…` : line
}

/**
 * componentize-qjs reports an uncaught exception as `Failed to call 'run': Exception(Exception {
 * message: Some("…"), stack: Some("…") })`: the message is what says why.
 */
const quickJsException = (line: string): string => {
  const found = /^(.*?):?\s*Exception\(Exception \{ message: Some\("((?:[^"\\]|\\.)*)"\)/.exec(line)
  if (found === null) return line
  let message = found[2]!
  try {
    message = JSON.parse(`"${message}"`) as string
  } catch {
    // Rust's escaping is close to JSON's; an odd escape is shown as written.
  }
  return found[1] === "" ? message : `${found[1]}: ${message}`
}

/** Replaces every secret value (8 characters or more) in `text`. */
export const redactSecrets = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.filter((secret) => secret.length >= 8).reduce((out, secret) => out.split(secret).join("[redacted]"), text)

/** The failure's message with the guest's last error line and where its whole output is. */
export const explainGuestFailure = (error: SandboxError, logPath: string, secrets: ReadonlyArray<string>): string => {
  const line = error.reason === "Trap" || error.reason === "WorkerCrashed" ? lastErrorLine(error.stderr ?? "") : undefined
  if (line === undefined) return error.message
  return `${error.message}; the guest's last error: ${redactSecrets(line, secrets)} (all of its output: ${logPath})`
}
