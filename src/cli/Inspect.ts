/**
 * `inspect <file.wasm>`: a component's imports and exports (WIT names with versions) and whether
 * this runtime can run it, and as what (the loader's own checks, so what it calls runnable loads).
 * Exit 0 when it can, 1 when it cannot.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect } from "effect"
import { readWorld, runnableAs, supportedMurmur, unsupported } from "../sandbox/component/ComponentWorld.js"
import { foldExtendedConst } from "../sandbox/component/ComponentCache.js"
import { digestOf } from "../project/Digest.js"
import { exitWith } from "./Exit.js"
import { existingArg } from "./Flags.js"

const file = existingArg("file.wasm", "file", "A WebAssembly component (.wasm)")
const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object"))

export const inspectCommand = Command.make("inspect", { file, json }, ({ file, json }) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const bytes = yield* fs.readFile(file).pipe(Effect.orDie)
    const world = yield* readWorld(bytes).pipe(Effect.either)
    if (world._tag === "Left") {
      if (json) yield* Console.log(JSON.stringify({ file, runnable: false, error: { reason: world.left.reason, message: world.left.message } }))
      else yield* Console.error(`${file}: ${world.left.message}`)
      return yield* exitWith(1)
    }
    // What the loader would refuse beyond the world: constant expressions it cannot fold.
    const folded = foldExtendedConst(bytes)
    const problems = [...unsupported(world.right), ...(folded._tag === "Left" ? [{ message: folded.left }] : [])]
    const roles = runnableAs(world.right)
    const runnable = problems.length === 0 && roles.length > 0
    if (json) {
      yield* Console.log(JSON.stringify({
        file,
        sha256: digestOf(bytes),
        imports: world.right.imports,
        exports: world.right.exports,
        runnable,
        as: roles,
        problems: problems.map((p) => p.message)
      }))
    } else {
      const lines = [
        `component: ${file} (${bytes.length} bytes, sha256 ${digestOf(bytes)})`,
        "imports:",
        ...world.right.imports.map((name) => `  ${name}`),
        "exports:",
        ...world.right.exports.map((name) => `  ${name}`),
        runnable
          ? `runnable: yes, as ${roles.map((role) => role === "capsule" ? "a script capsule" : "a tool or driver").join(" and ")}`
          : "runnable: no",
        ...problems.map((p) => `  ${p.message}`),
        ...(problems.length === 0 && roles.length === 0
          ? [`  it exports neither murmur:capsule/run@${supportedMurmur.get("murmur:capsule/run")} nor murmur:tool/run@${supportedMurmur.get("murmur:tool/run")}`]
          : [])
      ]
      yield* Console.log(lines.join("\n"))
    }
    if (!runnable) return yield* exitWith(1)
  })
).pipe(Command.withDescription("Print a component's WIT imports and exports and whether this runtime can run it"))
