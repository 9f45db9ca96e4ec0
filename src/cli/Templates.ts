/**
 * The files `new <agent|tool|script> <dir>` writes: each template validates, builds and runs as
 * written. The agent's driver is a copy of the shipped scripted driver (so the capsule is
 * self-contained and needs no model or key); the script capsule is a copy of `examples/script`.
 */
import { readFileSync } from "node:fs"
import { isAbsolute, join, relative } from "node:path"
import { repoRoot } from "../build/GuestWit.js"
import { SCHEMA_PATH } from "../project/manifest/ManifestSchema.js"

export type TemplateKind = "agent" | "tool" | "script"

/** Relative path → contents. */
export type TemplateFiles = ReadonlyArray<readonly [string, string]>

const shipped = (path: string) => readFileSync(join(repoRoot, path), "utf8")

/**
 * The editor's pointer to the manifest's JSON Schema, as yaml-language-server reads it (a path
 * relative to the YAML file, or an absolute one). Inside this package's tree (a checkout, the
 * tutorial) the path is relative, so it survives moving the tree; elsewhere it is the installed
 * package's absolute path, which survives moving the capsule. docs/manifest.md says how to change it.
 */
export const schemaModeline = (capsuleDir: string): string => {
  const schema = join(repoRoot, SCHEMA_PATH)
  const fromPackage = relative(repoRoot, capsuleDir)
  const inside = fromPackage !== "" && !fromPackage.startsWith("..") && !isAbsolute(fromPackage)
  return `# yaml-language-server: $schema=${inside ? relative(capsuleDir, schema).split("\\").join("/") : schema}\n`
}

const toolFiles = (name: string): TemplateFiles => [
  ["murmur.yaml", `# ${name}: a murmur:tool/run tool. Its input is JSON matching input_schema; it answers
# a status, a summary and data. Build it with \`capsule-runtime build <dir>\`.
name: ${name}
version: 0.1.0
runtime: tool
description: Shouts the text it is given (upper-cased, with an exclamation mark).
input_schema:
  type: object
  properties:
    text:
      type: string
      description: what to shout
  required: [text]
`],
  ["world.wit", `// The tool's world: what it imports (nothing here) and that it exports murmur:tool/run.
// Importing wasi:http makes \`build\` use StarlingMonkey instead of QuickJS (slower, larger).
package capsule-runtime-new:${name};

world tool {
  export murmur:tool/run@0.1.0;
}
`],
  ["tool.ts", `// ${name}: a murmur:tool/run guest in TypeScript (types are erased at build time).
// Bad input is the tool's own error result, which the agent loop feeds back to the model.
interface ToolResult {
  status: "passed" | "error"
  summary: string
  data: string | null
  dataPath: string | null
  truncated: boolean
  metadata: Array<[string, string]>
}

const result = (status: ToolResult["status"], summary: string, data: string | null): ToolResult =>
  ({ status, summary, data, dataPath: null, truncated: false, metadata: [] })

export const run = {
  run(input: { data?: string | null }): ToolResult {
    let text: unknown
    try {
      text = JSON.parse(input.data ?? "{}").text
    } catch (error) {
      return result("error", "input must be JSON: " + String(error), null)
    }
    if (typeof text !== "string" || text.trim() === "") return result("error", "input needs a non-empty \\"text\\" string", null)
    return result("passed", "shouted", text.trim().toUpperCase() + "!")
  }
}
`]
]

const agentManifest = (name: string) => `# ${name}: an agent capsule. The scripted driver plays the model (no key, no network):
# turn 1 calls the shout tool and the shell's \`echo\`, turn 2 answers. To use a real model,
# swap the driver for drivers/openai and set inference.endpoint, model and network.allow.
# Build, check and run it:
#   capsule-runtime build ${name} && capsule-runtime validate ${name} && capsule-runtime run ${name} --task Ada
name: ${name}
version: 0.1.0

artifacts:
  - name: scripted
    runtime: driver
    source: artifacts/scripted
    local_source: true
  - name: shout
    runtime: tool
    source: artifacts/shout
    local_source: true

capabilities:
  shell:
    allow: [echo]

inference:
  # The scripted driver makes no requests; an endpoint is still part of an inference block.
  endpoint: http://localhost/unused-by-the-scripted-driver
  model: scripted
  system_prompt: You are a small example agent.
  driver:
    artifact: scripted
    config:
      replies:
        - stop_reason: tool_call
          content:
            - type: text
              text: "Shouting with the shout tool, then asking the shell."
            - type: tool_call
              id: call_shout
              name: shout
              input:
                text: "{{task}}"
            - type: tool_call
              id: call_echo
              name: echo
              input:
                command: hello from ${name}
        - stop_reason: end_turn
          content:
            - type: text
              text: "Done: the shout tool shouted \\"{{task}}\\" and the shell echoed."
`

const scriptManifest = (name: string) =>
  shipped("examples/script/murmur.yaml").replace(/^name: script$/m, `name: ${name}`).replaceAll("examples/script", name)

/**
 * `modeline` heads each capsule manifest (./schemaModeline); a tool's own murmur.yaml is an
 * artifact manifest, a different format the schema does not describe, so it gets none.
 */
export const templateFiles = (kind: TemplateKind, name: string, modeline: string): TemplateFiles => {
  switch (kind) {
    case "tool":
      return toolFiles(name)
    case "script":
      return [["murmur.yaml", modeline + scriptManifest(name)], ["world.wit", shipped("examples/script/world.wit")], ["capsule.js", shipped("examples/script/capsule.js")]]
    case "agent":
      return [
        ["murmur.yaml", modeline + agentManifest(name)],
        ...["murmur.yaml", "world.wit", "driver.js"].map((file) => [`artifacts/scripted/${file}`, shipped(`drivers/scripted/${file}`)] as const),
        ...toolFiles("shout").map(([file, text]) => [`artifacts/shout/${file}`, text] as const)
      ]
  }
}
