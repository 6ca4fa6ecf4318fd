import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

/**
 * Most test files wait more than they compute (servers starting, schedules coming due, time-outs running out):
 * one worker more than the machine has cores keeps the cores busy, where Vitest's default is one fewer.
 * The projects themselves are in vitest.workspace.ts.
 */
export default defineConfig({ test: { maxWorkers: availableParallelism() + 1, minWorkers: 1 } })
