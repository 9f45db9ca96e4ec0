/**
 * The tool authors' helper module, `import { tool, readText, request, … } from "capsule-runtime/tool"`
 * (kit/, docs/tools.md). `build` composes it per guest: the core (the export, input, results,
 * structured errors) and each part whose WASI interface the world imports (files: preopens,
 * http: outgoing-handler, env: environment); a part the world does not import becomes stubs
 * that say which import to add. The module is written beside the guest's sources in the build's
 * scratch copy, and their imports of the specifier point at it.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { repoRoot } from "./GuestWit.js"

export const KIT_SPECIFIER = "capsule-runtime/tool"
export const KIT_FILE = "capsule-runtime-tool.js"

const kitDir = join(repoRoot, "kit")

interface KitPart {
  readonly file: string
  /** The WASI interface (without version) the part needs the world to import. */
  readonly needs: string
  /** The import lines binding the part's `$names`, for a builder (`sm`: StarlingMonkey). */
  readonly imports: (version: string, sm: boolean) => ReadonlyArray<string>
}

// QuickJS binds an interface as a default export object; StarlingMonkey as named exports.
const bind = (name: string, spec: string, sm: boolean) => sm ? `import * as ${name} from "${spec}";` : `import ${name} from "${spec}";`

const PARTS: ReadonlyArray<KitPart> = [
  { file: "files.js", needs: "wasi:filesystem/preopens", imports: (v, sm) => [bind("$preopens", `wasi:filesystem/preopens@${v}`, sm)] },
  {
    file: "http.js",
    needs: "wasi:http/outgoing-handler",
    imports: (v, sm) => [bind("$http", `wasi:http/outgoing-handler@${v}`, sm), bind("$httpTypes", `wasi:http/types@${v}`, sm)]
  },
  { file: "env.js", needs: "wasi:cli/environment", imports: (v, sm) => [bind("$environment", `wasi:cli/environment@${v}`, sm)] }
]

const specifierPattern = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])capsule-runtime\/tool\2/g

/** True when a module's text imports the kit. */
export const usesKit = (text: string): boolean => new RegExp(specifierPattern.source).test(text)

/** The module's text with its kit imports pointing at the composed file beside it. */
export const pointAtKit = (text: string): string => text.replace(specifierPattern, (_, head: string, quote: string) => `${head}${quote}./${KIT_FILE}${quote}`)

const read = (file: string) => readFileSync(join(kitDir, file), "utf8")

const exportedFunctions = (text: string): ReadonlyArray<string> => [...text.matchAll(/^export function (\w+)/gm)].map((match) => match[1]!)

const stubs = (part: KitPart, text: string): string =>
  exportedFunctions(text).map((name) =>
    `export function ${name}() {\n  throw new ToolError(${JSON.stringify(`${name}() needs the tool's world to import ${part.needs}: add \`import ${part.needs}@0.2.12;\` to world.wit and build again`)}, { code: "not-built-in" });\n}\n`
  ).join("")

/**
 * The kit for a world whose body is `worldBody`, built by StarlingMonkey (`sm`: u64 is a BigInt)
 * or QuickJS (a number).
 */
export const composeKit = (worldBody: string, sm: boolean): string => {
  const sections = [`// Composed by capsule-runtime's build from kit/ (docs/tools.md).\nconst $u64 = ${sm ? "BigInt" : "Number"};\n`, read("core.js")]
  for (const part of PARTS) {
    const text = read(part.file)
    const version = new RegExp(`import\\s+${part.needs.replace("/", "\\/")}@([\\w.-]+)`).exec(worldBody)?.[1]
    sections.push(version === undefined ? stubs(part, text) : [...part.imports(version, sm), text].join("\n"))
  }
  return sections.join("\n")
}
