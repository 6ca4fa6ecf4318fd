import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Stream } from "effect"
import { readFileSync } from "node:fs"
import type { Resolver } from "../../src/Outbound/AddressChecks.js"
import { reservedRange } from "../../src/Outbound/Addresses.js"
import { configuredOutbound, Outbound } from "../../src/Outbound/Outbound.js"
import { retryAfterSeconds } from "../../src/Outbound/RetryAfter.js"
import { makeLocalServer } from "../support/LocalServer.js"

// No test connects anywhere but 127.0.0.1: public addresses appear only where no connection is made.
const outbound = (options: Partial<Parameters<typeof Outbound.Default>[0]> = {}) =>
  Layer.build(Outbound.Default({ allowPrivate: false, ...options })).pipe(Effect.map(Context.get(Outbound)))

const resolvingTo = (...addresses: ReadonlyArray<string>): Resolver => async () =>
  addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))

describe("reservedRange", () => {
  it("names every reserved IPv4 and IPv6 range, IPv4 inside IPv6 included", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["0.0.0.0", "unspecified"],
      ["10.1.2.3", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["192.168.1.1", "private"],
      ["100.64.0.1", "CGNAT"],
      ["100.127.255.254", "CGNAT"],
      ["127.0.0.1", "loopback"],
      ["127.255.255.254", "loopback"],
      ["169.254.169.254", "link-local"],
      ["192.0.0.8", "IETF protocol assignments"],
      ["192.0.2.1", "documentation"],
      ["198.51.100.7", "documentation"],
      ["203.0.113.9", "documentation"],
      ["198.18.0.1", "benchmarking"],
      ["192.88.99.1", "6to4 relay"],
      ["224.0.0.251", "multicast"],
      ["239.255.255.250", "multicast"],
      ["240.0.0.1", "reserved"],
      ["255.255.255.255", "reserved"],
      ["::", "unspecified"],
      ["::1", "loopback"],
      ["::ffff:127.0.0.1", "loopback (IPv4-mapped)"],
      ["::ffff:7f00:1", "loopback (IPv4-mapped)"],
      ["::ffff:10.0.0.1", "private (IPv4-mapped)"],
      ["::ffff:169.254.169.254", "link-local (IPv4-mapped)"],
      ["::ffff:0.0.0.0", "unspecified (IPv4-mapped)"],
      ["64:ff9b::127.0.0.1", "loopback (NAT64)"],
      ["64:ff9b:1::1", "NAT64 local-use"],
      ["::127.0.0.1", "IPv4-compatible"],
      ["fc00::1", "unique local"],
      ["fd12:3456:789a::1", "unique local"],
      ["fe80::1", "link-local"],
      ["fe80::1%eth0", "link-local"],
      ["fec0::1", "site-local"],
      ["ff02::1", "multicast"],
      ["2001:db8::1", "documentation"],
      ["2001::1", "Teredo"],
      ["2002:7f00:1::", "6to4"],
      ["100::1", "discard-only"],
      ["4000::1", "not global unicast"],
      ["localhost", "not an IP address"]
    ]
    for (const [address, range] of cases) expect(reservedRange(address), address).toContain(range)
    for (const address of ["8.8.8.8", "1.1.1.1", "100.128.0.1", "172.32.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8"]) {
      expect(reservedRange(address), address).toBeUndefined()
    }
  })
})

