import { describe, expect, it, layer } from "@effect/vitest"
import { HttpApi, HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { AddressRateLimit, CallerRateLimit, PostlineApi, TooManyRequests, TransferRateLimit } from "@postline/domain"
import { Cause, ConfigProvider, Context, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import { randomBytes } from "node:crypto"
import { ClientAddress } from "../src/RateLimits/ClientAddress.js"
import { RequestLimits } from "../src/RateLimits/RequestLimits.js"
import { renderOpenApi } from "../scripts/openapi.js"
import { makeTestServer, raw, type RawResponse, signUp } from "./support/TestServer.js"

/** Settings over the environment's, for one test server. */
const withSettings = (settings: Record<string, string>) =>
  Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map(Object.entries(settings))).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  )

const serverWith = (settings: Record<string, string>) =>
  makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(Layer.provide(withSettings(settings)))

const expectTooManyRequests = (response: RawResponse, policy: string) => {
  expect(response.status).toBe(429)
  expect(response.body).toEqual({ _tag: "TooManyRequests", message: expect.stringMatching(/^Too many requests: at most /) })
  const retryAfter = Number(response.headers.get("retry-after"))
  expect(retryAfter).toBeGreaterThan(0)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(response.headers.get("ratelimit")).toBe(`"${policy}";r=0;t=${retryAfter}`)
}

/** The RateLimit field's remaining count. */
const remaining = (response: RawResponse) => Number(/;r=(\d+);/.exec(response.headers.get("ratelimit") ?? "")?.[1])

layer(serverWith({ RATE_LIMIT_REQUESTS: "3", RATE_LIMIT_ANONYMOUS_REQUESTS: "2", RATE_LIMIT_WINDOW_SECONDS: "60" }), {
  excludeTestServices: true
})("rate limits", (it) => {
  it.effect("a token gets its limit, then 429 with Retry-After; every answer carries the RateLimit fields", () =>
    Effect.gen(function*() {
      const { token } = yield* signUp()
      const answers: Array<RawResponse> = []
      for (let i = 0; i < 3; i++) answers.push(yield* raw({ method: "GET", path: "/v1/organizations", token }))
      for (const [i, answer] of answers.entries()) {
        expect(answer.status).toBe(200)
        expect(answer.headers.get("ratelimit-policy")).toBe(`"caller";q=3;w=60`)
        expect(remaining(answer)).toBe(2 - i)
        expect(answer.headers.get("ratelimit")).toMatch(/^"caller";r=\d;t=\d+$/)
      }
      const limited = yield* raw({ method: "GET", path: "/v1/organizations", token })
      expectTooManyRequests(limited, "caller")
      expect(limited.headers.get("ratelimit-policy")).toBe(`"caller";q=3;w=60`)
      expect(limited.body.message).toBe(
        `Too many requests: at most 3 every 60 seconds for each token or API key; try again in ${limited.headers.get("retry-after")} seconds`
      )
      // Another user's token has a count of its own.
      const other = yield* signUp()
      expect((yield* raw({ method: "GET", path: "/v1/organizations", token: other.token })).status).toBe(200)
    }))

  it.effect("an API key is counted on its own, apart from the token of the user who made it", () =>
    Effect.gen(function*() {
      const { client, token } = yield* signUp()
      const organization = yield* client.organizations.createOrganization({ payload: { name: "Limited" } })
      const { key } = yield* client.apiKeys.createApiKey({
        path: { organizationId: organization.id },
        payload: { name: "Script" }
      })
      for (let i = 0; i < 3; i++) expect((yield* raw({ method: "GET", path: "/v1/teams", token: key })).status).toBe(200)
      expectTooManyRequests(yield* raw({ method: "GET", path: "/v1/teams", token: key }), "caller")
      // The user's token spent two of its three on creating the organization and the key.
      expect((yield* raw({ method: "GET", path: "/v1/teams", token })).status).toBe(200)
      expectTooManyRequests(yield* raw({ method: "GET", path: "/v1/teams", token }), "caller")
    }))

  it.effect("over the limit, the body is not read and nothing is written", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { token } = yield* signUp()
      for (let i = 0; i < 3; i++) yield* raw({ method: "GET", path: "/v1/organizations", token })
      const malformed = yield* raw({
        method: "POST",
        path: "/v1/organizations",
        token,
        headers: { "content-type": "application/json" },
        body: "{not json"
      })
      expectTooManyRequests(malformed, "caller")
      const valid = yield* raw({ method: "POST", path: "/v1/organizations", token, json: { name: "Never made" } })
      expectTooManyRequests(valid, "caller")
      expect(yield* sql`SELECT 1 FROM organizations WHERE name = 'Never made'`).toHaveLength(0)
    }))

  it.effect("the typed client knows the error", () =>
    Effect.gen(function*() {
      const { client } = yield* signUp()
      for (let i = 0; i < 3; i++) yield* client.organizations.listOrganizations({ urlParams: {} })
      const error = yield* Effect.flip(client.organizations.listOrganizations({ urlParams: {} }))
      expect(error).toBeInstanceOf(TooManyRequests)
    }))

  it.effect("an invalid token is refused with 401 before it is counted", () =>
    Effect.gen(function*() {
      const refused = yield* raw({ method: "GET", path: "/v1/organizations", token: "plt_nobody" })
      expect(refused.status).toBe(401)
      expect(refused.headers.get("ratelimit")).toBeNull()
    }))
})

