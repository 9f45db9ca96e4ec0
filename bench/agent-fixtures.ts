/**
 * Step 1 of `npm run bench:agent` (run with vite-node, since the fixture builders are TypeScript):
 * builds an agent capsule dir with `makeAgentCapsuleDir` (test/lib/CapsuleDirs.ts): the
 * `scripted-driver` fixture as the driver, replying per task with turn 1 = a tool_call to
 * echo-tool and turn 2 = end_turn with text, and `echo-tool` installed. Writes the dir and the CLI
 * cache dir to `.cache/bench/agent-fixtures.json`, so step 2 (`bench/agent.mjs`) runs on plain
 * Node against dist/. The dir is a fresh temp dir; bench/agent.mjs removes it when done. A second
 * dir (`shellOutputDir`: one `head -c 1000000000 /dev/zero` shell call) is bench/shell-output.mjs's.
 *
 * `BENCH_AGENT_DRIVER=shipped` swaps in the shipped scripted driver (drivers/scripted, built by
 * `npm run build`): same replies, but no side-channel files, so the driver's own work is closer
 * to "a provider answering instantly".
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { cliCacheDir, makeAgentCapsuleDir } from "../test/lib/CapsuleDirs.js"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const outFile = path.join(root, ".cache/bench/agent-fixtures.json")

const started = Date.now()
const dir = await makeAgentCapsuleDir({
  name: "bench-agent",
  driverConfig: {
    replies: [
      { stop_reason: "tool_call", content: [{ type: "tool_call", id: "c1", name: "echo-tool", input: { msg: "hi" } }] },
      { stop_reason: "end_turn", content: [{ type: "text", text: "All done here." }] }
    ]
  },
  tools: { "echo-tool": "echo-tool" }
})
if (process.env.BENCH_AGENT_DRIVER === "shipped") {
  fs.copyFileSync(path.join(root, "drivers/scripted/scripted.wasm"), path.join(dir, ".murmur/artifacts/scripted-driver/0.1.0/scripted-driver.wasm"))
}
// For bench/shell-output.mjs: one shell call printing 1 GB, then end_turn.
const shellOutputDir = await makeAgentCapsuleDir({
  name: "bench-shell-output",
  driverConfig: {
    replies: [
      { stop_reason: "tool_call", content: [{ type: "tool_call", id: "c1", name: "head", input: { command: "-c 1000000000 /dev/zero" } }] },
      { stop_reason: "end_turn", content: [{ type: "text", text: "printed" }] }
    ]
  },
  capabilities: "  shell:\n    allow: [head]\n"
})
fs.mkdirSync(path.dirname(outFile), { recursive: true })
fs.writeFileSync(outFile, JSON.stringify({ dir, shellOutputDir, cliCacheDir }, null, 2))
console.error(`[bench fixtures] agent capsule dir ${dir} ready in ${Date.now() - started} ms → ${path.relative(root, outFile)}`)