describe("Outbound", () => {
  it.scopedLive("refuses other schemes than https, and reserved addresses written literally, before any connection", () =>
    Effect.gen(function*() {
      const client = yield* outbound()
      const refusal = (url: string) => client.request(url).pipe(Effect.flip)
      expect(yield* refusal("http://example.com/")).toMatchObject({
        reason: "invalid_url",
        message: "example.com: only https addresses are allowed (the server's operator can allow http with OUTBOUND_ALLOW_PRIVATE=true)"
      })
      expect(yield* refusal("ftp://example.com/")).toMatchObject({ reason: "invalid_url" })
      expect(yield* refusal("not a url")).toMatchObject({ reason: "invalid_url" })
      for (
        const [url, range] of [
          ["https://127.0.0.1/", "loopback"],
          ["https://2130706433/", "loopback"], // the URL parser reads this as 127.0.0.1
          ["https://0.0.0.0/", "unspecified"],
          ["https://[::]/", "unspecified"],
          ["https://[::1]:8443/", "loopback"],
          ["https://[::ffff:127.0.0.1]/", "loopback (IPv4-mapped)"],
          ["https://169.254.169.254/latest/meta-data/", "link-local"],
          ["https://10.0.0.1/", "private"],
          ["https://100.64.1.1/", "CGNAT"],
          ["https://224.0.0.1/", "multicast"],
          ["https://[fd00::1]/", "unique local"]
        ]
      ) {
        const error = yield* refusal(url)
        expect(error.reason, url).toBe("refused_address")
        expect(error.message, url).toContain(range)
        // The message names the host only: the path or query of a user's URL may hold a secret.
        expect(error.message).not.toContain("meta-data")
      }
    }))

  it.scopedLive("refuses an address with a user name or password, saying so, in a check, a request and a fetch", () =>
    Effect.gen(function*() {
      const url = yield* makeLocalServer((_request, response) => response.end("ok"))
      const client = yield* outbound({ allowPrivate: true })
      const withUserInfo = url.replace("://", "://hook-user:s3cret-pw@")
      const refusals = [
        yield* client.check(withUserInfo).pipe(Effect.flip),
        yield* client.request(withUserInfo, { method: "POST", body: "{}" }).pipe(Effect.flip),
        yield* Effect.promise(() => client.fetch(withUserInfo).then(() => undefined, (error) => error)),
        yield* Effect.promise(() => client.fetch(new URL(url.replace("://", "://hook-user@"))).then(() => undefined, (error) => error))
      ]
      for (const refusal of refusals) {
        expect(refusal).toMatchObject({
          _tag: "OutboundError",
          reason: "invalid_url",
          message: `${new URL(url).host}: an address with a user name or password is refused`
        })
      }
    }))

  it.scopedLive("checks every address a name resolves to, at connect time, on every request", () =>
    Effect.gen(function*() {
      let calls = 0
      const resolve: Resolver = async (hostname) => {
        calls += 1
        return resolvingTo(...(hostname === "mixed.example" ? ["192.0.2.10", "8.8.8.8"] : ["10.0.0.5"]))(hostname)
      }
      const client = yield* outbound({ resolve })
      const error = yield* client.request("https://internal.example/hook").pipe(Effect.flip)
      expect(error).toMatchObject({
        reason: "refused_address",
        message: "internal.example is refused: 10.0.0.5 is a private address " +
          "(the server's operator can allow such addresses with OUTBOUND_ALLOW_PRIVATE=true)"
      })
      expect(calls).toBe(1)
      yield* client.request("https://internal.example/hook").pipe(Effect.flip)
      expect(calls).toBe(2)
      // One bad address among good ones is enough to refuse.
      expect(yield* client.check("https://mixed.example/").pipe(Effect.flip)).toMatchObject({ reason: "refused_address" })
      expect(yield* client.check("https://internal.example/").pipe(Effect.flip)).toMatchObject({ reason: "refused_address" })
      const mapped = yield* outbound({ resolve: resolvingTo("::ffff:127.0.0.1") })
      expect(yield* mapped.request("https://sneaky.example/").pipe(Effect.flip)).toMatchObject({ reason: "refused_address" })
    }))

  it.scopedLive("a name that rebinds after the check is refused when the request connects", () =>
    Effect.gen(function*() {
      let answers = 0
      // Public the first time (the check makes no connection), then loopback.
      const rebinding: Resolver = async () => resolvingTo((answers++ === 0) ? "8.8.8.8" : "127.0.0.1")("rebind.example")
      const client = yield* outbound({ resolve: rebinding })
      yield* client.check("https://rebind.example/")
      expect(yield* client.request("https://rebind.example/").pipe(Effect.flip)).toMatchObject({
        reason: "refused_address",
        message: "rebind.example is refused: 127.0.0.1 is a loopback address " +
          "(the server's operator can allow such addresses with OUTBOUND_ALLOW_PRIVATE=true)"
      })
    }))

  it.scopedLive("connects to the address it resolved and checked, not one of its own", () =>
    Effect.gen(function*() {
      const url = yield* makeLocalServer((request, response) => response.end(`hello ${request.headers.host}`))
      const port = new URL(url).port
      const client = yield* outbound({ allowPrivate: true, resolve: resolvingTo("127.0.0.1") })
      // No DNS server knows this name: the connection can only have gone to the resolver's answer.
      const response = yield* client.request(`http://postline-test.invalid:${port}/`)
      expect(response.status).toBe(200)
      expect(new TextDecoder().decode(response.body)).toBe(`hello postline-test.invalid:${port}`)
    }))

  it.scopedLive("does not follow redirects, caps the answer's size and times out", () =>
    Effect.gen(function*() {
      const url = yield* makeLocalServer((request, response) => {
        if (request.url === "/redirect") return response.writeHead(302, { location: "http://169.254.169.254/" }).end()
        if (request.url === "/large") return response.end("x".repeat(2048))
        if (request.url === "/large-chunked") {
          response.write("x".repeat(1000))
          return setTimeout(() => response.end("x".repeat(1000)), 10)
        }
        if (request.url === "/slow") return setTimeout(() => response.end("late"), 2000)
        response.end("ok")
      })
      const client = yield* outbound({ allowPrivate: true, maxResponseBytes: 1024, totalTimeoutMillis: 300 })
      expect(yield* client.request(`${url}/redirect`).pipe(Effect.flip)).toMatchObject({
        reason: "redirect",
        message: expect.stringContaining("302")
      })
      expect(yield* client.request(`${url}/large`).pipe(Effect.flip)).toMatchObject({ reason: "too_large" })
      expect(yield* client.request(`${url}/large-chunked`).pipe(Effect.flip)).toMatchObject({ reason: "too_large" })
      expect(yield* client.request(`${url}/slow`).pipe(Effect.flip)).toMatchObject({ reason: "timeout" })
      expect(yield* client.request("http://127.0.0.1:1/").pipe(Effect.flip)).toMatchObject({ reason: "network" })
      expect((yield* client.request(`${url}/`)).status).toBe(200)
    }))

  it.scopedLive("offers a fetch for client libraries, with the same checks", () =>
    Effect.gen(function*() {
      const url = yield* makeLocalServer((request, response) => {
        let body = ""
        request.on("data", (chunk) => body += chunk)
        request.on("end", () => response.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ got: body })))
      })
      const guarded = yield* outbound()
      const refused = yield* Effect.promise(() => guarded.fetch(`${url}/`).then(() => undefined, (error) => error))
      expect(refused).toMatchObject({ _tag: "OutboundError", reason: "invalid_url" })

      const client = yield* outbound({ allowPrivate: true })
      const response = yield* Effect.promise(() => client.fetch(new Request(`${url}/x`, { method: "POST", body: "ping" })))
      expect(response.status).toBe(201)
      expect(yield* Effect.promise(() => response.json())).toEqual({ got: "ping" })
    }))
})

