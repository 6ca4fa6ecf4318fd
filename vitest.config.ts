import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

// The run's own settings; its projects (the two databases) are in vitest.workspace.ts.
export default defineConfig({
  test: {
    // Twice as many test files at once as cores, up to eight: a file waits much of its time (for processes to start,
    // timeouts to run out, the PostgreSQL server), and with one file per core those waits leave cores idle.
    maxWorkers: Math.min(2 * availableParallelism(), 8)
  }
})
