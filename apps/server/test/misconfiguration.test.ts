import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { callsAs, createUserWithToken, freePort, serverDir, spawnServer, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, postgresAdminUrl, postgresEnv, scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"

// A line logged with a cause beside its text (a warning of a loaded machine, say) has an array as its message.
type LogLine = {
  readonly message: string | ReadonlyArray<unknown>
  readonly logLevel: string
  readonly annotations: Record<string, unknown>
}

const logLines = (lines: ReadonlyArray<string>): Array<LogLine> =>
  lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line))

/**
 * Preloads fixtures/exit-spy.cjs, which says on stderr when the process is ended by `process.exit`: the server ends
 * by having nothing left to run (src/RunMain.ts), since Node's `process.exit` now and then hangs for good.
 */
const exitSpy = { NODE_OPTIONS: `--require ${fileURLToPath(new URL("./fixtures/exit-spy.cjs", import.meta.url))}` }
const exitCalls = (lines: ReadonlyArray<string>) => lines.filter((line) => line.includes("process.exit("))

/**
 * A server that should refuse to start: its exit code, how long it ran, and its log. Killed after five minutes, which
 * only ends what hangs: a retry shows in the log (expectRefused), however long a busy machine takes to start.
 */
const refusedStart = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const started = performance.now()
    const server = spawnServer({ HOST: "127.0.0.1", PORT: String(port), ...env, ...exitSpy })
    const exitCode = new Promise<number | null>((done) => server.child.once("exit", (code) => done(code)))
    yield* Effect.addFinalizer(() => Effect.sync(() => server.child.kill("SIGKILL")))
    const code = Option.getOrUndefined(yield* Effect.promise(() => exitCode).pipe(Effect.timeoutOption("5 minutes")))
    // Its log is whole once its pipes close, a moment after it exits. A CI run once waited five minutes for them
    // after the FATAL line: the exit code now comes from the exit itself, and a log whose pipes stay open is judged
    // by what was read in the minute after it.
    if (code !== undefined) yield* Effect.promise(() => server.exited).pipe(Effect.timeoutOption("1 minute"))
    return { code, ms: Math.round(performance.now() - started), lines: server.lines, logs: logLines(server.lines) }
  })

/**
 * Exit code 1 without a single start retry (waiting would not fix it: the point is not 60 s of retries), and the
 * log ends with its only FATAL line, whose message holds each of `words`. Answers the time it took, for the record
 * (reported, not asserted: a busy machine may take long to start a process).
 */
const expectRefused = (run: Effect.Effect.Success<ReturnType<typeof refusedStart>>, ...words: ReadonlyArray<string>) => {
  expect(run.code, run.lines.join("\n")).toBe(1)
  expect(exitCalls(run.lines)).toEqual([])
  expect(run.logs.filter((log) => log.message === "The database is not reachable yet")).toEqual([])
  expect(run.lines.filter((line) => line.startsWith("stderr:"))).toEqual([])
  expect(run.logs.filter((log) => log.logLevel === "FATAL")).toHaveLength(1)
  const last = run.logs.at(-1)!
  expect(last.logLevel).toBe("FATAL")
  for (const word of words) expect(last.message).toContain(word)
  console.info(`refused in ${run.ms} ms: ${last.message}`)
  return run.ms
}

const isRoot = process.getuid?.() === 0

