/**
 * What a launch of a capsule directory says on this host beyond its manifest's parse, for
 * `validate` (so that `--strict` fails wherever `serve` or `run` would warn): the shell's
 * containment here (the `W-RUN-001` of an advisory host, or the `E-CAP-003` refusal of a floor it
 * cannot meet), each guest's grant as the launch makes it (`W-SEC-007` for network entries the
 * ceiling drops, a credential name in `env.allow`), and the driver's access to the API key
 * (`W-RUN-025`). The grants are made by the launch's own functions, in a scratch workdir and
 * state home removed afterwards; nothing is written to the capsule directory (no lockfile, no
 * workdir). A warning the launch prints without a code is `W-LAUNCH` here.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { driverAccess } from "../agent/DriverAccess.js"
import { artifactLocation } from "../project/CapsuleProject.js"
import { type CapsuleManifest, isAgentCapsule, parseManifest } from "../project/Manifest.js"
import { parseArtifactManifest } from "../project/manifest/ArtifactManifest.js"
import { capsuleGrant, type Granted, toolGrant } from "../sandbox/grants/Grants.js"
import { containmentFor } from "../shell/containment/ContainmentDecision.js"

export interface LaunchDiagnostic {
  readonly code: string
  readonly message: string
}

export interface LaunchCheck {
  readonly errors: ReadonlyArray<LaunchDiagnostic>
  readonly warnings: ReadonlyArray<LaunchDiagnostic>
}

type HostEnv = Readonly<Record<string, string | undefined>>

/** `warning[CODE]: text` as a diagnostic; an uncoded `warning: text` is `W-LAUNCH`. */
const diagnosticOf = (line: string): LaunchDiagnostic => {
  const coded = /^warning\[([^\]]+)\]: ([\s\S]*)$/.exec(line)
  return coded === null ? { code: "W-LAUNCH", message: line.replace(/^warning: /, "") } : { code: coded[1]!, message: coded[2]! }
}

/** Every guest's grant, as `serve` makes it, in a scratch workdir: their warnings. */
const grantWarnings = (manifest: CapsuleManifest, hostEnv: HostEnv): ReadonlyArray<string> => {
  const scratch = mkdtempSync(join(tmpdir(), "capsule-runtime-validate-"))
  try {
    const workdir = join(scratch, "workdir")
    mkdirSync(workdir)
    // A declared state store is made under MURMUR_HOME: the scratch one, not the user's.
    const context = { manifest, workdir, hostEnv: { ...hostEnv, MURMUR_HOME: join(scratch, "home") }, runtimeVars: {} }
    const guests = manifest.artifacts.filter((entry) => entry.runtime === "tool" || entry.runtime === "driver")
    const granted: ReadonlyArray<Either.Either<Granted, unknown>> = [
      ...(isAgentCapsule(manifest) ? [] : [capsuleGrant(context)]),
      ...guests.map((entry) => toolGrant(context, entry))
    ]
    // The parse already refused what a grant would refuse.
    return granted.flatMap((grant) => (Either.isRight(grant) ? grant.right.warnings : []))
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/** `W-RUN-025`: the driver is handed the API key because its own manifest declares no `inference_auth`. */
const driverWarning = (manifest: CapsuleManifest, directory: string): ReadonlyArray<string> => {
  const inference = manifest.inference
  const entry = manifest.artifacts.find((candidate) => candidate.name === inference?.driver?.artifact)
  if (inference === undefined || entry === undefined) return []
  const location = artifactLocation(directory, entry)
  const ownFile = join(location, "murmur.yaml")
  const own = existsSync(location) && statSync(location).isDirectory() && existsSync(ownFile)
    ? Either.getOrUndefined(parseArtifactManifest(readFileSync(ownFile, "utf8")))
    : undefined
  const { warning } = driverAccess(entry.name, inference.endpoint, inference.apiKey, own?.inferenceAuth)
  return warning === undefined ? [] : [warning]
}

/** The launch's warnings, or its refusal, for the capsule manifest `text` in `directory`. */
export const launchCheck = (directory: string, text: string, hostEnv: HostEnv): Effect.Effect<LaunchCheck> =>
  Effect.gen(function*() {
    const parsed = parseManifest(text, { env: hostEnv })
    if (Either.isLeft(parsed)) return { errors: [], warnings: [] }
    const { manifest } = parsed.right
    const decided = yield* Effect.either(containmentFor(manifest.capabilities, hostEnv))
    if (Either.isLeft(decided)) return { errors: [{ code: decided.left.code, message: decided.left.message }], warnings: [] }
    const lines = [...decided.right.warnings, ...grantWarnings(manifest, hostEnv), ...driverWarning(manifest, directory)]
    // A warning the launch repeats per guest (a credential name in env.allow) is said once.
    return { errors: [], warnings: [...new Set(lines)].map(diagnosticOf) }
  })