// One server per test: the test's requests all come from 127.0.0.1, and the address limit is 2.
const anonymous = { RATE_LIMIT_ANONYMOUS_REQUESTS: "2", RATE_LIMIT_WINDOW_SECONDS: "60" }

layer(serverWith(anonymous), { excludeTestServices: true })("rate limits by address", (it) => {
  it.effect("the device login's endpoints and the approval page count against the client address", () =>
    Effect.gen(function*() {
      const first = yield* raw({ method: "POST", path: "/v1/auth/device/code", body: "client_id=cli", headers: form })
      expect(first.status).toBe(200)
      expect(first.headers.get("ratelimit-policy")).toBe(`"address";q=2;w=60`)
      expect(remaining(first)).toBe(1)
      const poll = yield* raw({ method: "POST", path: "/v1/auth/token", body: "client_id=cli&grant_type=refresh_token&refresh_token=plr_x", headers: form })
      expect(poll.status).toBe(400)
      expect(remaining(poll)).toBe(0)
      expectTooManyRequests(yield* raw({ method: "POST", path: "/v1/auth/revoke", body: "token=plt_x", headers: form }), "address")
      expectTooManyRequests(yield* raw({ method: "GET", path: "/.well-known/oauth-authorization-server" }), "address")
      const page = yield* raw({ method: "GET", path: "/device" })
      expectTooManyRequests(page, "address")
      expect(page.contentType).toBe("application/json")
    }))
})

const form = { "content-type": "application/x-www-form-urlencoded" }

layer(serverWith({ ...anonymous, RATE_LIMIT_TRANSFER_REQUESTS: "2" }), { excludeTestServices: true })("rate limits of signed transfers", (it) => {
  const unknown = "00000000-0000-4000-8000-000000000000"
  const download = raw({ method: "GET", path: `/v1/teams/${unknown}/assets/${unknown}/content?expires=1&signature=x` })
  const put = raw({
    method: "PUT",
    path: `/v1/uploads/${unknown}?expires=1&signature=x`,
    headers: { "content-type": "application/octet-stream" },
    body: "bytes"
  })

  it.effect("a download and a presigned PUT count against the client address, apart from the device login", () =>
    Effect.gen(function*() {
      const first = yield* download
      expect(first.status).not.toBe(429)
      expect(first.headers.get("ratelimit-policy")).toBe(`"transfer";q=2;w=60`)
      expect(remaining(first)).toBe(1)
      const second = yield* put
      expect(second.status).not.toBe(429)
      expect(remaining(second)).toBe(0)
      expectTooManyRequests(yield* download, "transfer")
      const refusedPut = yield* put
      expectTooManyRequests(refusedPut, "transfer")
      expect(refusedPut.body.message).toMatch(/^Too many requests: at most 2 every 60 seconds of signed downloads and uploads from each address/)
      // The device login's endpoints keep their own count.
      const metadata = yield* raw({ method: "GET", path: "/.well-known/oauth-authorization-server" })
      expect(metadata.status).toBe(200)
      expect(metadata.headers.get("ratelimit-policy")).toBe(`"address";q=2;w=60`)
    }))

  it.effect("Stripe's webhook is not limited: never 429, no RateLimit fields", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 4; i++) {
        const answer = yield* raw({ method: "POST", path: "/v1/billing/webhooks/stripe", json: { id: "evt_1", type: "ping" } })
        expect(answer.status).not.toBe(429)
        expect(answer.headers.get("ratelimit-policy")).toBeNull()
      }
    }))
})

