/**
 * The files `new <agent|tool|hook|script> <dir> [--http | --files]` writes: each template
 * validates, builds and runs as written. The agent's driver is a copy of the shipped scripted
 * driver (so the capsule is self-contained and needs no model or key); the script capsule is a
 * copy of `examples/script`; tools are built on the helper module (../build/ToolKit.ts).
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, isAbsolute, join, relative, resolve } from "node:path"
import { repoRoot } from "../build/GuestWit.js"
import { packageVersion } from "../project/PackageRoot.js"
import { SCHEMA_PATH } from "../project/manifest/ManifestSchema.js"

export type TemplateKind = "agent" | "tool" | "hook" | "script"

/** Relative path → contents. */
export type TemplateFiles = ReadonlyArray<readonly [string, string]>

const shipped = (path: string) => readFileSync(join(repoRoot, path), "utf8")

/** Where the published package's schema is: unpkg.com serves every file of every npm release. */
export const publishedSchemaUrl = (version: string) => `https://unpkg.com/capsule-runtime@${version}/${SCHEMA_PATH}`

const within = (parent: string, child: string) => {
  const path = relative(parent, child)
  return path !== "" && !path.startsWith("..") && !isAbsolute(path)
}

/**
 * A copy of the schema in the capsule's own tree: this package's, when the capsule is inside it
 * (a checkout, the tutorial), else a `node_modules/capsule-runtime/` above the capsule (a project
 * that depends on the package).
 */
const schemaInTree = (capsuleDir: string): string | undefined => {
  if (within(repoRoot, capsuleDir)) return join(repoRoot, SCHEMA_PATH)
  for (let directory = capsuleDir; ; directory = dirname(directory)) {
    const installed = join(directory, "node_modules", "capsule-runtime", SCHEMA_PATH)
    if (existsSync(installed)) return installed
    if (dirname(directory) === directory) return undefined
  }
}

/**
 * The editor's pointer to the manifest's JSON Schema, as yaml-language-server reads it. Never an
 * absolute path of this installation, which means nothing on another machine: a path relative to
 * the capsule when its tree holds a copy (so it survives moving the tree and committing it), else
 * the published package's schema for this version. docs/manifest.md says how to change it.
 */
export const schemaModeline = (capsuleDir: string): string => {
  const local = schemaInTree(resolve(capsuleDir))
  const target = local === undefined ? publishedSchemaUrl(packageVersion()) : relative(resolve(capsuleDir), local).split("\\").join("/")
  return `# yaml-language-server: $schema=${target}\n`
}

/** What a new tool does: shout (no imports), fetch a URL (`--http`), keep notes in its workdir (`--files`). */
export type ToolFlavour = "plain" | "http" | "files"

interface ToolTemplate {
  readonly description: string
  readonly schema: string
  readonly imports: ReadonlyArray<string>
  readonly body: string
}

const TOOL_TEMPLATES: Record<ToolFlavour, ToolTemplate> = {
  plain: {
    description: "Shouts the text it is given (upper-cased, with an exclamation mark).",
    schema: `  properties:
    text:
      type: string
      description: what to shout
  required: [text]`,
    imports: [],
    body: `import { field, tool } from "capsule-runtime/tool"

export const run = tool((input) => field(input, "text").trim().toUpperCase() + "!")
`
  },
  http: {
    description: "Fetches a URL (GET) and answers the text of its body (at most 64 KiB, or the entry's config max_bytes).",
    schema: `  properties:
    url:
      type: string
      description: the http(s) URL to fetch
  required: [url]`,
    imports: ["  // HTTP under the capsule's capabilities.network.allow; importing wasi:http makes \`build\` use",
      "  // StarlingMonkey (about half a minute the first time; an unchanged tool is not rebuilt).",
      "  import wasi:http/outgoing-handler@0.2.12;",
      "  // The entry's config: (config() in tool.ts).",
      "  import wasi:cli/environment@0.2.12;"],
    body: `import { config, field, reply, request, tool, ToolError } from "capsule-runtime/tool"

export const run = tool((input) => {
  const url = field(input, "url")
  // The capsule's entry for this tool may set config: { max_bytes: N }.
  const maxBytes = field(config(), "max_bytes", "number", 65536)
  // A URL outside the grant throws a ToolError "network-denied" that names the key to change.
  const response = request(url, { maxBytes })
  if (!response.ok) throw new ToolError(\`\${url} answered \${response.status}\`, { code: "http-status", status: "failed", details: { status: response.status } })
  return reply(response.text, { summary: \`\${response.status} from \${url}\${response.truncated ? \` (cut at \${maxBytes} bytes)\` : ""}\` })
})
`
  },
  files: {
    description: "Keeps notes in notes.md in its workdir, adding one or reading them all.",
    schema: `  properties:
    action:
      type: string
      enum: [add, read]
      description: add a note, or read all of them
    note:
      type: string
      description: the note to add (with action add)
  required: [action]`,
    imports: ["  // The workdir (or the entry's capabilities.filesystem.scope), preopened as \".\".", "  import wasi:filesystem/preopens@0.2.12;"],
    body: `import { appendText, exists, field, readText, tool, ToolError } from "capsule-runtime/tool"

const NOTES = "notes.md"

export const run = tool((input) => {
  const action = field(input, "action")
  if (action === "add") {
    appendText(NOTES, \`- \${field(input, "note").trim()}\\n\`)
    return \`noted in \${NOTES}\`
  }
  if (action === "read") return exists(NOTES) ? readText(NOTES) : "(no notes yet)"
  throw new ToolError(\`unknown action '\${action}': use "add" or "read"\`, { code: "bad-input" })
})
`
  }
}

