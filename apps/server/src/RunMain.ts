import { makeRunMain } from "@effect/platform/Runtime"
import { constVoid } from "effect/Function"

// How long a process whose work is done may take to end by itself before it is made to.
const endAtLatestMs = 10_000

/**
 * `NodeRuntime.runMain`, except in how the process ends: with its exit code set and nothing left to run, as Node
 * ends a program, not with `process.exit`. Node's `process.exit` stops its V8 worker threads before the JavaScript
 * heap, and a background compile that waits for a collection on the main thread then waits forever
 * (nodejs/node#54918): a refused start printed its FATAL line and never exited. Should something still hold the
 * event loop, the process is ended as before, once `endAtLatestMs` have passed.
 */
export const runMain = makeRunMain(({ fiber, teardown }) => {
  const keepAlive = setInterval(constVoid, 2 ** 31 - 1)
  const onSignal = () => {
    process.removeListener("SIGINT", onSignal)
    process.removeListener("SIGTERM", onSignal)
    fiber.unsafeInterruptAsFork(fiber.id())
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    process.removeListener("SIGINT", onSignal)
    process.removeListener("SIGTERM", onSignal)
    clearInterval(keepAlive)
    teardown(exit, (code) => {
      process.exitCode = code
      setTimeout(() => process.exit(code), endAtLatestMs).unref()
    })
  })
})
