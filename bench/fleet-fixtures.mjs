// Capsule directories for bench/fleet.mjs, in plain Node (no TypeScript, no vite-node), in a
// fresh temporary tree so the thousands of session workdirs a fleet run creates stay out of the
// repository:
//   <tree>/drivers/scripted   a copy of the shipped scripted driver (its built scripted.wasm)
//   <tree>/examples/hello     a copy of examples/hello (not its workdir/ or .murmur/), whose
//                             `source: ../../drivers/scripted` resolves to the copy above
//   <tree>/ticking-…          the ticking capsule of test/lib/FleetCapsule.ts over the shipped
//                             scripted driver (the test builds its own scripted-driver fixture;
//                             the two read the same driver.config): turn 1 asks for `ticks`
//                             `sleep <tickMs>` shell calls, run one after the other, turn 2 ends
//                             the task ("ticked N times").
// The copies keep the components byte for byte, so the CLI's component cache (keyed by content)
// serves them as it serves the originals.
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/** A fresh tree holding the driver and the hello example; `remove()` deletes it. */
export const makeBenchTree = () => {
  const tree = mkdtempSync(join(tmpdir(), "bench-fleet-"))
  const driver = join(root, "drivers", "scripted")
  if (!existsSync(join(driver, "scripted.wasm"))) throw new Error(`${driver}/scripted.wasm is missing: run npm run build first`)
  cpSync(driver, join(tree, "drivers", "scripted"), { recursive: true })
  const hello = join(root, "examples", "hello")
  cpSync(hello, join(tree, "examples", "hello"), {
    recursive: true,
    filter: (source) => !["workdir", ".murmur"].includes(basename(source)) || dirname(source) !== hello
  })
  return { tree, hello: join(tree, "examples", "hello"), remove: () => rmSync(tree, { recursive: true, force: true }) }
}

/**
 * The ticking capsule (test/lib/FleetCapsule.ts's `makeTickingCapsuleDir`) under `tree`: a task
 * is `ticks` shell `sleep`s of `tickMs` each, one artifact frame per tick, then one more driver
 * turn. Tasks queue (`queue_depth` 256): an agent session runs one task at a time. A tick stays in
 * the foreground (`shell_grace_secs` past it).
 */
export const makeTickingDir = (tree, { ticks = 10, tickMs = 100, name = "ticking" } = {}) => {
  const dir = join(tree, name)
  mkdirSync(dir, { recursive: true })
  const seconds = (tickMs / 1000).toFixed(3)
  const replies = [
    {
      stop_reason: "tool_call",
      content: Array.from({ length: ticks }, (_, i) => ({ type: "tool_call", id: `tick-${i + 1}`, name: "sleep", input: { command: seconds } }))
    },
    { stop_reason: "end_turn", content: [{ type: "text", text: `ticked ${ticks} times` }] }
  ]
  const yaml = `name: ${name}\nversion: 0.1.0\n` +
    "artifacts:\n  - name: scripted\n    runtime: driver\n    source: ../drivers/scripted\n    local_source: true\n" +
    "inference:\n  endpoint: http://127.0.0.1:9/v1\n  model: scripted\n" +
    `  driver:\n    artifact: scripted\n    config: ${JSON.stringify({ replies })}\n` +
    "capabilities:\n  shell:\n    allow: [sleep]\n" +
    // A tick longer than the shell's foreground window (10 s) would detach, and its completion come back as a task of its own.
    `lifecycle:\n  task_acceptance: queue\n  queue_depth: 256\n  shell_grace_secs: ${Math.max(10, Math.ceil(tickMs / 1000) + 5)}\n`
  writeFileSync(join(dir, "murmur.yaml"), yaml)
  return dir
}

/**
 * A copy of dist/ the runners start from, so a rebuild during the run (`npm run build` deletes
 * and rewrites dist/chunks/) cannot break runners started later or the lazy imports of running
 * ones. The rest of the package (package.json, which the runtime finds its root by, node_modules,
 * wit/, schema/, drivers/, examples/) is linked, not copied. Its main.js; `remove()` deletes it.
 */
export const snapshotDist = () => {
  const stamp = () => statSync(join(root, "dist", "main.js")).mtimeMs
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = stamp()
    const snap = mkdtempSync(join(tmpdir(), "bench-fleet-dist-"))
    cpSync(join(root, "dist"), join(snap, "dist"), { recursive: true, filter: (source) => !source.endsWith(".map") })
    for (const entry of ["package.json", "node_modules", "wit", "schema", "drivers", "examples", "proto"]) {
      if (existsSync(join(root, entry))) symlinkSync(join(root, entry), join(snap, entry))
    }
    if (stamp() === before && existsSync(join(snap, "dist", "main.js"))) {
      return { main: join(snap, "dist", "main.js"), builtAt: new Date(before).toISOString(), remove: () => rmSync(snap, { recursive: true, force: true }) }
    }
    rmSync(snap, { recursive: true, force: true })
  }
  throw new Error("dist/ kept changing while it was copied (a build running?)")
}
