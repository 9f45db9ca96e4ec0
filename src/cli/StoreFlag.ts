/** `--store`: the store a command's session is kept in, opened around the command (../layers/Store.ts). */
import { Effect } from "effect"
import { HostEnvironment } from "../layers/Host.js"
import { murmurHome } from "../project/MurmurHome.js"
import { defaultStorePath, storeLayer, type StoreSpec } from "../layers/Store.js"

/** Runs `effect` with the store open (nothing for `memory`); the default is the directory's SQLite file. */
export const withStore = (spec: StoreSpec, directory: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const chosen = spec._tag === "Default" ? { _tag: "Sqlite" as const, path: defaultStorePath(murmurHome((yield* HostEnvironment).env), directory) } : spec
    const layer = storeLayer(chosen)
    return yield* (layer === undefined ? effect : Effect.provide(effect, layer))
  })
