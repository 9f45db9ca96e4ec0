import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two files at a time on two cores: most files wait on child processes (the CLI, servers,
    // workers) as much as they compute, and vitest's default here is one worker (cores - 1).
    // Three was tried: no faster on two cores, and the longest files ran out of time.
    maxWorkers: 2,
    minWorkers: 1,
    // Files share their worker's module cache: each file used to load effect, @effect/platform
    // and the runtime afresh (collection 220 s of the suite's summed time, 16 s without). Tests
    // therefore leave no global state behind (env, cwd, module-level caches); the whole suite
    // passes in this mode and in isolation alike.
    isolate: false,
    // Commands the tests start keep nothing between runs unless a test asks for a store: the
    // default store is one SQLite file per capsule directory, and files serve the same examples
    // at once. Tests of the store pass --store (or set MURMUR_STORE) themselves.
    env: { MURMUR_STORE: "memory" }
  }
})