describe("a misconfigured server says what to do in one line, and exits at once", () => {
  it.scopedLive("LOG_LEVEL that is no level: the known ones are listed", () =>
    Effect.gen(function*() {
      const run = yield* refusedStart({ ...(yield* freshDatabaseEnv), LOG_LEVEL: "LOUD" })
      expectRefused(run, `LOG_LEVEL "LOUD" is not one of ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF`)
      expect(run.logs).toHaveLength(1)
    }))

  it.scopedLive("PORT in use", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const holder = createServer()
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void holder.listen(port, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => holder.close())
      )
      const run = yield* refusedStart({ ...(yield* freshDatabaseEnv), PORT: String(port) })
      expectRefused(run, `PORT ${port} is in use: stop the other process or set PORT`)
    }))

  describe.skipIf(testDatabaseKind !== "postgres")("on PostgreSQL", () => {
    it.scopedLive("DATABASE_URL that is no PostgreSQL URL, never quoted (it may hold the password)", () =>
      Effect.gen(function*() {
        for (const url of ["not a url with s3cret-pw", "mysql://root:s3cret-pw@127.0.0.1/postline", ""]) {
          const run = yield* refusedStart(postgresEnv(url))
          expectRefused(run, "DATABASE_URL is not a valid PostgreSQL URL", "postgres://USER:PASSWORD@HOST:5432/DATABASE")
          expect(run.lines.join("\n")).not.toContain("s3cret-pw")
        }
      }))

    it.scopedLive("a database that does not exist: not retried for a minute", () =>
      Effect.gen(function*() {
        const url = new URL(postgresAdminUrl)
        url.pathname = "/postline_does_not_exist"
        const run = yield* refusedStart(postgresEnv(url.toString()))
        expectRefused(
          run,
          `The database "postline_does_not_exist" does not exist on ${url.hostname}:${url.port || 5432}: ` +
            "create it (createdb postline_does_not_exist) or fix DATABASE_URL"
        )
        expect(run.logs.filter((log) => log.message === "The database is not reachable yet")).toEqual([])
      }))

    it.scopedLive("a user PostgreSQL does not accept: not retried either", () =>
      Effect.gen(function*() {
        const url = new URL(postgresAdminUrl)
        url.username = "postline_no_such_role"
        url.password = "s3cret-pw"
        const run = yield* refusedStart(postgresEnv(url.toString()))
        expectRefused(run, `PostgreSQL on ${url.hostname}:${url.port || 5432} refused the login`, "postline_no_such_role", "DATABASE_URL")
        expect(run.lines.join("\n")).not.toContain("s3cret-pw")
      }))
  })

  describe.skipIf(testDatabaseKind !== "embedded")("with the embedded database", () => {
    it.scopedLive("DATA_DIR that is a file, or lies under one: the file is named", () =>
      Effect.gen(function*() {
        const dir = yield* scopedTempDir("postline-misconfigured-")
        const file = Path.join(dir, "a-file")
        writeFileSync(file, "not a folder")
        for (const dataDir of [file, Path.join(file, "data")]) {
          const run = yield* refusedStart({ DATA_DIR: dataDir })
          expectRefused(run, `DATA_DIR ${dataDir} is not a writable folder: ${file} is a file, not a folder`, "set DATA_DIR")
        }
      }))

    // root writes whatever the mode says: the case needs an ordinary user.
    it.scopedLive.skipIf(isRoot)("DATA_DIR that this process may not write in", () =>
      Effect.gen(function*() {
        const dir = yield* scopedTempDir("postline-misconfigured-")
        const readOnly = Path.join(dir, "read-only")
        mkdirSync(readOnly, { mode: 0o500 })
        yield* Effect.addFinalizer(() => Effect.sync(() => chmodSync(readOnly, 0o700)))
        const run = yield* refusedStart({ DATA_DIR: readOnly })
        expectRefused(run, `DATA_DIR ${readOnly} is not a writable folder`, `may not create or write in ${readOnly};`, "set DATA_DIR")
      }))
  })
})

describe("billing's settings, checked at start", () => {
  it.scopedLive("STRIPE_SECRET_KEY without the webhook's secret, packs that are not credits to price ids, or a recharge poll of 0 ms", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const stripe = { STRIPE_SECRET_KEY: "sk_test_postline", BILLING_CREDIT_PACKS: `{"1000":"price_pack_1000"}` }
      expectRefused(yield* refusedStart({ ...database, ...stripe }), "STRIPE_WEBHOOK_SECRET", "whsec_")
      expectRefused(
        yield* refusedStart({ ...database, ...stripe, STRIPE_WEBHOOK_SECRET: "whsec_x", BILLING_CREDIT_PACKS: `{"many":"price_1"}` }),
        "BILLING_CREDIT_PACKS",
        "JSON object of credits to Stripe price ids"
      )
      expectRefused(
        yield* refusedStart({ ...database, BILLING_RECHARGE_POLL_MS: "0" }),
        "BILLING_RECHARGE_POLL_MS",
        "whole number of milliseconds from 10 to 3600000"
      )
    }))
})

