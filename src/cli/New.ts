/**
 * `new <agent|tool|hook|script> <dir>`: writes a template (./Templates.ts) into a new or empty
 * directory and prints the commands that build, check and run it.
 */
import { Args, Command } from "@effect/cli"
import { Console, Effect } from "effect"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { basename, dirname, join, resolve } from "node:path"
import { exitWith } from "./Exit.js"
import { choiceArg } from "./Flags.js"
import { invocation } from "./Invocation.js"
import { schemaModeline, templateFiles, type TemplateKind } from "./Templates.js"

const kind = choiceArg<TemplateKind>("agent|tool|hook|script", ["agent", "tool", "hook", "script"], "agent: a driver, a tool and a shell grant; tool: a TypeScript murmur:tool; hook: a TypeScript murmur:hook (a verifier); script: a murmur:capsule run()")
const dir = Args.text({ name: "dir" }).pipe(Args.withDescription("Where to create it (must not exist, or be empty)"))

/** A manifest name from the directory: lower case, letters, digits and dashes. */
const nameFor = (dir: string) => basename(resolve(dir)).toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "") || "capsule"

export const newCommand = Command.make("new", { kind, dir }, ({ dir, kind }) =>
  Effect.gen(function*() {
    const root = resolve(dir)
    if (existsSync(root) && readdirSync(root).length > 0) {
      yield* Console.error(`error[E-NEW-001]: ${root} already exists and is not empty; choose a new directory`)
      return yield* exitWith(1)
    }
    const name = nameFor(dir)
    for (const [path, text] of templateFiles(kind, name, schemaModeline(root))) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    }
    const cli = invocation()
    const run = kind === "agent" ? `${cli} run ${dir} --task Ada` : kind === "script" ? `${cli} run ${dir}` : `${cli} inspect ${join(dir, `${name}.wasm`)}`
    yield* Console.log([
      `created ${kind} ${name} in ${root}`,
      "next:",
      `  ${cli} build ${dir}`,
      `  ${cli} validate ${dir}`,
      `  ${run}`
    ].join("\n"))
  })
).pipe(Command.withDescription("Create a capsule or tool from a template that builds and runs as is.\nExample: capsule-runtime new agent my-agent"))
