import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Logger, LogLevel } from "effect"
import { parseArgs } from "node:util"
import { DatabaseLive } from "./Database/Database.js"
import { UsersRepo } from "./Users/Repo.js"

const usage = `Usage:
  pnpm admin users create --email <email> --name <name>
      Creates a user and a personal access token; prints {"id","email","token"} as JSON.`

class UsageError extends Error {}

const createUser = (args: Array<string>) =>
  Effect.gen(function*() {
    const { values } = yield* Effect.try({
      try: () => parseArgs({ args, options: { email: { type: "string" }, name: { type: "string" } }, strict: true }),
      catch: (error) => new UsageError((error as Error).message)
    })
    const email = values.email?.trim()
    const name = values.name?.trim()
    if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) return yield* Effect.fail(new UsageError("--email must be an email address"))
    if (!name) return yield* Effect.fail(new UsageError("--name must not be empty"))
    const users = yield* UsersRepo
    const { token, user } = yield* users.createWithToken({ email, name })
    yield* Console.log(JSON.stringify({ id: user.id, email: user.email, token }))
  })

const [resource, action, ...rest] = process.argv.slice(2)

const program = resource === "users" && action === "create"
  ? createUser(rest).pipe(Effect.provide(UsersRepo.Default))
  : Effect.fail(new UsageError(`Unknown command: ${[resource, action].filter(Boolean).join(" ") || "(none)"}`))

program.pipe(
  Effect.provide(DatabaseLive),
  Effect.catchAll((error) =>
    Effect.zipRight(
      Console.error(
        error instanceof UsageError ? `${error.message}\n\n${usage}` : `Error: ${error.message}`
      ),
      Effect.sync(() => {
        process.exitCode = 1
      })
    )
  ),
  Effect.provide(Layer.merge(Logger.pretty, Logger.minimumLogLevel(LogLevel.Warning))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
