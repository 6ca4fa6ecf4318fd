import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { connect } from "node:net"
import { redactSecretsInUrls } from "../src/Logging.js"
import { freePort, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

const sharedRedis = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379"

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => resolve(true)).once("error", () => resolve(false))
    socket.once("close", () => socket.destroy())
    socket.setTimeout(500, () => socket.destroy())
    void socket.once("connect", () => socket.end())
  })

/** A Redis server of this test's own, on `port`, that the test can stop; gone when the scope closes. */
const ownRedis = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
        stdio: "ignore"
      })
      while (!(await canConnect(port))) await new Promise((wait) => setTimeout(wait, 50))
      return child
    }),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  )

const metadata = (server: ServerProcess) =>
  Effect.promise(() => fetch(`${server.base}/.well-known/oauth-authorization-server`))

const waitFor = async (check: () => boolean, millis: number) => {
  for (const start = Date.now(); !check() && Date.now() - start < millis;) await new Promise((wait) => setTimeout(wait, 50))
  return check()
}

describe("rate limits across processes", () => {
  it.scoped("two server processes on one Redis share one limit", () =>
    Effect.gen(function*() {
      const settings = {
        REDIS_URL: sharedRedis,
        REDIS_KEY_PREFIX: `postline-test:${randomBytes(8).toString("hex")}:`,
        RATE_LIMIT_ANONYMOUS_REQUESTS: "4"
      }
      const first = yield* startServer({ ...(yield* freshDatabaseEnv), ...settings })
      const second = yield* startServer({ ...(yield* freshDatabaseEnv), ...settings })
      const answers = []
      for (const server of [first, second, first, second]) answers.push(yield* metadata(server))
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200])
      expect(answers.map((answer) => /;r=(\d+);/.exec(answer.headers.get("ratelimit") ?? "")?.[1])).toEqual(["3", "2", "1", "0"])
      for (const server of [first, second]) {
        const limited = yield* metadata(server)
        expect(limited.status).toBe(429)
        expect(yield* Effect.promise(() => limited.json())).toMatchObject({ _tag: "TooManyRequests" })
      }
    }))

  it.scoped("when Redis goes away, requests are served unlimited and the log says so once", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const redis = yield* ownRedis(port)
      const server = yield* startServer({
        ...(yield* freshDatabaseEnv),
        REDIS_URL: `redis://127.0.0.1:${port}`,
        RATE_LIMIT_ANONYMOUS_REQUESTS: "100"
      })
      expect((yield* metadata(server)).headers.get("ratelimit")).toMatch(/^"address";r=99;t=\d+$/)
      redis.kill("SIGKILL")
      yield* Effect.promise(() => waitFor(() => redis.exitCode !== null || redis.signalCode !== null, 30_000))
      for (let i = 0; i < 5; i++) {
        const answer = yield* metadata(server)
        expect(answer.status).toBe(200)
        expect(answer.headers.get("ratelimit-policy")).toBe(`"address";q=100;w=60`)
        expect(answer.headers.get("ratelimit")).toBeNull()
      }
      const outage = server.lines.filter((line) => line.includes("Rate limiting is off"))
      expect(outage).toHaveLength(1)
      expect(JSON.parse(outage[0])).toMatchObject({ logLevel: "WARN" })
      // Redis comes back: counting resumes on its own.
      yield* ownRedis(port)
      const resumed = yield* Effect.promise(() =>
        (async () => {
          for (const start = Date.now(); Date.now() - start < 20_000;) {
            const answer = await fetch(`${server.base}/.well-known/oauth-authorization-server`)
            if (answer.headers.get("ratelimit") !== null) return true
            await new Promise((wait) => setTimeout(wait, 250))
          }
          return false
        })()
      )
      expect(resumed).toBe(true)
    }))
})

describe("secrets in logged URLs", () => {
  it.scoped("the access log redacts the values of sensitive query parameters, and keeps the others", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ ...(yield* freshDatabaseEnv), LOG_LEVEL: "INFO" })
      const paths = [
        "/v1/organizations?access_token=plt_SECRET1&limit=5",
        "/nope?refresh_token=plr_SECRET2&state=visible",
        "/.well-known/oauth-authorization-server?code=SECRET3&Client_Secret=SECRET4",
        "/health?password=SECRET5&token=SECRET6&device_code=pld_SECRET7"
      ]
      for (const path of paths) yield* Effect.promise(() => fetch(`${server.base}${path}`).then((r) => r.arrayBuffer()))
      const redacted = [
        "/v1/organizations?access_token=[REDACTED]&limit=5",
        "/nope?refresh_token=[REDACTED]&state=visible",
        "/.well-known/oauth-authorization-server?code=[REDACTED]&Client_Secret=[REDACTED]",
        "/health?password=[REDACTED]&token=[REDACTED]&device_code=[REDACTED]"
      ]
      // Besides these, the log holds the /health requests of the server's start, however many it took.
      const loggedUrls = () =>
        server.lines.filter((line) => line.includes("Sent HTTP response")).map((line) => JSON.parse(line).annotations["http.url"])
      yield* Effect.promise(() => waitFor(() => redacted.every((url) => loggedUrls().includes(url)), 30_000))
      expect(server.lines.join("\n")).not.toContain("SECRET")
      expect(loggedUrls()).toEqual(expect.arrayContaining(redacted))
    }))

  it("error logs quoting a URL are redacted too, whatever the parameter's spelling", () => {
    const line = JSON.stringify({
      message: "Unexpected failure",
      cause: "RequestError: Transport error (GET http://host/v1/x?api_key=k1&x_auth_token=t2&pass%77ord=p3&page=2#f)"
    })
    const redacted = redactSecretsInUrls(line)
    expect(redacted).not.toMatch(/k1|t2|p3/)
    expect(JSON.parse(redacted).cause).toBe(
      "RequestError: Transport error (GET http://host/v1/x?api_key=[REDACTED]&x_auth_token=[REDACTED]&pass%77ord=[REDACTED]&page=2#f)"
    )
  })
})
