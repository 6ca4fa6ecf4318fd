import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { HttpServer } from "@effect/platform"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { request } from "node:http"
import { openApiPath } from "../scripts/openapi.js"
import { hashSecret } from "../src/Users/Secrets.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const errorBody = (tag: string) => ({ _tag: tag, message: expect.any(String) })

/** A request with any method, TRACE included (fetch refuses to send it), its body read as JSON. */
const anyMethod = (method: string, path: string, token?: string) =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    Effect.async<{ status: number; headers: Record<string, string | Array<string> | undefined>; body: unknown }>((resume) => {
      const { port } = server.address as HttpServer.TcpAddress
      const headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
      request({ host: "127.0.0.1", port, method, path, headers }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () =>
          resume(Effect.succeed({
            status: response.statusCode!,
            headers: response.headers,
            body: JSON.parse(Buffer.concat(chunks).toString())
          })))
      }).end()
    }))

layer(TestServer, { excludeTestServices: true })("errors and authentication", (it) => {
  describe("authentication", () => {
    it.effect("accepts the Bearer scheme in any case", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
          const response = yield* raw({
            method: "GET",
            path: "/v1/organizations",
            headers: { authorization: `${scheme} ${alice.token}` }
          })
          expect(response.status, scheme).toBe(200)
        }
      }))

    it.effect.each([
      ["no header", undefined],
      ["an empty header", ""],
      ["another scheme", "Basic dXNlcjpwYXNz"],
      ["a scheme of 7 characters with the token", "Token: TOKEN"],
      ["the token without a scheme", "TOKEN"],
      ["the scheme without a token", "Bearer "],
      ["an unknown token", "Bearer plt_unknown"],
      ["the token with a character changed", "Bearer CHANGED"],
      ["two tokens", "Bearer TOKEN TOKEN"]
    ])("answers %s with 401 Unauthorized on every endpoint", ([, template]) =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const team = yield* alice.client.teams.createTeam({ payload: { organizationId: org.id, name: "Team" } })
        const authorization = template?.replaceAll("TOKEN", alice.token).replace(
          "CHANGED",
          alice.token.slice(0, -1) + (alice.token.endsWith("A") ? "B" : "A")
        )
        const headers: Record<string, string> = authorization === undefined ? {} : { authorization }
        for (
          const [method, path, json] of [
            ["GET", "/v1/organizations", undefined],
            ["POST", "/v1/organizations", { name: "Other" }],
            ["GET", `/v1/organizations/${org.id}`, undefined],
            ["PATCH", `/v1/organizations/${org.id}`, { name: "Hacked" }],
            ["GET", "/v1/teams", undefined],
            ["POST", "/v1/teams", { organizationId: org.id, name: "Other" }],
            ["GET", `/v1/teams/${team.id}`, undefined],
            ["PATCH", `/v1/teams/${team.id}`, { name: "Hacked" }]
          ] as const
        ) {
          const response = yield* raw({ method, path, headers, json })
          expect(response.status, `${method} ${path}`).toBe(401)
          expect(response.body).toEqual(errorBody("Unauthorized"))
          expect(response.headers.get("www-authenticate")).toBe(`Bearer realm="postline"`)
        }
        const after = yield* alice.client.organizations.listOrganizations({ urlParams: {} })
        expect(after.data.map((o) => o.name)).toEqual(["Acme"])
      }))

    it.effect("answers 401 before looking at the request: bad bodies and ids still give 401", () =>
      Effect.gen(function*() {
        const malformed = yield* raw({ method: "POST", path: "/v1/organizations", body: "{", headers: { "content-type": "application/json" } })
        expect(malformed.status).toBe(401)
        const badId = yield* raw({ method: "GET", path: "/v1/organizations/not-a-uuid" })
        expect(badId.status).toBe(401)
      }))

    it.effect("stores tokens only as SHA-256 hashes", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        expect(alice.token).toMatch(/^plt_[A-Za-z0-9_-]{43}$/)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ tokenHash: string }>`SELECT token_hash AS "tokenHash" FROM access_tokens WHERE user_id = ${alice.user.id}`
        expect(rows).toEqual([{ tokenHash: hashSecret(alice.token) }])
        const leaked = yield* sql`SELECT 1 FROM access_tokens WHERE token_hash = ${alice.token}`
        expect(leaked).toEqual([])
      }))
  })

  describe("request bodies", () => {
    it.effect("answers malformed JSON with 400 BadRequest and writes nothing", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        for (const body of ["{", "{\"name\": \"Acme\"", "name=Acme", "{\"name\": \"Acme\"}}"]) {
          const response = yield* raw({
            method: "POST",
            path: "/v1/organizations",
            token: alice.token,
            body,
            headers: { "content-type": "application/json" }
          })
          expect(response.status, body).toBe(400)
          expect(response.contentType).toMatch(/^application\/json/)
          expect(response.body, body).toEqual({ _tag: "BadRequest", reason: "invalid_json", message: "The request body is not valid JSON" })
        }
        expect((yield* alice.client.organizations.listOrganizations({ urlParams: {} })).total).toBe(0)
      }))

    it.effect("answers an empty body or JSON that is not an object with 400 HttpApiDecodeError", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        for (const body of ["", "[]", "\"Acme\"", "42", "null"]) {
          const response = yield* raw({
            method: "POST",
            path: "/v1/organizations",
            token: alice.token,
            body,
            headers: { "content-type": "application/json" }
          })
          expect(response.status, body).toBe(400)
          expect(response.body, body).toEqual({
            _tag: "HttpApiDecodeError",
            message: "Invalid request: body: must be a JSON object",
            issues: [{ path: [], message: "must be a JSON object" }]
          })
        }
      }))

    it.effect("answers a missing or non-JSON content type with 400 BadRequest", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        for (
          const contentType of [
            undefined,
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "application/vnd.api+json",
            "application/jsonx"
          ]
        ) {
          const response = yield* raw({
            method: "POST",
            path: "/v1/organizations",
            token: alice.token,
            body: JSON.stringify({ name: "Acme" }),
            headers: contentType === undefined ? {} : { "content-type": contentType }
          })
          expect(response.status, contentType).toBe(400)
          expect(response.body, contentType).toEqual({
            _tag: "BadRequest",
            reason: "wrong_content_type",
            message: "The request body must be JSON: send `Content-Type: application/json`"
          })
        }
        const withCharset = yield* raw({
          method: "POST",
          path: "/v1/organizations",
          token: alice.token,
          body: JSON.stringify({ name: "Acme" }),
          headers: { "content-type": "application/json; charset=utf-8" }
        })
        expect(withCharset.status).toBe(201)
        expect((yield* alice.client.organizations.listOrganizations({ urlParams: {} })).total).toBe(1)
        const patch = yield* raw({
          method: "PATCH",
          path: `/v1/organizations/${withCharset.body.id}`,
          token: alice.token,
          body: JSON.stringify({ name: "Other" }),
          headers: { "content-type": "text/plain" }
        })
        expect(patch.status).toBe(400)
        expect(patch.body._tag).toBe("BadRequest")
      }))

    it.effect("refuses a body larger than 1 MiB with 400 BadRequest", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const response = yield* raw({
          method: "POST",
          path: "/v1/organizations",
          token: alice.token,
          json: { name: "Acme", padding: "x".repeat(1024 * 1024) }
        })
        expect(response.status).toBe(400)
        expect(response.body).toEqual({ _tag: "BadRequest", reason: "body_too_large", message: "The request body must not exceed 1048576 bytes" })
      }))

    it.effect("reports every issue, with string paths and a one-line message free of schema names", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const response = yield* raw({
          method: "PATCH",
          path: `/v1/organizations/${org.id}`,
          token: alice.token,
          json: {
            name: "x",
            unknown: true,
            onboardingData: {
              version: 1,
              status: "completed",
              currentStep: "completed",
              completedSteps: ["goals", "bogus"]
            }
          }
        })
        expect(response.status).toBe(400)
        expect(Object.keys(response.body).sort()).toEqual(["_tag", "issues", "message"])
        expect(response.body._tag).toBe("HttpApiDecodeError")
        expect(response.body.issues).toEqual([
          { path: ["unknown"], message: expect.stringContaining("unexpected") },
          { path: ["name"], message: "must be a string of 2 to 64 characters, not blank" },
          {
            path: ["onboardingData", "completedSteps", "1"],
            message: expect.stringMatching(/^must be one of organization_profile, /)
          }
        ].sort((a, b) => response.body.issues.findIndex((i: any) => i.path.join() === a.path.join()) -
          response.body.issues.findIndex((i: any) => i.path.join() === b.path.join())))
        for (const issue of response.body.issues) {
          expect(Object.keys(issue).sort()).toEqual(["message", "path"])
          for (const key of issue.path) expect(typeof key).toBe("string")
        }
        expect(response.body.message).not.toContain("\n")
        expect(response.body.message).toMatch(/^Invalid request: /)
        expect(response.body.message).not.toMatch(/UpdateOrganization|OnboardingData|Struct|Union|readonly/)
      }))
  })

  describe("routes", () => {
    it.effect.each([
      ["POST", "/docs/unknown"],
      ["GET", "/v1"],
      ["GET", "/v1/unknown"],
      ["DELETE", "/v1/organizations/00000000-0000-0000-0000-000000000000/unknown"],
      ["PUT", "/v1/teams/00000000-0000-0000-0000-000000000000/posts/1/unknown"],
      ["GET", "/v2/organizations"]
    ] as const)("answers %s %s with 404 NotFound JSON", ([method, path]) =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const response = yield* raw({ method, path, token: alice.token })
        expect(response.status).toBe(404)
        expect(response.contentType).toMatch(/^application\/json/)
        expect(response.body).toEqual({ _tag: "NotFound", message: `No route for ${method} ${path}` })
      }))

    it.effect.each([
      ["TRACE", "/v1/auth/revoke", "POST"],
      ["GET", "/v1/auth/revoke", "POST"],
      ["DELETE", "/v1/organizations/00000000-0000-0000-0000-000000000000", "GET, PATCH"],
      ["PUT", "/v1/teams/00000000-0000-0000-0000-000000000000", "GET, PATCH"],
      ["POST", "/v1/teams/00000000-0000-0000-0000-000000000000/posts/00000000-0000-0000-0000-000000000000", "DELETE, GET, PATCH"],
      ["OPTIONS", "/v1/teams/00000000-0000-0000-0000-000000000000/posts/", "GET, POST"],
      ["DELETE", "/health", "GET"],
      ["POST", "/", "GET"],
      ["PATCH", "/mcp", "DELETE, GET, POST"]
    ] as const)("answers %s %s, a path without that method, with 405 and Allow: %s", ([method, path, allow]) =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const response = yield* anyMethod(method, path, alice.token)
        expect(response.status).toBe(405)
        expect(response.headers.allow).toBe(allow)
        expect(response.headers["content-type"]).toMatch(/^application\/json/)
        expect(response.body).toEqual({ _tag: "MethodNotAllowed", message: `${path} does not take ${method}: it takes ${allow}` })
      }))

    it.effect("answers a method no route has on an unknown path with 404", () =>
      Effect.gen(function*() {
        const response = yield* anyMethod("TRACE", "/v1/unknown")
        expect(response.status).toBe(404)
        expect(response.headers.allow).toBeUndefined()
        expect(response.body).toEqual({ _tag: "NotFound", message: "No route for TRACE /v1/unknown" })
      }))

    it.effect("serves /health without authentication", () =>
      Effect.gen(function*() {
        const response = yield* raw({ method: "GET", path: "/health" })
        expect(response).toMatchObject({ status: 200, body: { status: "ok", database: "up" } })
      }))

    it.effect("serves the OpenAPI document and the documentation page", () =>
      Effect.gen(function*() {
        const response = yield* raw({ method: "GET", path: "/openapi.json" })
        expect(response.status).toBe(200)
        expect(response.body.info.version).toBe("0.1.0")
        // The document served is the one committed, which the clients are generated from.
        expect(response.body).toEqual(JSON.parse(readFileSync(openApiPath, "utf8")))
        const docs = yield* raw({ method: "GET", path: "/docs" })
        expect(docs.status).toBe(200)
        expect(docs.contentType).toMatch(/^text\/html/)
        expect(docs.body.includes("<title>Postline</title>")).toBe(true)
        // Nothing but this server may be reached from the page, and only its own two inline scripts run.
        const policy = docs.headers.get("content-security-policy") ?? ""
        for (const directive of ["default-src 'none'", "connect-src 'self'", "font-src data:", "frame-ancestors 'none'"]) {
          expect(policy).toContain(directive)
        }
        const inlineScripts = Array.from(docs.body.matchAll(/<script>([\s\S]*?)<\/script>/g), ([, script]) => script)
        expect(inlineScripts).toHaveLength(2)
        expect(/script-src ([^;]*)/.exec(policy)?.[1]).toBe(
          ["'wasm-unsafe-eval'", ...inlineScripts.map((script) => `'sha256-${createHash("sha256").update(script).digest("base64")}'`)]
            .join(" ")
        )
        expect(docs.body).not.toMatch(/<(script|link|img)[^>]+(src|href)=/)
        expect(docs.body).toContain(`"withDefaultFonts":false`)
        const icon = yield* raw({ method: "GET", path: "/favicon.svg" })
        expect(icon.status).toBe(200)
        expect(icon.contentType).toBe("image/svg+xml")
        expect(icon.body).toMatch(/^<svg /)
        // The server's address sends a browser to the reference, and tells a script where things are.
        const root = yield* raw({ method: "GET", path: "/" })
        expect(root.status).toBe(302)
        expect(root.headers.get("location")).toBe("/docs")
        expect(root.body).toEqual({ docs: "/docs", openapi: "/openapi.json", health: "/health" })
      }))
  })
})
