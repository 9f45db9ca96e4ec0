/**
 * `watch` run in this process as the CLI runs it, its terminal output captured: the command's
 * fiber is interrupted by the caller's cleanup.
 */
import { Command } from "@effect/cli"
import { Terminal } from "@effect/platform"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { Effect, Fiber, Layer } from "effect"
import { watchCommand } from "../../src/cli/Watch.js"

export const runWatch = (argv: ReadonlyArray<string>, cleanups: Array<() => Promise<void> | void>) => {
  let out = ""
  const terminal = Layer.succeed(
    Terminal.Terminal,
    Terminal.Terminal.of({
      columns: Effect.succeed(80),
      rows: Effect.succeed(24),
      isTTY: Effect.succeed(false),
      readInput: Effect.die("unused"),
      readLine: Effect.die("unused"),
      display: (text) => Effect.sync(() => void (out += text))
    })
  )
  const cli = Command.run(watchCommand, { name: "watch", version: "0" })
  const fiber = Effect.runFork(cli(["node", "watch", ...argv]).pipe(Effect.provide(Layer.mergeAll(terminal, NodeFileSystem.layer, NodePath.layer))))
  cleanups.push(() => Effect.runPromise(Fiber.interrupt(fiber)).then(() => undefined))
  return { output: () => out, done: () => Effect.runPromise(Fiber.await(fiber)) }
}