describe("the outbound guard", () => {
  it.scopedLive("refuses a webhook on this machine, or over plain http, naming OUTBOUND_ALLOW_PRIVATE=true", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const server = yield* startServer(database)
      const call = callsAs(server, token)
      const organization = yield* call("POST", "/v1/organizations", { name: "Acme" })
      const team = yield* call("POST", "/v1/teams", { organizationId: organization.body.id, name: "Social" })
      for (
        const [url, why] of [
          ["https://127.0.0.1:9/hook", "127.0.0.1 is a loopback address"],
          ["http://example.com/hook", "only https addresses are allowed"]
        ]
      ) {
        const refused = yield* call("POST", `/v1/teams/${team.body.id}/social-accounts`, { provider: "webhook", url })
        expect(refused.status, url).toBe(400)
        expect(refused.body.message, url).toContain(why)
        expect(refused.body.message, url).toContain("OUTBOUND_ALLOW_PRIVATE=true")
      }
    }))
})

describe("the start and stop lines", () => {
  it.scopedLive("once listening, one INFO line with the address, database and version; on SIGTERM one as it begins to stop, one when stopped", () =>
    Effect.gen(function*() {
      const fresh = yield* freshDatabaseEnv
      // PostgreSQL here trusts every local login: a password in the URL is accepted, and must show nowhere.
      const withPassword = fresh.DATABASE_URL?.replace("postgres@", "postgres:s3cret-pw@")
      const database = withPassword ? { ...fresh, DATABASE_URL: withPassword } : fresh
      const server = yield* startServer({ ...database, LOG_LEVEL: "INFO", ...exitSpy })
      const address = new URL(server.base).host
      const { version } = JSON.parse(readFileSync(Path.join(serverDir, "package.json"), "utf8"))
      const where = testDatabaseKind === "postgres"
        ? (() => {
          const url = new URL(database.DATABASE_URL!)
          const name = url.pathname.slice(1)
          return {
            words: `the PostgreSQL database "${name}" on ${url.hostname}:${url.port}`,
            fields: { database: "postgres", databaseServer: `${url.hostname}:${url.port}`, databaseName: name }
          }
        })()
        : {
          words: `the embedded database in ${Path.resolve(database.DATA_DIR!)}`,
          fields: { database: "embedded", dataDir: Path.resolve(database.DATA_DIR!) }
        }
      const started = logLines(server.lines).filter((log) => typeof log.message === "string" && log.message.startsWith("Postline "))
      expect(started).toEqual([expect.objectContaining({
        logLevel: "INFO",
        message: `Postline ${version} is listening on http://${address}, with ${where.words}`,
        annotations: { address, version, ...where.fields }
      })])

      server.child.kill("SIGTERM")
      expect(yield* Effect.promise(() => server.exited)).toBe(0)
      expect(exitCalls(server.lines)).toEqual([])
      const logs = logLines(server.lines)
      const startedAt = logs.findIndex((log) => typeof log.message === "string" && log.message.includes("is listening on"))
      const stopping = logs.findIndex((log) => log.message === "Postline is stopping: finishing the requests in flight")
      expect(startedAt).toBeGreaterThanOrEqual(0)
      expect(stopping).toBeGreaterThan(startedAt)
      expect(logs.at(-1)).toMatchObject({ logLevel: "INFO", message: "Postline has stopped" })
      expect(logs.filter((log) => log.logLevel === "FATAL")).toEqual([])
      expect(server.lines.join("\n")).not.toContain("s3cret-pw")
    }))
})