describe("Outbound's User-Agent", () => {
  // What the server logs at start (src/StartupLog.ts) and the build writes into the bundle.
  const version = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version

  const recordingUserAgents = Effect.gen(function*() {
    const seen: Array<string | undefined> = []
    const url = yield* makeLocalServer((request, response) => {
      seen.push(request.headers["user-agent"])
      response.end("ok")
    })
    return { seen, url }
  })

  it.scopedLive("names Postline on every kind of call, over what the caller set", () =>
    Effect.gen(function*() {
      const { seen, url } = yield* recordingUserAgents
      const client = yield* outbound({ allowPrivate: true, userAgent: "Postline/9.9.9 (+https://postline.example)" })
      yield* client.request(url)
      yield* client.request(url, { method: "POST", body: "{}", headers: { "user-agent": "some-library/1.0" } })
      yield* Effect.promise(() => client.fetch(url, { headers: { "User-Agent": "undici" } }))
      yield* Effect.scoped(Effect.flatMap(client.stream(url), ({ body }) => Stream.runDrain(body)))
      expect(seen).toEqual(Array(4).fill("Postline/9.9.9 (+https://postline.example)"))
    }))

  it.scopedLive("is Postline/<version> (+<PUBLIC_URL>) as configured, and Postline/<version> without PUBLIC_URL", () =>
    Effect.gen(function*() {
      const { seen, url } = yield* recordingUserAgents
      for (const env of [{ PUBLIC_URL: "https://postline.example.com/" }, {}]) {
        const client = yield* Layer.build(configuredOutbound(5_000)).pipe(
          Effect.map(Context.get(Outbound)),
          Effect.withConfigProvider(ConfigProvider.fromJson({ OUTBOUND_ALLOW_PRIVATE: "true", ...env }))
        )
        yield* client.request(url)
      }
      expect(seen).toEqual([`Postline/${version} (+https://postline.example.com)`, `Postline/${version}`])
    }))
})

describe("retryAfterSeconds", () => {
  const now = new Date("2026-11-23T10:00:00Z")
  const headers = (values: Record<string, string>) => (name: string) => values[name]

  it("reads Retry-After in seconds or as an HTTP date, then RateLimit-Reset, then Mastodon's X-RateLimit-Reset", () => {
    expect(retryAfterSeconds(headers({ "retry-after": "30" }), now)).toBe(30)
    expect(retryAfterSeconds(headers({ "retry-after": "Mon, 23 Nov 2026 10:02:00 GMT" }), now)).toBe(120)
    expect(retryAfterSeconds(headers({ "retry-after": "Mon, 23 Nov 2026 09:00:00 GMT" }), now)).toBe(0)
    expect(retryAfterSeconds(headers({ "ratelimit-reset": String(now.getTime() / 1000 + 90) }), now)).toBe(90)
    expect(retryAfterSeconds(headers({ "ratelimit-reset": "45" }), now)).toBe(45)
    expect(retryAfterSeconds(headers({ "x-ratelimit-reset": "2026-11-23T10:05:00.000000Z" }), now)).toBe(300)
    expect(retryAfterSeconds(headers({ "retry-after": "10", "ratelimit-reset": "45" }), now)).toBe(10)
    expect(retryAfterSeconds(headers({ "retry-after": "soon" }), now)).toBeUndefined()
    expect(retryAfterSeconds(headers({}), now)).toBeUndefined()
  })
})
