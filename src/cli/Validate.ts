/**
 * `validate <dir>`: parses `<dir>/murmur.yaml` exactly as a launch would (the host environment
 * answers `inference.api_key: ${VAR}`) and reports what it found: each warning as
 * `warning[CODE]: message` and the refusal as `error[CODE]: message` on stderr, or one JSON
 * object `{ok, errors, warnings}` on stdout with `--json`. Exit 1 when the manifest is refused.
 */
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either } from "effect"
import { join } from "node:path"
import { HostEnvironment } from "../layers/Host.js"
import { isAgentCapsule, parseManifest } from "../sandbox/Manifest.js"
import { MANIFEST_FILENAME } from "../sandbox/manifest/ManifestError.js"
import { exitWith } from "./Exit.js"

const dir = Args.directory({ name: "dir", exists: "yes" }).pipe(Args.withDescription("The capsule directory (holding murmur.yaml)"))
const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object on stdout"))

export interface Diagnostic {
  readonly code: string
  readonly message: string
  /** Dotted manifest path a warning is about. */
  readonly path?: string
}

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

export const validateCommand = Command.make("validate", { dir, json }, ({ dir, json }) =>
  Effect.gen(function*() {
    const host = yield* HostEnvironment
    const path = join(dir, MANIFEST_FILENAME)
    const text = yield* readManifest(path)
    const result: Validation = Either.isLeft(text)
      ? { ok: false, errors: [text.left], warnings: [] }
      : validateManifest(text.right, host.env, path)
    if (json) {
      yield* Console.log(JSON.stringify({ ok: result.ok, errors: result.errors, warnings: result.warnings }))
    } else {
      for (const warning of result.warnings) yield* Console.error(`warning[${warning.code}]: ${bare(warning.message)}`)
      for (const error of result.errors) yield* Console.error(`error[${error.code}]: ${error.message}`)
      if (result.summary !== undefined) yield* Console.log(`${path}: ok, ${result.summary}`)
    }
    if (!result.ok) return yield* exitWith(1)
  }).pipe(Effect.provide(HostEnvironment.layer))
).pipe(Command.withDescription("Check a capsule's murmur.yaml and print its errors and warnings"))
