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
    minWorkers: 1
  }
})