const fromProxy = (forwardedFor: string) =>
  raw({ method: "GET", path: "/.well-known/oauth-authorization-server", headers: { "x-forwarded-for": forwardedFor } })

layer(serverWith({ ...anonymous, TRUSTED_PROXIES: "127.0.0.1, ::1" }), { excludeTestServices: true })(
  "behind a trusted proxy",
  (it) => {
    it.effect("X-Forwarded-For names the client: each has a count of its own", () =>
      Effect.gen(function*() {
        expect((yield* fromProxy("203.0.113.1")).status).toBe(200)
        expect((yield* fromProxy("203.0.113.1")).status).toBe(200)
        expectTooManyRequests(yield* fromProxy("203.0.113.1"), "address")
        // What the client wrote before the proxy's hop is not believed.
        expectTooManyRequests(yield* fromProxy("198.51.100.9, 203.0.113.1"), "address")
        expect((yield* fromProxy("203.0.113.2")).status).toBe(200)
      }))
  }
)

layer(serverWith(anonymous), { excludeTestServices: true })("without trusted proxies", (it) => {
  it.effect("X-Forwarded-For is ignored: the connection's address is counted", () =>
    Effect.gen(function*() {
      expect((yield* fromProxy("203.0.113.1")).status).toBe(200)
      expect((yield* fromProxy("203.0.113.2")).status).toBe(200)
      expectTooManyRequests(yield* fromProxy("203.0.113.3"), "address")
    }))
})

describe("the client address", () => {
  const request = (remoteAddress: string, forwardedFor?: string) =>
    ({
      remoteAddress: Option.some(remoteAddress),
      headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }
    }) as unknown as HttpServerRequest.HttpServerRequest

  const addressOf = (trusted: string | undefined, remote: string, forwardedFor?: string) =>
    Effect.map(ClientAddress, (address) => address.of(request(remote, forwardedFor))).pipe(
      Effect.provide(ClientAddress.Default),
      Effect.provide(withSettings(trusted === undefined ? {} : { TRUSTED_PROXIES: trusted })),
      Effect.runSync
    )

  it("believes X-Forwarded-For from trusted proxies only, back to the first hop none vouches for", () => {
    expect(addressOf(undefined, "10.0.0.1", "203.0.113.1")).toBe("10.0.0.1")
    expect(addressOf("10.0.0.0/8", "10.0.0.1", "203.0.113.1")).toBe("203.0.113.1")
    expect(addressOf("10.0.0.0/8", "10.0.0.1", "198.51.100.9, 203.0.113.1, 10.1.2.3")).toBe("203.0.113.1")
    expect(addressOf("10.0.0.0/8", "192.0.2.1", "203.0.113.1")).toBe("192.0.2.1")
    expect(addressOf("10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1")).toBe("2001:db8::1")
    expect(addressOf("10.0.0.1", "10.0.0.1", "not-an-address")).toBe("10.0.0.1")
    expect(addressOf("10.0.0.1", "10.0.0.1")).toBe("10.0.0.1")
  })

  it("refuses a setting that is no address or range", () => {
    expect(() => addressOf("10.0.0.0/33", "10.0.0.1")).toThrow(/TRUSTED_PROXIES: 10.0.0.0\/33 is not an address or CIDR range/)
    expect(() => addressOf("proxy.local", "10.0.0.1")).toThrow(/TRUSTED_PROXIES/)
  })
})

