import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { readdirSync } from "node:fs"
import { noisyPng } from "./support/Media.js"
import { head, sendRaw } from "./support/RawSocket.js"
import { callsAs, createUserWithToken, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "./support/TestDatabase.js"

// The form parser runs inside the bundle (patched multipasta): these requests go to the built server.
class FormServer extends Context.Tag("FormServer")<FormServer, {
  readonly server: ServerProcess
  readonly port: number
  readonly tmpDir: string
  readonly token: string
  readonly teamId: string
}>() {}

const FormServerLive = Layer.scoped(
  FormServer,
  Effect.gen(function*() {
    const tmpDir = yield* scopedTempDir("postline-forms-")
    // A request timeout far beyond the test's: an answer here is never the 408 of a body that stopped coming.
    const env = { ...(yield* freshDatabaseEnv), HTTP_REQUEST_TIMEOUT_MS: "3600000", MEDIA_TMP_DIR: tmpDir }
    const server = yield* startServer(env)
    const user = yield* createUserWithToken(env)
    const call = callsAs(server, user.token)
    const organization = yield* call("POST", "/v1/organizations", { name: "Forms" })
    const team = yield* call("POST", "/v1/teams", { organizationId: organization.body.id, name: "Forms" })
    return { server, port: Number(new URL(server.base).port), tmpDir, token: user.token, teamId: team.body.id }
  })
)

const boundary = "PostlineFormBoundary"

/** A form upload sent byte for byte on its own connection, with an exact Content-Length; its answer. */
const sendForm = (body: Buffer, contentType = `multipart/form-data; boundary=${boundary}`) =>
  Effect.flatMap(FormServer, ({ port, teamId, token }) =>
    Effect.promise(() =>
      sendRaw(port, [
        head(
          `POST /v1/teams/${teamId}/assets HTTP/1.1`,
          `Authorization: Bearer ${token}`,
          `Content-Type: ${contentType}`,
          `Content-Length: ${body.length}`,
          "Connection: close"
        ),
        body
      ], 60_000)
    ))

/** One part's head: its Content-Disposition parameters after `form-data; name="file"`, as raw UTF-8 bytes. */
const filePart = (disposition: string, bytes: Uint8Array, delimiter = boundary) =>
  Buffer.concat([
    Buffer.from(`--${delimiter}\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: image/png\r\n\r\n`),
    bytes
  ])

const closingOf = (delimiter: string) => Buffer.from(`\r\n--${delimiter}--\r\n`)
const closing = closingOf(boundary)

/** Spooled uploads (named `upload`) still under MEDIA_TMP_DIR. */
const spooledFiles = (dir: string): Array<string> =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name === "upload")
    .map((entry) => entry.name)

