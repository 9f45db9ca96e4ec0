/**
 * A `murmur.yaml` read for its outline only: the top-level mapping as plain values, without the
 * checks `parseManifest` (./Manifest.ts) makes. For the callers that look at a manifest before,
 * or instead of, launching it: `build` planning what to compile and delegation resolving a
 * child capsule's version, where a manifest error is the launch's to report, not theirs.
 */
import { readFileSync } from "node:fs"
import { Either } from "effect"
import { parse } from "yaml"

export interface ManifestOutline {
  readonly name?: unknown
  readonly version?: unknown
  readonly runtime?: unknown
  readonly artifacts?: unknown
  readonly [key: string]: unknown
}

/**
 * The top-level mapping of the YAML file at `path`: left when it cannot be read or is not YAML,
 * right `undefined` when it is YAML but not a mapping.
 */
export const readManifestOutline = (path: string): Either.Either<ManifestOutline | undefined, unknown> =>
  Either.try(() => {
    const value = parse(readFileSync(path, "utf8")) as unknown
    return typeof value === "object" && value !== null ? value as ManifestOutline : undefined
  })