describe("the OpenAPI document", () => {
  it("declares 429 TooManyRequests exactly on the operations that a rate limit counts", () => {
    const spec = JSON.parse(renderOpenApi())
    const rateLimits: ReadonlyArray<unknown> = [CallerRateLimit, AddressRateLimit, TransferRateLimit]
    const declared: Array<[string, boolean]> = []
    const counted: Array<[string, boolean]> = []
    HttpApi.reflect(PostlineApi, {
      onGroup() {},
      onEndpoint({ endpoint, middleware }) {
        const operation = `${endpoint.method} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`
        const [method, path] = [endpoint.method.toLowerCase(), endpoint.path.replace(/:(\w+)/g, "{$1}")]
        declared.push([operation, spec.paths[path][method].responses[429] !== undefined])
        counted.push([operation, [...middleware].some((tag) => rateLimits.includes(tag))])
      }
    })
    expect(declared).toEqual(counted)
    for (const operation of ["GET /v1/teams/{teamId}/assets/{assetId}/content", "PUT /v1/uploads/{uploadId}"]) {
      expect(counted).toContainEqual([operation, true])
    }
    for (const operation of ["POST /v1/billing/webhooks/stripe", "GET /health"]) expect(counted).toContainEqual([operation, false])
  })

  it("declares 429 TooManyRequests on the API's operations and the device login's", () => {
    const spec = JSON.parse(renderOpenApi())
    for (const [path, method] of [["/v1/organizations", "get"], ["/v1/auth/token", "post"], ["/.well-known/oauth-authorization-server", "get"]]) {
      expect(spec.paths[path][method].responses[429].content["application/json"].schema, path).toEqual({
        $ref: "#/components/schemas/TooManyRequests"
      })
    }
  })
})

describe("rate limit settings", () => {
  const startWith = (settings: Record<string, string>) =>
    Effect.runSyncExit(Effect.scoped(Layer.build(RequestLimits.Default.pipe(Layer.provide(withSettings(settings))))))

  const failureOf = (settings: Record<string, string>) => {
    const exit = startWith(settings)
    expect(Exit.isFailure(exit)).toBe(true)
    return Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
  }

  it("refuses a REDIS_URL that is no redis:// URL, without repeating it", () => {
    const message = failureOf({ REDIS_URL: "http://user:hunter2@cache.local:6379" })
    expect(message).toContain("REDIS_URL must be a redis:// or rediss:// URL")
    expect(message).not.toContain("hunter2")
  })

  it("refuses limits that are not positive integers", () => {
    expect(failureOf({ RATE_LIMIT_REQUESTS: "0" })).toContain("RATE_LIMIT_REQUESTS must be a positive integer")
    expect(failureOf({ RATE_LIMIT_WINDOW_SECONDS: "-5" })).toContain("RATE_LIMIT_WINDOW_SECONDS must be a positive integer")
    expect(Exit.isSuccess(startWith({}))).toBe(true)
  })
})

describe("rate limits in Redis", () => {
  // Redis stores a count's life in whole milliseconds: 60 s / 7 requests is not one.
  it.scoped("hold for limits that do not divide the window", () =>
    Effect.gen(function*() {
      const settings = withSettings({
        REDIS_URL: process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
        REDIS_KEY_PREFIX: `postline-test:${randomBytes(8).toString("hex")}:`,
        RATE_LIMIT_ANONYMOUS_REQUESTS: "7"
      })
      const limits = yield* Layer.build(RequestLimits.Default.pipe(Layer.provide(settings)))
      const count = Context.get(limits, RequestLimits).count("address", "192.0.2.7")
      for (let i = 0; i < 7; i++) yield* count
      const refused = yield* Effect.flip(count)
      expect(refused).toBeInstanceOf(TooManyRequests)
      expect(refused.message).toMatch(/^Too many requests: at most 7 every 60 seconds from each address; try again in \d+ seconds$/)
    }))
})
