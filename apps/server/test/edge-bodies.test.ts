import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { maxBodyBytes } from "../src/Http/RequestBody.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const json = "application/json"
const form = "application/x-www-form-urlencoded"

interface Target {
  readonly path: string
  readonly contentType: string
  /** Whether the caller's token goes along: the authenticated API answers 401 before reading a body. */
  readonly authenticated?: boolean
}

/** Every way a body comes in: the API's JSON, the OAuth endpoints' JSON and forms, the approval page's form. */
const targets: ReadonlyArray<Target> = [
  { path: "/v1/organizations", contentType: json, authenticated: true },
  { path: "/v1/auth/device/code", contentType: json },
  { path: "/v1/auth/device/code", contentType: form },
  { path: "/v1/auth/token", contentType: form },
  { path: "/v1/auth/token", contentType: json },
  { path: "/v1/auth/revoke", contentType: form },
  { path: "/v1/auth/revoke", contentType: json },
  { path: "/device", contentType: form }
]

/** A body of exactly `bytes` bytes, of the target's content type. */
const bodyOf = (contentType: string, bytes: number) => {
  const frame = contentType === json ? ["{\"name\":\"", "\"}"] : ["client_id=", ""]
  return Buffer.from(frame[0] + "x".repeat(bytes - frame[0]!.length - frame[1]!.length) + frame[1])
}

/** Sent in 64 KiB chunks without a Content-Length, so that the server learns the size only by reading. */
const chunked = (bytes: Buffer) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 65_536) controller.enqueue(bytes.subarray(at, at + 65_536))
      controller.close()
    }
  })

const send = (target: Target, body: Buffer, options: { readonly token?: string; readonly chunked?: boolean }) =>
  Effect.gen(function*() {
    const { port } = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
    const headers: Record<string, string> = { "content-type": target.contentType }
    if (target.authenticated && options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    return yield* Effect.promise(async () => {
      const response = await fetch(`http://127.0.0.1:${port}${target.path}`, {
        method: "POST",
        headers,
        body: options.chunked ? chunked(body) : body,
        duplex: "half"
      } as RequestInit)
      const text = await response.text()
      const isJson = response.headers.get("content-type")?.startsWith(json) ?? false
      return { status: response.status, connection: response.headers.get("connection"), body: isJson ? JSON.parse(text) : text }
    })
  })

const tooLarge = { _tag: "BadRequest", reason: "body_too_large", message: `The request body must not exceed ${maxBodyBytes} bytes` }
const notUtf8 = { _tag: "BadRequest", reason: "body_not_utf8", message: "The request body is not valid UTF-8" }
const formNotUtf8 = { _tag: "BadRequest", reason: "body_not_utf8", message: "The form's percent-encoded bytes are not valid UTF-8" }

const describeTarget = (target: Target, how: string) => `${target.path} (${target.contentType}, ${how})`

layer(TestServer, { excludeTestServices: true })("bodies at the edge", (it) => {
  it.effect("over 1 MiB: the same 400 on every route, with or without a Content-Length, and the connection closed", () =>
    Effect.gen(function*() {
      const { token } = yield* signUp()
      for (const target of targets) {
        for (const isChunked of [false, true]) {
          const how = isChunked ? "chunked" : "Content-Length"
          const atTheLimit = yield* send(target, bodyOf(target.contentType, maxBodyBytes), { token, chunked: isChunked })
          expect(atTheLimit.body, describeTarget(target, how)).not.toEqual(tooLarge)
          for (const bytes of [maxBodyBytes + 1, 8 * maxBodyBytes]) {
            const answer = yield* send(target, bodyOf(target.contentType, bytes), { token, chunked: isChunked })
            expect(answer, `${describeTarget(target, how)}, ${bytes} bytes`).toEqual({
              status: 400,
              connection: "close",
              body: tooLarge
            })
          }
        }
      }
    }))

  it.effect("a body that is not UTF-8: 400 on every route, raw or percent-encoded in a form", () =>
    Effect.gen(function*() {
      const { token } = yield* signUp()
      for (const target of targets) {
        const raw = Buffer.concat([bodyOf(target.contentType, 20).subarray(0, -2), Buffer.of(0xff, 0x22, 0x7d)])
        const body = target.contentType === json ? raw : Buffer.from("client_id=caf\xff", "latin1")
        expect(yield* send(target, body, { token }), describeTarget(target, "raw 0xFF")).toEqual({
          status: 400,
          connection: "keep-alive",
          body: notUtf8
        })
        if (target.contentType === form) {
          for (const encoded of ["client_id=%FF", "client_id=caf%C3", "%ED%A0%80=x", "client_id=%C0%AF"]) {
            expect(yield* send(target, Buffer.from(encoded), { token }), `${describeTarget(target, encoded)}`).toEqual({
              status: 400,
              connection: "keep-alive",
              body: formNotUtf8
            })
          }
        }
      }
      // A `%` without two hex digits stays as written, as in URLSearchParams; UTF-8 that is encoded passes.
      for (const body of ["client_id=100%", "client_id=cli&state=caf%C3%A9+100%25+%zz"]) {
        const answer = yield* send({ path: "/v1/auth/device/code", contentType: form }, Buffer.from(body), {})
        expect(answer.status, body).toBe(200)
      }
    }))

  it.effect("every unknown query parameter is 400, whatever its name; where none are read, all are ignored", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      for (const name of ["other", "__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "__proto__[limit]"]) {
        for (const query of [`${name}=1`, `${name}=1&${name}=2`, `limit=5&${encodeURIComponent(name)}=1`]) {
          const listed = yield* raw({ method: "GET", path: `/v1/organizations?${query}`, token: alice.token })
          expect(listed.status, query).toBe(400)
          expect(listed.body._tag, query).toBe("HttpApiDecodeError")
          expect(listed.body.issues, query).toEqual([{ path: [name], message: expect.stringMatching(/^is unexpected/) }])
          const health = yield* raw({ method: "GET", path: `/health?${query}` })
          expect(health.status, query).toBe(200)
        }
      }
    }))

  it.effect("a body's own keys never become a prototype: `__proto__` is a key like any other", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const created = yield* raw({
        method: "POST",
        path: "/v1/organizations",
        token: alice.token,
        body: `{"__proto__":{"name":"Acme"}}`,
        headers: { "content-type": json }
      })
      expect(created.status).toBe(400)
      expect(created.body.issues.map((issue: { path: Array<string> }) => issue.path).sort()).toEqual([["__proto__"], ["name"]])
      for (const [contentType, body] of [[json, `{"__proto__":{"client_id":"cli"}}`], [form, "__proto__=cli"]] as const) {
        const code = yield* raw({ method: "POST", path: "/v1/auth/device/code", body, headers: { "content-type": contentType } })
        expect(code.status, contentType).toBe(400)
        expect(code.body, contentType).toMatchObject({ _tag: "OAuthError", error: "invalid_request" })
      }
    }))
})
