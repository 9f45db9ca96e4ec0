/**
 * Logs go to stderr in logfmt, so stdout stays free for the `--json` event lines. The minimum
 * level is `level`, else `CAPSULE_RUNTIME_LOG_LEVEL` (`debug` adds a line per door request),
 * else info.
 */
import { Config, Effect, Layer, Logger, LogLevel } from "effect"

const levelConfig = Config.logLevel("CAPSULE_RUNTIME_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))

export const LoggingLive = (level?: LogLevel.LogLevel) =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)),
    Layer.unwrapEffect(Effect.map(level === undefined ? levelConfig : Effect.succeed(level), Logger.minimumLogLevel)).pipe(Layer.orDie)
  )
