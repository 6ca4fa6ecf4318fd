import { FileSystem } from "@effect/platform"
import { Duration, Effect, Option, Schedule, Schema } from "effect"
import { hostname } from "node:os"

/** Who holds a lock: written into its file, so that a waiter can tell a holder that has died. */
const LockHolder = Schema.parseJson(Schema.Struct({ pid: Schema.Number, hostname: Schema.String, token: Schema.String }))

/** A holder touches its lock this often; a lock untouched for `staleAfter` was left behind by a hung process. */
const heartbeatEvery = Duration.seconds(5)
const staleAfterMillis = 30_000
const pollEvery = Duration.millis(50)
/** However alive its holder looks, a lock waited for this long is taken over. */
const longestWaitMillis = 120_000

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as { readonly code?: string }).code === "EPERM"
  }
}

/**
 * Runs effects one at a time across processes: each holds the file `lockFile` (made with O_EXCL, holding its pid,
 * host and a token of its own) while it runs, and removes it after. A lock whose holder has died on this host, or
 * that its holder has not touched for 30 seconds, is stale and taken over; a waiter polls every 50 ms and takes
 * over after 2 minutes at the most. A lock that cannot be made at all (a read-only folder, say) is run without,
 * with a warning: the lock only keeps processes from refreshing one login at once.
 */
export const makeFileLock = (fs: FileSystem.FileSystem, lockFile: string) => {
  const create = (token: string) =>
    fs.writeFileString(lockFile, JSON.stringify({ pid: process.pid, hostname: hostname(), token }), { flag: "wx", mode: 0o600 })
      .pipe(
        Effect.as("held" as const),
        Effect.catchAll((error) =>
          error._tag === "SystemError" && error.reason === "AlreadyExists"
            ? Effect.succeed("busy" as const)
            : Effect.as(
              Effect.logWarning(`Postline: cannot make the lock ${lockFile}; going on without it`, error),
              "unavailable" as const
            )
        )
      )

  /** Removes the lock if it is still this holder's (a lock taken over as stale is its new holder's). */
  const release = (token: string) =>
    fs.readFileString(lockFile).pipe(
      Effect.flatMap((content) => content.includes(token) ? fs.remove(lockFile) : Effect.void),
      Effect.ignore
    )

  /** Made, with its removal registered in the scope, without an interruption between the two. */
  const claim = (token: string) =>
    Effect.uninterruptible(
      Effect.tap(create(token), (claimed) => claimed === "held" ? Effect.addFinalizer(() => release(token)) : Effect.void)
    )

  const lockState = (waitedMillis: number) =>
    Effect.gen(function*() {
      const info = yield* Effect.option(fs.stat(lockFile))
      if (Option.isNone(info)) return "gone" as const
      const holder = Option.flatMap(
        yield* Effect.option(fs.readFileString(lockFile)),
        Schema.decodeUnknownOption(LockHolder)
      )
      if (Option.exists(holder, (h) => h.hostname === hostname() && !isRunning(h.pid))) return "stale" as const
      const touched = Option.getOrElse(Option.map(info.value.mtime, (date) => date.getTime()), () => 0)
      if (Date.now() - touched > staleAfterMillis) return "stale" as const
      if (waitedMillis <= longestWaitMillis) return "held" as const
      yield* Effect.logWarning(`Postline: ${lockFile} has been held for more than 2 minutes; taking it over`)
      return "stale" as const
    })

  /** Whether the lock is held: it may not be (see `create`). */
  const acquire = Effect.gen(function*() {
    const token = crypto.randomUUID()
    // The file system's clock, not the Effect one: its times are compared with the files'.
    const started = Date.now()
    while (true) {
      const claimed = yield* claim(token)
      if (claimed !== "busy") return claimed === "held"
      const state = yield* lockState(Date.now() - started)
      // Gone since: claimed again at once.
      if (state === "stale") yield* Effect.ignore(fs.remove(lockFile))
      if (state === "held") yield* Effect.sleep(pollEvery)
    }
  })

  const heartbeat = Effect.suspend(() => {
    const now = new Date()
    return Effect.ignore(fs.utimes(lockFile, now, now))
  }).pipe(Effect.repeat(Schedule.spaced(heartbeatEvery)))

  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.scoped(
      Effect.flatMap(acquire, (held) => held ? Effect.zipRight(Effect.forkScoped(heartbeat), effect) : effect)
    )
}
