import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

/**
 * Most test files wait more than they compute (servers starting, schedules coming due, time-outs running out):
 * two workers more than the machine has cores keep the cores busy, where Vitest's default is one fewer.
 * The projects themselves are in vitest.workspace.ts.
 */
export default defineConfig({ test: { maxWorkers: availableParallelism() + 2, minWorkers: 1 } })
