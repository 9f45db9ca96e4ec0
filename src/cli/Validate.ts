/**
 * `validate <dir>`: parses `<dir>/murmur.yaml` exactly as a launch would (the host environment
 * answers `inference.api_key: ${VAR}`) and reports what it found: each warning as
 * `warning[CODE]: message` and the refusal as `error[CODE]: message` on stderr, or one JSON
 * object `{ok, errors, warnings}` on stdout with `--json`. Every problem is reported in one pass:
 * the manifest's parse, the files and grants it implies (./ValidateChecks.ts), and, once those
 * pass, what a launch on this host would warn or refuse (../layers/LaunchCheck.ts), so that
 * `--strict` fails wherever `serve` would warn. Exit 1 on any error, and on any warning with
 * `--strict`. A tool or driver directory (its `murmur.yaml` has `runtime:`) is checked as an
 * artifact manifest.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either } from "effect"
import { join } from "node:path"
import { HostEnvironment } from "../layers/Host.js"
import { launchCheck } from "../layers/LaunchCheck.js"
import { isAgentCapsule, parseManifest } from "../project/Manifest.js"
import { parseArtifactManifest } from "../project/manifest/ArtifactManifest.js"
import { MANIFEST_FILENAME } from "../project/manifest/ManifestError.js"
import { exitWith } from "./Exit.js"
import { existingArg } from "./Flags.js"
import { checkCapsuleFiles, type Diagnostic } from "./ValidateChecks.js"

export type { Diagnostic } from "./ValidateChecks.js"

const dir = existingArg("dir", "directory", "The capsule directory (holding murmur.yaml)")
const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object on stdout"))
const strict = Options.boolean("strict").pipe(Options.withDescription("Exit 1 on warnings too"))


export interface Validation {
  readonly ok: boolean
  readonly errors: ReadonlyArray<Diagnostic>
  readonly warnings: ReadonlyArray<Diagnostic>
  /** `name@version (agent|script capsule)` when the manifest was accepted. */
  readonly summary?: string
}

/** The verdict on a manifest's text, as `validate` reports it. */
export const validateManifest = (text: string, env: Readonly<Record<string, string | undefined>>, path?: string): Validation => {
  const parsed = parseManifest(text, path === undefined ? { env } : { env, path })
  if (Either.isLeft(parsed)) return { ok: false, errors: [{ code: parsed.left.code, message: parsed.left.message }], warnings: [] }
  const { manifest, warnings } = parsed.right
  return {
    ok: true,
    errors: [],
    warnings: warnings.map(({ code, message, path }) => ({ code, message, path })),
    summary: `${manifest.name}@${manifest.version} (${isAgentCapsule(manifest) ? "agent" : "script"} capsule)`
  }
}

/** An artifact's own manifest (a tool or driver directory), as `new tool` makes. */
const validateArtifact = (text: string): Validation => {
  const parsed = parseArtifactManifest(text)
  if (Either.isLeft(parsed)) return { ok: false, errors: [{ code: parsed.left.code, message: parsed.left.message }], warnings: [] }
  return { ok: true, errors: [], warnings: [], summary: `${parsed.right.name}@${parsed.right.version} (${parsed.right.runtime} artifact)` }
}

const isArtifactManifest = (text: string) => /^runtime\s*:/m.test(text) && !/^inference\s*:/m.test(text)

/** The manifest's verdict plus the file and grant checks, errors and warnings merged. */
export const validateDirectory = (dir: string, text: string, env: Readonly<Record<string, string | undefined>>, path?: string): Validation => {
  const verdict = isArtifactManifest(text) ? validateArtifact(text) : validateManifest(text, env, path)
  const checked = checkCapsuleFiles(dir, text)
  const errors = [...verdict.errors, ...checked.errors]
  return {
    ok: errors.length === 0,
    errors,
    warnings: [...verdict.warnings, ...checked.warnings],
    ...(errors.length === 0 && verdict.summary !== undefined ? { summary: verdict.summary } : {})
  }
}

/** A capsule that passed adds what its launch here would say; an artifact directory, or one with errors already, does not. */
const withLaunchCheck = (dir: string, text: string, verdict: Validation, env: Readonly<Record<string, string | undefined>>) =>
  !verdict.ok || isArtifactManifest(text) ? Effect.succeed(verdict) : Effect.map(launchCheck(dir, text, env), (launch): Validation => {
    const ok = launch.errors.length === 0
    return { ok, errors: launch.errors, warnings: [...verdict.warnings, ...launch.warnings], ...(ok && verdict.summary !== undefined ? { summary: verdict.summary } : {}) }
  })

/** Reads the manifest file; a missing or unreadable file is itself the error (E-IO-001, E-IO-003). */
const readManifest = (path: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false)))) {
      return Either.left<Diagnostic>({ code: "E-IO-001", message: `${MANIFEST_FILENAME} not found at ${path}` })
    }
    return yield* fs.readFileString(path).pipe(
      Effect.map((text) => Either.right(text)),
      Effect.catchAll((error) =>
        Effect.succeed(Either.left<Diagnostic>({ code: "E-IO-003", message: `failed to read ${MANIFEST_FILENAME} at ${path}: ${error.message}` }))
      )
    )
  })

/** A warning's text without the `warning: ` the reference prints in front of some of them. */
const bare = (message: string) => message.replace(/^warning: /, "")

export const validateCommand = Command.make("validate", { dir, json, strict }, ({ dir, json, strict }) =>
  Effect.gen(function*() {
    const host = yield* HostEnvironment
    const path = join(dir, MANIFEST_FILENAME)
    const text = yield* readManifest(path)
    const result: Validation = Either.isLeft(text)
      ? { ok: false, errors: [text.left], warnings: [] }
      : yield* withLaunchCheck(dir, text.right, validateDirectory(dir, text.right, host.env, path), host.env)
    if (json) {
      yield* Console.log(JSON.stringify({ ok: result.ok, errors: result.errors, warnings: result.warnings }))
    } else {
      for (const warning of result.warnings) yield* Console.error(`warning[${warning.code}]: ${bare(warning.message)}`)
      for (const error of result.errors) yield* Console.error(`error[${error.code}]: ${error.message}`)
      if (result.summary !== undefined) yield* Console.log(`${path}: ok, ${result.summary}`)
      const counted = [
        ...(result.errors.length > 0 ? [`${result.errors.length} error${result.errors.length === 1 ? "" : "s"}`] : []),
        ...(result.warnings.length > 0 ? [`${result.warnings.length} warning${result.warnings.length === 1 ? "" : "s"}`] : [])
      ]
      if (result.errors.length > 1 || (strict && result.warnings.length > 0)) yield* Console.error(`${path}: ${counted.join(", ")}`)
    }
    if (!result.ok || (strict && result.warnings.length > 0)) return yield* exitWith(1)
  }).pipe(Effect.provide(HostEnvironment.layer))
).pipe(Command.withDescription(
  "Check a capsule's murmur.yaml, its artifacts' files and its network grant; print every error and warning.\n" +
    "Example: capsule-runtime validate examples/hello --strict"
))
