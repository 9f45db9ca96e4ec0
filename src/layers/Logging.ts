/**
 * Logs go to stderr in logfmt, so stdout stays free for the `--json` event lines.
 */
import { Logger, LogLevel } from "effect"
import { Layer } from "effect"

export const LoggingLive = (level: LogLevel.LogLevel = LogLevel.Info) =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)),
    Logger.minimumLogLevel(level)
  )
