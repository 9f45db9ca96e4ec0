/**
 * Logs go to stderr in logfmt, so stdout stays free for the `--json` event lines. The minimum
 * level is `level`, else `CAPSULE_RUNTIME_LOG_LEVEL` (`debug` adds a line per door request),
 * else info. Lines logged in one turn of the event loop go out in one write (a busy door logs a
 * line per finished task; one write each cost a syscall apiece), and whatever is pending when the
 * process exits is written before it does.
 */
import { writeSync } from "node:fs"
import { Config, Effect, Layer, Logger, LogLevel } from "effect"

const levelConfig = Config.logLevel("CAPSULE_RUNTIME_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))

let pending: Array<string> = []
const take = () => {
  const text = pending.join("")
  pending = []
  return text
}
const flush = () => {
  const text = take()
  if (text.length > 0) process.stderr.write(text)
}
let exitHooked = false

/** logfmt lines on stderr, one write per turn of the event loop. */
const stderrLogfmt = Logger.map(Logger.logfmtLogger, (line) => {
  if (!exitHooked) {
    exitHooked = true
    process.once("exit", () => {
      const text = take()
      if (text.length > 0) writeSync(2, text)
    })
  }
  if (pending.length === 0) setImmediate(flush)
  pending.push(`${line}\n`)
})

export const LoggingLive = (level?: LogLevel.LogLevel) =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, stderrLogfmt),
    Layer.unwrapEffect(Effect.map(level === undefined ? levelConfig : Effect.succeed(level), Logger.minimumLogLevel)).pipe(Layer.orDie)
  )
