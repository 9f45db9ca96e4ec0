import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Three files at a time on two cores: most files wait on child processes (the CLI, servers,
    // workers) more than they compute, and vitest's default here is one worker (cores - 1).
    maxWorkers: 3,
    minWorkers: 1
  }
})
