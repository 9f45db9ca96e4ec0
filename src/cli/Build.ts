/**
 * `build <dir>`: builds every guest of a capsule that comes as source (../build/CapsuleBuild.ts)
 * with the shipped guests' pipeline, skipping those whose digest stamp matches and copying those
 * the build cache holds (../build/BuildCache.ts). One line per guest with its time, and one every
 * few seconds while a build lasts; each failure as `error[CODE]: …` naming the guest and its
 * directory; exit 1 when anything failed.
 */
import { Command } from "@effect/cli"
import { Console, Duration, Effect } from "effect"
import { relative } from "node:path"
import { planCapsuleBuild } from "../build/CapsuleBuild.js"
import { type BuildCache, DEFAULT_BUILD_CACHE_BYTES, isCached } from "../build/BuildCache.js"
import { buildGuestDir, currentDigest, isUpToDate } from "../build/GuestBuild.js"
import { buildCacheDirectory } from "../layers/Host.js"
import { exitWith } from "./Exit.js"
import { existingArg } from "./Flags.js"

const dir = existingArg("dir", "directory", "The capsule (or tool) directory holding murmur.yaml")

const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MiB`

export interface BuildOptions {
  /** How often a long build says it is still going (5 s). */
  readonly progressEvery?: Duration.DurationInput
  /** Where built components are kept (the host's cache directory's `builds/`, 1 GiB). */
  readonly cache?: BuildCache
}

/** A line every `every` until interrupted: StarlingMonkey is silent for half a minute. */
const stillBuilding = (label: string, builder: string, every: Duration.Duration) =>
  Effect.gen(function*() {
    for (let ticks = 1; ; ticks++) {
      yield* Effect.sleep(every)
      const seconds = (Duration.toMillis(every) * ticks) / 1000
      yield* Console.log(`  still building ${label} (${builder}): ${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`)
    }
  })

export const buildCapsule = Effect.fn("Build.capsule")(function*(directory: string, options: BuildOptions = {}) {
  const cache = options.cache ?? { directory: yield* buildCacheDirectory, maxBytes: DEFAULT_BUILD_CACHE_BYTES }
  const every = Duration.decode(options.progressEvery ?? "5 seconds")
  const plan = planCapsuleBuild(directory)
  let failed = plan.problems.length
  for (const problem of plan.problems) yield* Console.error(`error[${problem.code}]: ${problem.message}`)
  if (plan.targets.length === 0 && failed === 0) yield* Console.log(`${directory}: nothing to build (no guest directory with a world.wit)`)
  for (const { guest, label } of plan.targets) {
    const shown = relative(process.cwd(), `${guest.dir}/${guest.output}`) || guest.output
    const digest = currentDigest(guest)
    if (isUpToDate(guest, digest)) {
      yield* Console.log(`up to date ${label} → ${shown}`)
      continue
    }
    // StarlingMonkey takes ~20 s: say so before, not after, and while it lasts.
    if (!isCached(cache, digest)) yield* Console.log(`building ${label} (${guest.builder.label}, world ${guest.world})…`)
    const built = yield* Effect.tryPromise(() => buildGuestDir(guest, cache)).pipe(
      Effect.either,
      Effect.raceFirst(stillBuilding(label, guest.builder.label, every).pipe(Effect.zipRight(Effect.never)))
    )
    if (built._tag === "Left") {
      failed++
      const cause = built.left.cause instanceof Error ? built.left.cause.message : String(built.left.cause)
      yield* Console.error(`error[E-BUILD-001]: ${label} (${guest.dir}): ${cause}`)
      continue
    }
    yield* Console.log(built.right.reused
      ? `reused ${label} from the build cache, same sources (${mib(built.right.bytes)}) → ${shown}`
      : `built ${label} in ${built.right.ms} ms (${mib(built.right.bytes)}) → ${shown}`)
  }
  if (failed > 0) return yield* exitWith(1)
})

export const buildCommand = Command.make("build", { dir }, ({ dir }) => buildCapsule(dir)).pipe(
  Command.withDescription(
    "Build a capsule's JS/TS guests (its tools, driver, script component) into components, skipping unchanged ones.\n" +
      "Example: capsule-runtime build examples/hello"
  )
)
