/**
 * Whether this runtime would run a component, from its bytes alone: its WIT world, what it could
 * run as, and what the loader would refuse (a denied or mismatched import, a constant expression
 * it cannot fold). `inspect` prints it; a host can ask before it serves a component.
 */
import { Effect, Either } from "effect"
import { digestOf } from "../project/Digest.js"
import { foldExtendedConst } from "../sandbox/component/ComponentCache.js"
import { type ComponentWorld, readWorld, runnableAs, supportedMurmur, unsupported } from "../sandbox/component/ComponentWorld.js"

export interface ComponentCheck {
  readonly sha256: string
  readonly world: ComponentWorld
  readonly runnableAs: ReadonlyArray<"capsule" | "tool" | "hook">
  readonly problems: ReadonlyArray<string>
  readonly runnable: boolean
  /** The exports that make a component runnable, with the versions this runtime implements. */
  readonly runExports: readonly [capsule: string, tool: string]
}

const runExports = [
  `murmur:capsule/run@${supportedMurmur.get("murmur:capsule/run")}`,
  `murmur:tool/run@${supportedMurmur.get("murmur:tool/run")}`
] as const

/** Fails with the reader's `{ reason, message }` when the bytes are no component it can read. */
export const checkComponent = (bytes: Uint8Array) =>
  Effect.map(readWorld(bytes), (world): ComponentCheck => {
    const folded = foldExtendedConst(bytes)
    const problems = [...unsupported(world).map((problem) => problem.message), ...(Either.isLeft(folded) ? [folded.left] : [])]
    const roles = runnableAs(world)
    return { sha256: digestOf(bytes), world, runnableAs: roles, problems, runnable: problems.length === 0 && roles.length > 0, runExports }
  })
