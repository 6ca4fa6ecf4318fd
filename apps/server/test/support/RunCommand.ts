import { execFile, type ExecFileOptions } from "node:child_process"

export interface CommandRun {
  /** The exit code; null when the command could not start or was ended by a signal. */
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a command to its end without blocking the worker (not `spawnSync` for anything long: a worker blocked for a
 * minute on a busy machine misses Vitest's own calls and fails the run).
 */
export const runCommand = (command: string, args: ReadonlyArray<string>, options: ExecFileOptions = {}) =>
  new Promise<CommandRun>((resolve) => {
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024, ...options, encoding: "utf8" }, (error, stdout, stderr) => {
      const code = (error as NodeJS.ErrnoException & { code?: unknown } | null)?.code
      resolve({ status: error === null ? 0 : typeof code === "number" ? code : null, stdout, stderr })
    })
  })
