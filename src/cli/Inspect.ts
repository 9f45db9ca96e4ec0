/**
 * `inspect <file.wasm>`: a component's imports and exports (WIT names with versions) and whether
 * this runtime can run it, and as what (the loader's own checks, so what it calls runnable loads).
 * Exit 0 when it can, 1 when it cannot.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect } from "effect"
import { CapsuleRuntime } from "../index.js"
import { exitWith } from "./Exit.js"
import { existingArg } from "./Flags.js"

const file = existingArg("file.wasm", "file", "A WebAssembly component (.wasm)")
const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object"))

export const inspectCommand = Command.make("inspect", { file, json }, ({ file, json }) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const bytes = yield* fs.readFile(file).pipe(Effect.orDie)
    const checked = yield* CapsuleRuntime.checkComponent(bytes).pipe(Effect.either)
    if (checked._tag === "Left") {
      if (json) yield* Console.log(JSON.stringify({ file, runnable: false, error: { reason: checked.left.reason, message: checked.left.message } }))
      else yield* Console.error(`${file}: ${checked.left.message}`)
      return yield* exitWith(1)
    }
    const { problems, runExports, runnable, runnableAs: roles, sha256, world } = checked.right
    if (json) {
      yield* Console.log(JSON.stringify({ file, sha256, imports: world.imports, exports: world.exports, runnable, as: roles, problems }))
    } else {
      const lines = [
        `component: ${file} (${bytes.length} bytes, sha256 ${sha256})`,
        "imports:",
        ...world.imports.map((name) => `  ${name}`),
        "exports:",
        ...world.exports.map((name) => `  ${name}`),
        runnable
          ? `runnable: yes, as ${roles.map((role) => role === "capsule" ? "a script capsule" : role === "hook" ? "a hook" : "a tool or driver").join(" and ")}`
          : "runnable: no",
        ...problems.map((problem) => `  ${problem}`),
        ...(problems.length === 0 && roles.length === 0 ? [`  it exports neither ${runExports[0]} nor ${runExports[1]}`] : [])
      ]
      yield* Console.log(lines.join("\n"))
    }
    if (!runnable) return yield* exitWith(1)
  })
).pipe(Command.withDescription("Print a component's WIT imports and exports and whether this runtime can run it"))
