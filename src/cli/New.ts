/**
 * `new <agent|tool|hook|script> <dir> [--http | --files]`: writes a template (./Templates.ts) into a new or empty
 * directory and prints the commands that build, check and run it.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { basename, dirname, join, relative, resolve } from "node:path"
import { exitWith } from "./Exit.js"
import { choiceArg } from "./Flags.js"
import { invocation } from "./Invocation.js"
import { schemaModeline, templateFiles, type TemplateKind, type ToolFlavour } from "./Templates.js"

const kind = choiceArg<TemplateKind>("agent|tool|hook|script", ["agent", "tool", "hook", "script"], "agent: a driver, a tool and a shell grant; tool: a TypeScript murmur:tool; hook: a TypeScript murmur:hook (a verifier); script: a murmur:capsule run()")
const dir = Args.text({ name: "dir" }).pipe(Args.withDescription("Where to create it (must not exist, or be empty)"))
const http = Options.boolean("http").pipe(Options.withDescription("tool: one that fetches a URL with the helper module's request() (wasi:http; built with StarlingMonkey)"))
const files = Options.boolean("files").pipe(Options.withDescription("tool: one that keeps notes in its workdir with the helper module's readText()/appendText()"))

/** The capsule a new tool is made in, when `dir` is `<capsule>/artifacts/<tool>`. */
const enclosingCapsule = (dir: string): string | undefined => {
  const capsule = dirname(dirname(dir))
  return basename(dirname(dir)) === "artifacts" && existsSync(join(capsule, "murmur.yaml")) ? capsule : undefined
}

/** A manifest name from the directory: lower case, letters, digits and dashes. */
const nameFor = (dir: string) => basename(resolve(dir)).toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "") || "capsule"

export const newCommand = Command.make("new", { kind, dir, http, files }, ({ dir, files, http, kind }) =>
  Effect.gen(function*() {
    if ((http || files) && kind !== "tool") {
      yield* Console.error(`error[E-NEW-002]: --http and --files choose what a new tool does; they do not apply to ${kind}`)
      return yield* exitWith(2)
    }
    if (http && files) {
      yield* Console.error("error[E-NEW-002]: choose one of --http and --files (a tool can use both: add the other's import to its world.wit, docs/tools.md)")
      return yield* exitWith(2)
    }
    const flavour: ToolFlavour = http ? "http" : files ? "files" : "plain"
    const root = resolve(dir)
    if (existsSync(root) && readdirSync(root).length > 0) {
      yield* Console.error(`error[E-NEW-001]: ${root} already exists and is not empty; choose a new directory`)
      return yield* exitWith(1)
    }
    const name = nameFor(dir)
    for (const [path, text] of templateFiles(kind, name, schemaModeline(root), flavour)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    }
    const cli = invocation()
    const capsule = enclosingCapsule(root)
    if (kind === "tool" && capsule !== undefined) {
      const shownCapsule = relative(process.cwd(), capsule) || "."
      yield* Console.log([
        `created tool ${name} in ${root}`,
        `next: add it to ${join(shownCapsule, "murmur.yaml")}'s artifacts:`,
        `  - name: ${name}`,
        "    runtime: tool",
        `    source: ${relative(capsule, root)}`,
        "    local_source: true",
        ...(flavour === "http" ? ["and the origins it may fetch to capabilities.network.allow (e.g. \"http://127.0.0.1:8765\"); then:"] : ["then:"]),
        `  ${cli} build ${shownCapsule}`,
        `  ${cli} validate ${shownCapsule}`
      ].join("\n"))
      return
    }
    const run = kind === "agent" ? `${cli} run ${dir} --task Ada` : kind === "script" ? `${cli} run ${dir}` : `${cli} inspect ${join(dir, `${name}.wasm`)}`
    yield* Console.log([
      `created ${kind} ${name} in ${root}`,
      "next:",
      `  ${cli} build ${dir}`,
      `  ${cli} validate ${dir}`,
      `  ${run}`
    ].join("\n"))
  })
).pipe(Command.withDescription("Create a capsule or tool from a template that builds and runs as is.\nExamples: capsule-runtime new agent my-agent; capsule-runtime new tool my-agent/artifacts/fetch --http"))
