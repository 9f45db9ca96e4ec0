/**
 * `W-SEC-019`: keys a `murmur.yaml` declares that this runtime does not recognize. Never a refusal:
 * a manifest written for a newer runtime must still load. A key within editing distance of a
 * recognized key of the same block is worded as a spelling problem, anything else as a key that
 * may come from a newer release (the reference's two wordings).
 */
import type { ManifestWarning } from "./ManifestError.js"
import type { UnknownKey } from "./YamlReader.js"

const DIAGNOSTICS_LINK = "https://docs.murmur.nexus/murmur-nexus/murmur/reference/diagnostics/#w-sec-019"

/** Optimal-string-alignment distance, counted in characters: a transposition costs 1. */
export const editDistance = (left: string, right: string): number => {
  const a = Array.from(left)
  const b = Array.from(right)
  if (a.length === 0) return b.length
  if (b.length === 0) return a.length
  const grid = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = grid[i]!
      let best = Math.min(grid[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1), grid[i - 1]![j]! + 1, row[j - 1]! + 1)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, grid[i - 2]![j - 2]! + 1)
      row[j] = best
    }
  }
  return grid[a.length]![b.length]!
}

/** A third of the longer key, never below 1. */
const threshold = (declared: string, candidate: string) =>
  Math.max(1, Math.floor(Math.max(Array.from(declared).length, Array.from(candidate).length) / 3))

/** The recognized key nearest `declared`, first in declaration order on ties. */
export const nearestKnownKey = (declared: string, known: ReadonlyArray<string>): string | undefined => {
  let best: { readonly key: string; readonly distance: number } | undefined
  for (const candidate of known) {
    const distance = editDistance(declared, candidate)
    if (distance <= threshold(declared, candidate) && (best === undefined || distance < best.distance)) {
      best = { key: candidate, distance }
    }
  }
  return best?.key
}

const numericTriple = (version: string): readonly [number, number, number] | undefined => {
  const parts = version.trim().split(".")
  if (parts.length !== 3 || !parts.every((part) => /^[0-9]+$/.test(part))) return undefined
  return [Number(parts[0]), Number(parts[1]), Number(parts[2])]
}

const isNewer = (pinned: readonly [number, number, number], running: readonly [number, number, number]) =>
  pinned[0] !== running[0] ? pinned[0] > running[0] : pinned[1] !== running[1] ? pinned[1] > running[1] : pinned[2] > running[2]

/**
 * One warning per unknown key, in the order the blocks were read, plus a line naming a stale
 * runtime when `mur_version` pins a newer release than `runningVersion`.
 */
export const unknownKeyWarnings = (
  keys: ReadonlyArray<UnknownKey>,
  murVersion: string | undefined,
  runningVersion: string | undefined
): ReadonlyArray<ManifestWarning> => {
  const warnings: Array<ManifestWarning> = keys.map(({ blockPath, key, known }) => {
    const location = blockPath === "" ? "at the top level" : `in ${blockPath}`
    const nearest = nearestKnownKey(key, known)
    const message = nearest !== undefined
      ? `unrecognized key '${key}' ${location} — did you mean '${nearest}'? The manifest has a spelling problem here: the key was parsed and ignored, so whatever it declared is not in effect. Correct it in murmur.yaml (${DIAGNOSTICS_LINK})`
      : `unrecognized key '${key}' ${location} — this build of mur does not recognize it and no key it does recognize there is close to it, so the key may come from a newer mur. It was parsed and ignored; nothing here says the manifest is misspelled (${DIAGNOSTICS_LINK})`
    return { code: "W-SEC-019", message, path: blockPath === "" ? key : `${blockPath}.${key}` }
  })
  const pinned = murVersion === undefined ? undefined : numericTriple(murVersion)
  const running = runningVersion === undefined ? undefined : numericTriple(runningVersion)
  if (keys.length > 0 && pinned !== undefined && running !== undefined && isNewer(pinned, running)) {
    const count = keys.length === 1 ? "1 key in it is not recognized by this build" : `${keys.length} keys in it are not recognized by this build`
    warnings.push({
      code: "W-SEC-019",
      message: `this manifest pins mur ${murVersion!.trim()}, you are running ${runningVersion!.trim()}; ${count} (${DIAGNOSTICS_LINK})`,
      path: "mur_version"
    })
  }
  return warnings
}
