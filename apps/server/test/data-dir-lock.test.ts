import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { lockDataDir, processStartTime } from "../src/Database/DataDirLock.js"
import { scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"

/** A live process that is not Postline, killed when the scope closes. */
const unrelatedProcess = Effect.acquireRelease(
  Effect.sync(() => spawn("sleep", ["60"])),
  (child) => Effect.sync(() => child.kill("SIGKILL"))
)

const lockExit = (dataDir: string) => Effect.exit(Effect.scoped(lockDataDir(dataDir)))

// The lock is a file in the data folder: the database kind does not matter, so it runs once.
describe.skipIf(testDatabaseKind !== "embedded")("the data folder's lock", () => {
  it.scopedLive("records the holder's pid and start time, and removes the file when released", () =>
    Effect.gen(function*() {
      const dataDir = yield* scopedTempDir("postline-lock-")
      const scope = yield* Scope.make()
      yield* lockDataDir(dataDir).pipe(Scope.extend(scope))
      const file = Path.join(dataDir, "postline.lock")
      expect(readFileSync(file, "utf8")).toBe(`${process.pid} ${processStartTime(process.pid)}`)
      yield* Scope.close(scope, Exit.void)
      expect(existsSync(file)).toBe(false)
    }))

  it.scopedLive("is taken over when its pid now belongs to another process", () =>
    Effect.gen(function*() {
      const dataDir = yield* scopedTempDir("postline-lock-")
      const other = yield* unrelatedProcess
      const file = Path.join(dataDir, "postline.lock")
      writeFileSync(file, `${other.pid} ${Number(processStartTime(other.pid!)) - 1}`)
      expect(Exit.isSuccess(yield* lockExit(dataDir))).toBe(true)
    }))

  it.scopedLive("is taken over when its process is gone", () =>
    Effect.gen(function*() {
      const dataDir = yield* scopedTempDir("postline-lock-")
      const gone = spawn("true")
      yield* Effect.promise(() => new Promise((exited) => gone.once("exit", exited)))
      writeFileSync(Path.join(dataDir, "postline.lock"), `${gone.pid} 1`)
      expect(Exit.isSuccess(yield* lockExit(dataDir))).toBe(true)
    }))

  it.scopedLive("refuses while its process lives, and from an older server that recorded the pid alone", () =>
    Effect.gen(function*() {
      const dataDir = yield* scopedTempDir("postline-lock-")
      const holder = yield* unrelatedProcess
      const file = Path.join(dataDir, "postline.lock")
      for (const content of [`${holder.pid} ${processStartTime(holder.pid!)}`, `${holder.pid}`]) {
        writeFileSync(file, content)
        const exit = yield* lockExit(dataDir)
        expect(exit).toEqual(Exit.fail(expect.objectContaining({
          _tag: "StartupError",
          message: `The data folder ${dataDir} is in use by another Postline process (pid ${holder.pid}). ` +
            "Stop it first, or set DATABASE_URL."
        })))
      }
    }))
})