/** The helper module's types, for editors: `tool.ts` references them. */
const kitTypes = () => shipped("kit/tool.d.ts")

export const toolFiles = (name: string, flavour: ToolFlavour = "plain"): TemplateFiles => {
  const template = TOOL_TEMPLATES[flavour]
  return [
    ["murmur.yaml", `# ${name}: a murmur:tool/run tool. Its input is JSON matching input_schema; it answers
# a status, a summary and data. Build it with \`capsule-runtime build <dir>\`.
name: ${name}
version: 0.1.0
runtime: tool
description: ${template.description}
input_schema:
  type: object
${template.schema}
`],
    ["world.wit", `// The tool's world: what it imports and that it exports murmur:tool/run. docs/tools.md says which
// import each part of "capsule-runtime/tool" needs.
package capsule-runtime-new:${name};

world tool {
${template.imports.map((line) => line + "\n").join("")}  export murmur:tool/run@0.1.0;
}
`],
    ["tool.ts", `/// <reference path="./capsule-runtime-tool.d.ts" />
// ${name}: a murmur:tool/run guest in TypeScript (types are erased at build time). "capsule-runtime/tool"
// is the helper module \`build\` puts in (docs/tools.md): tool() makes the export from a function of the
// parsed input; a thrown ToolError is the error result the model reads (its code and message).
${template.body}`],
    ["capsule-runtime-tool.d.ts", kitTypes()]
  ]
}

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

const hookFiles = (name: string): TemplateFiles => [
  ["murmur.yaml", `# ${name}: a hook (murmur:hook/lifecycle@0.8.0), called at the agent loop's lifecycle points.
# Its contract: binding (one of the nine; absent: every event but on-stage), execution_mode
# (blocking or async) and commit_policy (what of its answer the runtime commits). This one is a
# verifier: at on-task-end it reads the task's answer and sends the task back (reopen-task) when
# the answer is empty. Grant it task_io.read on its entry in the capsule's manifest:
#   - name: ${name}
#     runtime: hook
#     source: <this directory>
#     capabilities: { task_io: { read: true } }
# Build it with \`capsule-runtime build <dir>\`; docs/agents.md, "Hooks", says the rest.
name: ${name}
version: 0.1.0
runtime: hook
binding: on-task-end
commit_policy: reopen-task
description: Sends a task back when its answer is empty.
`],
  ["world.wit", `// The hook's world: what it imports (task-io, to read the task's answer) and its export.
// The other hook imports: murmur:runtime/inference@0.3.0 (one completion through the capsule's
// driver), murmur:runtime/tokens@0.3.0, murmur:conversation/read@0.1.0.
package capsule-runtime-new:${name};

world hook {
  import murmur:task-io/read@0.1.0;
  export murmur:hook/lifecycle@0.8.0;
}
`],
  ["hook.ts", `// ${name}: a murmur:hook/lifecycle guest in TypeScript (types are erased at build time). A hook
// bound to one event exports only that function (the runtime calls no other); one without a
// binding exports all nine but onStage. Each answers a hook-output ({ tag: "none" } leaves the
// session as it is); an exception is the hook's err, traced as a fault, and the session goes on.
import taskio from "murmur:task-io/read@0.1.0"

type HookOutput = { tag: "none" } | { tag: "reopen-task"; val: string }
const none: HookOutput = { tag: "none" }

const answer = (): string => {
  try {
    return taskio.readOutput(0, 65536)
  } catch {
    // not-granted (no task_io.read on the entry) or no-output
    return ""
  }
}

export const lifecycle = {
  onTaskEnd(event: { taskId: string; exitStatus: string }): HookOutput {
    if (event.exitStatus !== "ok") return none
    return answer().trim() === "" ? { tag: "reopen-task", val: "the answer was empty; answer the task" } : none
  }
}
`]
]

const scriptManifest = (name: string) =>
  shipped("examples/script/murmur.yaml").replace(/^name: script$/m, `name: ${name}`).replaceAll("examples/script", name)

/**
 * `modeline` heads each capsule manifest (./schemaModeline); a tool's own murmur.yaml is an
 * artifact manifest, a different format the schema does not describe, so it gets none.
 */
export const templateFiles = (kind: TemplateKind, name: string, modeline: string, flavour: ToolFlavour = "plain"): TemplateFiles => {
  switch (kind) {
    case "tool":
      return toolFiles(name, flavour)
    case "hook":
      return hookFiles(name)
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