layer(FormServerLive, { excludeTestServices: true })("multipart forms on the built server", (it) => {
  it.effect("a form whose body ends without its closing boundary: 400 once the body has ended, nothing left spooled", () =>
    Effect.gen(function*() {
      const { server, tmpDir } = yield* FormServer
      const png = Buffer.from(yield* noisyPng(16, 16))
      const unclosed = {
        "a file part cut short": filePart(`filename="a.png"`, png),
        "a file part and a delimiter without its --": Buffer.concat([filePart(`filename="a.png"`, png), Buffer.from(`\r\n--${boundary}`)]),
        "a file part's head only": filePart(`filename="a.png"`, Buffer.alloc(0)),
        "a text field cut short": Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="altText"\r\n\r\nA cat`)
      }
      // Twenty at once, as the issue sent them: each was left open, holding its socket, descriptor and temp file.
      const cases = Object.entries(unclosed).flatMap((entry) => Array.from({ length: 5 }, () => entry))
      const answers = yield* Effect.all(cases.map(([, body]) => sendForm(body)), { concurrency: "unbounded" })
      answers.forEach((answer, index) => {
        const name = cases[index]![0]
        expect({ name, status: answer.status, closed: answer.closed }).toEqual({ name, status: 400, closed: true })
        expect(answer.body, name).toEqual({
          _tag: "BadRequest",
          reason: "invalid_form",
          message: "The form ends without its closing boundary (--boundary-- after the last part)"
        })
      })
      expect(spooledFiles(tmpDir)).toEqual([])
      // The same form with its closing boundary is taken.
      const closed = yield* sendForm(Buffer.concat([filePart(`filename="a.png"`, png), closing]))
      expect(closed.status).toBe(201)
      expect(server.child.exitCode).toBeNull()
    }))

  it.effect("file names beyond Latin-1, raw UTF-8 or RFC 5987 filename*: the asset keeps its name", () =>
    Effect.gen(function*() {
      const { server, token, teamId } = yield* FormServer
      const call = callsAs(server, token)
      const named: ReadonlyArray<readonly [string, string]> = [
        [`filename="写真.png"`, "写真.png"],
        [`filename="résumé – final.png"`, "résumé – final.png"],
        [`filename="€uro.png"`, "€uro.png"],
        [`filename="фотография.png"`, "фотография.png"],
        [`filename="תמונה.png"`, "תמונה.png"],
        [`filename="😀 party.png"`, "😀 party.png"],
        [`filename*=UTF-8''%E5%86%99%E7%9C%9F%20%E2%82%AC.png`, "写真 €.png"],
        [`filename*=utf-8'ja'%E5%86%99%E7%9C%9F.png`, "写真.png"],
        [`filename*=ISO-8859-1''%E9t%E9.png`, "été.png"],
        // filename* wins over the plain fallback a client sends beside it.
        [`filename="photo.png"; filename*=UTF-8''%D1%84%D0%BE%D1%82%D0%BE.png`, "фото.png"]
      ]
      for (const [disposition, name] of named) {
        const png = Buffer.from(yield* noisyPng(8, 8))
        const answer = yield* sendForm(Buffer.concat([filePart(disposition, png), closing]))
        expect({ disposition, status: answer.status, name: answer.body.name }).toEqual({ disposition, status: 201, name })
        const stored = yield* call("GET", `/v1/teams/${teamId}/assets/${answer.body.id}`)
        expect(stored.body.name).toBe(name)
      }
      // A filename* that does not decode still makes the part the form's file, named after its kind.
      for (const disposition of [`filename*=UTF-8''%FF%FE.png`, `filename*=KOI8-R''%C6.png`, `filename*=%E9.png`]) {
        const answer = yield* sendForm(Buffer.concat([filePart(disposition, Buffer.from(yield* noisyPng(8, 8))), closing]))
        expect({ disposition, status: answer.status, name: answer.body.name }).toEqual({ disposition, status: 201, name: "image.png" })
      }
    }))

  it.effect("a malformed multipart boundary: 400 with _tag and message, before the body is read", () =>
    Effect.gen(function*() {
      const { server } = yield* FormServer
      const body = Buffer.concat([filePart(`filename="a.png"`, Buffer.from(yield* noisyPng(8, 8))), closing])
      const malformed = [
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary= ",
        "multipart/form-data; boundary=;",
        "multipart/form-data; boundary=\"abc",
        "multipart/form-data; boundary=é",
        "multipart/form-data; boundary=\"ends in a space \"",
        `multipart/form-data; boundary=${"b".repeat(71)}`,
        `multipart/form-data; boundary=${boundary}; boundary=other`,
        "multipart/form-data"
      ]
      for (const contentType of malformed) {
        const answer = yield* sendForm(body, contentType)
        expect({ contentType, status: answer.status }).toEqual({ contentType, status: 400 })
        expect(answer.body, contentType).toEqual({ _tag: "BadRequest", reason: "invalid_form", message: expect.stringContaining("boundary") })
      }
      // What RFC 2046 allows is read: a quoted boundary with spaces, another parameter first, 70 characters.
      for (const [contentType, delimiter] of [
        ["multipart/form-data; boundary=\"a b:c\"", "a b:c"],
        ["multipart/form-data; charset=utf-8; boundary=x", "x"],
        [`multipart/form-data; boundary=${"b".repeat(70)}`, "b".repeat(70)]
      ] as const) {
        const png = Buffer.from(yield* noisyPng(8, 8))
        const answer = yield* sendForm(Buffer.concat([filePart(`filename="a.png"`, png, delimiter), closingOf(delimiter)]), contentType)
        expect({ contentType, status: answer.status }).toEqual({ contentType, status: 201 })
      }
      expect(server.lines.filter((line) => line.includes("Unexpected failure"))).toEqual([])
    }))
})
