import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { OrganizationId } from "@postline/domain"
import { Console, Effect, Layer, Logger, LogLevel, Redacted, Schema } from "effect"
import { parseArgs } from "node:util"
import { Credits } from "./Credits/Service.js"
import { DatabaseLive } from "./Database/Database.js"
import { DeploymentLive } from "./Deployment.js"
import { CredentialsCipherLive } from "./Providers/CredentialsCipher.js"
import { rotateCredentials } from "./SocialAccounts/CredentialsRotation.js"
import { minPasswordLength } from "./Users/Passwords.js"
import { UsersRepo } from "./Users/Repo.js"

const usage = `Usage:
  pnpm admin users create --email <email> --name <name>
      Creates a user and a personal access token; prints {"id","email","token"} as JSON.
  pnpm admin users set-password --email <email>  < password
      Reads a password from standard input (one line) and stores its scrypt hash.
  pnpm admin credits grant --organization <id> --amount <credits> [--note <text>]
      Adds whole credits to an organization; prints {"organizationId","balance","reserved","available"}.
  pnpm admin credentials rotate
      Re-encrypts every social account's credentials with CREDENTIALS_KEY (the server's key), so that the keys of
      CREDENTIALS_KEY_PREVIOUS can be dropped; prints {"reencrypted","alreadyCurrent","unreadable"}. Accounts whose
      credentials no key reads are marked reconnect_required.`

class UsageError extends Error {}

/** Logs go to standard error: standard output carries a command's answer alone, for scripts to parse. */
const stderrLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.prettyLogger({ stderr: true, colors: process.stderr.isTTY === true })
)

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

const readStandardInput = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
})

const setPassword = (args: Array<string>) =>
  Effect.gen(function*() {
    const { values } = yield* Effect.try({
      try: () => parseArgs({ args, options: { email: { type: "string" } }, strict: true }),
      catch: (error) => new UsageError((error as Error).message)
    })
    const email = values.email?.trim()
    if (!email) return yield* Effect.fail(new UsageError("--email is required"))
    // One line: a trailing newline from `echo` or a terminal is not part of the password.
    const password = (yield* readStandardInput).replace(/\r?\n$/, "")
    if ([...password].length < minPasswordLength || password.includes("\n")) {
      return yield* Effect.fail(new UsageError(`The password must be one line of at least ${minPasswordLength} characters`))
    }
    const users = yield* UsersRepo
    if (!(yield* users.setPassword(email, Redacted.make(password)))) return yield* Effect.fail(new Error(`No user with email ${email}`))
    yield* Console.error(`Password set for ${email}`)
  })

const grantCredits = (args: Array<string>) =>
  Effect.gen(function*() {
    const { values } = yield* Effect.try({
      try: () =>
        parseArgs({
          args,
          options: { organization: { type: "string" }, amount: { type: "string" }, note: { type: "string" } },
          strict: true
        }),
      catch: (error) => new UsageError((error as Error).message)
    })
    const organizationId = yield* Schema.decodeUnknown(OrganizationId)(values.organization).pipe(
      Effect.mapError(() => new UsageError("--organization must be an organization's UUID"))
    )
    const amount = Number(values.amount)
    if (!/^[0-9]+$/.test(values.amount ?? "") || amount < 1 || amount > 1_000_000_000) {
      return yield* Effect.fail(new UsageError("--amount must be a whole number of credits, 1 to 1000000000"))
    }
    const note = values.note?.trim() || null
    if (note !== null && (note.length > 500 || note.includes("\0"))) {
      return yield* Effect.fail(new UsageError("--note must be at most 500 characters"))
    }
    const credits = yield* Credits
    const after = yield* credits.grant(organizationId, amount, note).pipe(Effect.mapError((error) => new Error(error.message)))
    yield* Console.log(JSON.stringify({ organizationId, ...after }))
  })

const rotateKeys = (args: Array<string>) =>
  Effect.gen(function*() {
    yield* Effect.try({
      try: () => parseArgs({ args, options: {}, strict: true }),
      catch: (error) => new UsageError((error as Error).message)
    })
    const counts = yield* rotateCredentials
    yield* Console.log(JSON.stringify(counts))
  }).pipe(
    // Only this command needs the key: the others run without one, as on PostgreSQL before it is set.
    Effect.provide(CredentialsCipherLive.pipe(Layer.provide(DeploymentLive))),
    Effect.catchTag("ConfigError", (error) => Effect.fail(new Error(String(error))))
  )

const commands: Record<string, (args: Array<string>) => Effect.Effect<void, Error, UsersRepo | Credits | SqlClient.SqlClient>> = {
  "users create": createUser,
  "users set-password": setPassword,
  "credits grant": grantCredits,
  "credentials rotate": rotateKeys
}

const [resource, action, ...rest] = process.argv.slice(2)
const command = commands[`${resource} ${action}`]

const program = command
  ? command(rest).pipe(Effect.provide([UsersRepo.Default, Credits.Default]))
  : Effect.fail(new UsageError(`Unknown command: ${[resource, action].filter(Boolean).join(" ") || "(none)"}`))

program.pipe(
  Effect.provide(DatabaseLive),
  Effect.provide(DeploymentLive),
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
  Effect.provide(Layer.merge(stderrLogger, Logger.minimumLogLevel(LogLevel.Warning))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
