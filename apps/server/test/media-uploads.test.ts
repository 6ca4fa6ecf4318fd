import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import type { ServerResponse } from "node:http"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { MediaStorage } from "../src/Assets/Storage.js"
import { makeLocalServer } from "./support/LocalServer.js"
import { download, noisyPng, putUpload, serverUrl } from "./support/Media.js"
import { LocalProviders } from "./support/Providers.js"
import { scopedTempDir } from "./support/TestDatabase.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { freshTestStorage, s3TestServer, type TestStorageKind, testStorageKinds } from "./support/TestStorage.js"
import { eventually } from "./support/Waiting.js"

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const limits = { image: 1_000_000, video: 2_000_000 }

/** The test server on this storage, with small media limits; imports may reach this machine unless `guarded`. */
const serverOn = (kind: TestStorageKind, options: { readonly guarded: boolean; readonly settings?: Record<string, string> }) =>
  makeTestServer(Logger.minimumLogLevel(LogLevel.Warning), LocalProviders, freshTestStorage(kind)).pipe(
    Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(
        new Map([
          ["MEDIA_MAX_IMAGE_BYTES", String(limits.image)],
          ["MEDIA_MAX_VIDEO_BYTES", String(limits.video)],
          ["OUTBOUND_ALLOW_PRIVATE", String(!options.guarded)],
          ...Object.entries(options.settings ?? {})
        ])
      ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
    ))
  )

const mediaTeam = Effect.gen(function*() {
  const admin = yield* signUp("Ada Admin")
  const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
  const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social" } })
  return { token: admin.token, teamId: team.id }
})

const startUpload = (token: string, teamId: string, json: Record<string, unknown>) =>
  raw({ method: "POST", path: `/v1/teams/${teamId}/assets/uploads`, token, json })

const complete = (token: string, teamId: string, uploadId: string) =>
  raw({ method: "POST", path: `/v1/teams/${teamId}/assets/uploads/${uploadId}/complete`, token })

const importFrom = (token: string, teamId: string, json: Record<string, unknown>) =>
  raw({ method: "POST", path: `/v1/teams/${teamId}/assets/import`, token, json })

const rowsOf = (teamId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all({
      assets: sql`SELECT id FROM assets WHERE team_id = ${teamId}`,
      uploads: sql`SELECT id FROM asset_uploads WHERE team_id = ${teamId}`
    }))

const storageKeyOf = (uploadId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ storage_key: string }>`SELECT storage_key FROM asset_uploads WHERE id = ${uploadId}`, ([row]) => row!.storage_key))

/** Stores `bytes` under `key` directly, as a client with the bucket's presigned URL could have. */
const storeDirectly = (key: string, bytes: Uint8Array) =>
  Effect.scoped(Effect.gen(function*() {
    const path = Path.join(yield* scopedTempDir("postline-object-"), "object")
    writeFileSync(path, bytes)
    yield* Effect.orDie(Effect.flatMap(MediaStorage, (storage) => storage.putFile(key, path, "application/octet-stream")))
  }))

const objectSize = (key: string) => Effect.orDie(Effect.flatMap(MediaStorage, (storage) => storage.size(key)))

/** Every object under the team's upload prefix, with its size. */
const uploadObjectsOf = (teamId: string) =>
  Effect.orDie(Effect.gen(function*() {
    const storage = yield* MediaStorage
    const keys = yield* storage.list(`uploads/${teamId}/`)
    const sizes = yield* Effect.forEach(keys, (key) => Effect.map(storage.size(key), Option.getOrElse(() => 0)))
    return { keys: keys.toSorted(), bytes: sizes.reduce((sum, size) => sum + size, 0) }
  }))

const cancel = (token: string, teamId: string, uploadId: string) =>
  raw({ method: "DELETE", path: `/v1/teams/${teamId}/assets/uploads/${uploadId}`, token })

/** The upload as a process left it that died while it sent or completed it: claimed, for one more second. */
const claimedByDeadProcess = (uploadId: string, state: "receiving" | "completing") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE asset_uploads SET state = ${state}, claimed_until = now() + interval '1 second' WHERE id = ${uploadId}`)

for (const kind of testStorageKinds) {
  // The bucket answers a presigned PUT 200; this server answers its own 204.
  const stored = kind === "s3" ? 200 : 204

  /** An upload of `bytes` started, and its bytes PUT to its URL with its headers. */
  const sendUpload = (token: string, teamId: string, bytes: Uint8Array, fields: Record<string, unknown> = {}) =>
    Effect.gen(function*() {
      const started = yield* startUpload(token, teamId, { size: bytes.length, ...fields })
      expect(started.status, JSON.stringify(started.body)).toBe(201)
      const put = yield* putUpload(started.body.url, bytes, started.body.headers)
      expect(put.status, JSON.stringify(put.body)).toBe(stored)
      return started.body.uploadId as string
    })

  layer(serverOn(kind, { guarded: false }), { excludeTestServices: true })(`presigned uploads on ${kind} storage`, (it) => {
    it.effect("end to end: the URL and headers to PUT to, the bytes PUT, completed as an asset of their SHA-256; again: 404", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const png = yield* noisyPng(200, 150)
        const started = yield* startUpload(token, teamId, { size: png.length, sha256: sha256(png).toUpperCase(), name: "large.png", altText: "Noise" })
        expect(started.status).toBe(201)
        const { uploadId, url } = started.body
        expect(started.body).toEqual({
          uploadId: expect.stringMatching(/^[0-9a-f-]{36}$/),
          method: "PUT",
          url: expect.any(String),
          headers: { "content-length": String(png.length) },
          expiresAt: expect.any(String)
        })
        expect(Date.parse(started.body.expiresAt)).toBeGreaterThan(Date.now() + 3500 * 1000)
        if (kind === "s3") expect(url.startsWith(`${s3TestServer.endpoint}/`)).toBe(true)
        else expect(url).toMatch(new RegExp(`^/v1/uploads/${uploadId}\\?expires=\\d+&signature=[\\w-]+$`))
        const key = yield* storageKeyOf(uploadId)
        expect(key).toBe(`uploads/${teamId}/${uploadId}`)

        expect((yield* putUpload(url, png, started.body.headers)).status).toBe(stored)
        const completed = yield* complete(token, teamId, uploadId)
        expect(completed.status, JSON.stringify(completed.body)).toBe(201)
        expect(completed.body).toMatchObject({
          teamId,
          name: "large.png",
          altText: "Noise",
          kind: "image",
          contentType: "image/png",
          sha256: sha256(png),
          width: 200,
          height: 150
        })
        const downloaded = yield* download(completed.body.url)
        expect(downloaded.status).toBe(200)
        expect(downloaded.bytes.length).toBe(completed.body.size)
        // The upload is spent: its row and its object are gone.
        expect((yield* rowsOf(teamId)).uploads).toEqual([])
        expect(yield* objectSize(key)).toEqual(Option.none())
        expect(yield* complete(token, teamId, uploadId)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })

        // The same bytes in another upload: 200 with the asset the team has.
        const again = yield* complete(token, teamId, yield* sendUpload(token, teamId, png))
        expect(again.status).toBe(200)
        expect(again.body.id).toBe(completed.body.id)
      }))

    it.effect("bytes of another SHA-256 or another size: 400 at completion, no asset, no upload and no object left", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const png = yield* noisyPng(40, 40)
        const wrongHash = yield* sendUpload(token, teamId, png, { sha256: sha256(yield* noisyPng(40, 40)) })
        const wrongHashKey = yield* storageKeyOf(wrongHash)
        const hashRefused = yield* complete(token, teamId, wrongHash)
        expect(hashRefused).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining("SHA-256") } })

        // A PUT of another length is refused (the bucket: its signature covers the length; this server: 400) ...
        const sized = yield* startUpload(token, teamId, { size: png.length })
        const short = yield* putUpload(sized.body.url, png.subarray(1))
        expect(short.status).toBe(kind === "s3" ? 403 : 400)
        // ... and an object of another length found at completion is refused too.
        const sizedKey = yield* storageKeyOf(sized.body.uploadId)
        yield* storeDirectly(sizedKey, Buffer.concat([png, Buffer.from("more")]))
        const sizeRefused = yield* complete(token, teamId, sized.body.uploadId)
        expect(sizeRefused).toMatchObject({
          status: 400,
          body: { _tag: "BadRequest", message: `The upload declared ${png.length} bytes; ${png.length + 4} arrived` }
        })

        expect(yield* rowsOf(teamId)).toEqual({ assets: [], uploads: [] })
        expect(yield* objectSize(wrongHashKey)).toEqual(Option.none())
        expect(yield* objectSize(sizedKey)).toEqual(Option.none())
        expect(yield* complete(token, teamId, wrongHash)).toMatchObject({ status: 404 })
      }))

    it.effect("HTML bytes: 415 at completion, nothing saved; an image over its kind's limit: 413", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const html = new TextEncoder().encode("<!doctype html><html><body><script>alert(1)</script></body></html>")
        const refused = yield* complete(token, teamId, yield* sendUpload(token, teamId, html))
        expect(refused).toMatchObject({ status: 415, body: { _tag: "UnsupportedMediaType" } })

        // A PNG of 1.5 MB: within the video limit the upload was started with, over the image limit. On this server's
        // own URL it is also more than a JSON body may have, so the PUT streamed.
        const png = yield* noisyPng(20, 20)
        const large = Buffer.concat([png, randomBytes(1_500_000 - png.length)])
        const tooLarge = yield* complete(token, teamId, yield* sendUpload(token, teamId, large))
        expect(tooLarge).toMatchObject({ status: 413, body: { _tag: "PayloadTooLarge", message: `The image is larger than ${limits.image} bytes` } })

        const overAll = yield* startUpload(token, teamId, { size: limits.video + 1 })
        expect(overAll).toMatchObject({ status: 413, body: { _tag: "PayloadTooLarge" } })
        expect(yield* rowsOf(teamId)).toEqual({ assets: [], uploads: [] })
      }))

    it.effect("completed before its bytes were PUT: 409, and the upload completes once they are", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const png = yield* noisyPng(30, 30)
        const started = yield* startUpload(token, teamId, { size: png.length })
        const early = yield* complete(token, teamId, started.body.uploadId)
        expect(early).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("Nothing was PUT") } })
        expect((yield* putUpload(started.body.url, png, started.body.headers)).status).toBe(stored)
        expect((yield* complete(token, teamId, started.body.uploadId)).status).toBe(201)
      }))

    it.effect("an unknown or expired upload: 404; another organization's member: 404, and the upload is still the team's", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        expect(yield* complete(token, teamId, randomUUID())).toMatchObject({ status: 404, body: { _tag: "NotFound" } })

        const expired = yield* sendUpload(token, teamId, yield* noisyPng(10, 10))
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE asset_uploads SET expires_at = now() - interval '1 second' WHERE id = ${expired}`
        expect(yield* complete(token, teamId, expired)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })

        const uploadId = yield* sendUpload(token, teamId, yield* noisyPng(10, 10))
        const stranger = yield* mediaTeam
        expect(yield* complete(stranger.token, teamId, uploadId)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        expect(yield* complete(stranger.token, stranger.teamId, uploadId)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        expect((yield* complete(token, teamId, uploadId)).status).toBe(201)
      }))

    if (kind === "filesystem") {
      it.effect("this server's PUT URL: a changed signature 403; another length 400 and the URL still usable; a second PUT 409", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const png = yield* noisyPng(30, 30)
          const started = yield* startUpload(token, teamId, { size: png.length })
          const { uploadId, url } = started.body
          const forged = yield* putUpload(url.replace(/signature=[\w-]+/, "signature=AAAA"), png)
          expect(forged).toMatchObject({ status: 403, body: { _tag: "Forbidden" } })
          const otherUpload = yield* putUpload(url.replace(uploadId, randomUUID()), png)
          expect(otherUpload.status).toBe(403)

          const longer = yield* putUpload(url, Buffer.concat([png, Buffer.from("x")]))
          expect(longer).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining("Content-Length") } })
          // Without a Content-Length (chunked), the bytes are counted as they arrive.
          const chunked = (bytes: Uint8Array) =>
            Effect.flatMap(serverUrl, (base) =>
              Effect.promise(() =>
                fetch(`${base}${url}`, {
                  method: "PUT",
                  body: new ReadableStream({ start: (controller) => (controller.enqueue(bytes), controller.close()) }),
                  duplex: "half"
                } as RequestInit).then(async (response) => ({ status: response.status, body: await response.json() }))
              ))
          expect(yield* chunked(png.subarray(1))).toMatchObject({ status: 400, body: { message: expect.stringContaining(`body has ${png.length - 1}`) } })
          expect(yield* chunked(Buffer.concat([png, Buffer.from("x")]))).toMatchObject({ status: 400, body: { message: expect.stringContaining(`body has ${png.length + 1}`) } })

          expect((yield* putUpload(url, png)).status).toBe(204)
          const again = yield* putUpload(url, png)
          expect(again).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
          expect((yield* complete(token, teamId, uploadId)).status).toBe(201)
          expect(yield* putUpload(url, png)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        }))
    }
  })

  // The storage sweep every second; a dead process's claims lapse after one. Its own parent of temporary folders: a
  // lease of a second is one a busy machine's other processes, sharing the system's, would judge lapsed and sweep.
  const sweptServer = serverOn(kind, {
    guarded: false,
    settings: {
      MEDIA_SWEEP_SECONDS: "1",
      MEDIA_LEASE_SECONDS: "1",
      MEDIA_TMP_DIR: mkdtempSync(Path.join(tmpdir(), "media-uploads-swept-"))
    }
  })

  layer(sweptServer, { excludeTestServices: true })(`presigned uploads' leftovers on ${kind} storage`, (it) => {
    it.effect("a spent upload's URL PUT again: refused, or its object swept; what an expired upload stored swept too; an open one's kept", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const png = yield* noisyPng(60, 60)
        const html = new TextEncoder().encode("<!doctype html><html><body>Not an image</body></html>")
        const reused: Array<number> = []
        // Completed (201, then 200: the same bytes) or refused (415): every one spends its upload.
        for (const [bytes, status] of [[png, 201], [png, 200], [html, 415], [png, 200]] as const) {
          const started = yield* startUpload(token, teamId, { size: bytes.length })
          expect((yield* putUpload(started.body.url, bytes, started.body.headers)).status).toBe(stored)
          expect((yield* complete(token, teamId, started.body.uploadId)).status).toBe(status)
          reused.push((yield* putUpload(started.body.url, bytes, started.body.headers)).status)
        }
        // The bucket cannot refuse a presigned URL before it expires (Swift's s3api answers 501 to a conditional PUT);
        // this server's own URL is refused once the upload is spent.
        expect(reused).toEqual(Array(4).fill(kind === "s3" ? 200 : 404))

        const expired = yield* sendUpload(token, teamId, png)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE asset_uploads SET expires_at = now() - interval '1 second' WHERE id = ${expired}`
        const open = yield* sendUpload(token, teamId, png)
        const openKey = yield* storageKeyOf(open)

        // Within a sweep or two, only the open upload's object is left: what the team holds under its upload prefix is
        // bounded by its open uploads' declared sizes, which count against its quota.
        const left = yield* eventually(uploadObjectsOf(teamId), ({ keys }) => keys.length === 1)
        expect(left).toEqual({ keys: [openKey], bytes: png.length })
        expect((yield* complete(token, teamId, open)).status).toBe(200)
      }))

    it.effect("a PUT interrupted by a process that died: 409 while its claim holds, then sent again and completed", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const png = yield* noisyPng(40, 40)
        const started = yield* startUpload(token, teamId, { size: png.length })
        const { uploadId, url, headers } = started.body
        yield* claimedByDeadProcess(uploadId, "receiving")
        expect(yield* complete(token, teamId, uploadId)).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
        expect(yield* cancel(token, teamId, uploadId)).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
        if (kind === "filesystem") expect(yield* putUpload(url, png, headers)).toMatchObject({ status: 409, body: { _tag: "Conflict" } })

        // Once the claim lapses: on this server's URL the PUT is taken again; the bucket's took it all along.
        const sent = yield* eventually(putUpload(url, png, headers), ({ status }) => status !== 409)
        expect(sent.status).toBe(stored)
        const completed = yield* eventually(complete(token, teamId, uploadId), ({ status }) => status !== 409)
        expect(completed.status, JSON.stringify(completed.body)).toBe(201)
      }))

    it.effect("a completion interrupted by a process that died: 409 while its claim holds, then completed again, or cancelled (204) and its bytes freed", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const png = yield* noisyPng(40, 40)
        const completed = yield* sendUpload(token, teamId, png)
        const cancelled = yield* sendUpload(token, teamId, yield* noisyPng(40, 40))
        const cancelledKey = yield* storageKeyOf(cancelled)
        yield* claimedByDeadProcess(completed, "completing")
        yield* claimedByDeadProcess(cancelled, "completing")
        expect(yield* complete(token, teamId, completed)).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("being completed") } })
        expect(yield* cancel(token, teamId, cancelled)).toMatchObject({ status: 409, body: { _tag: "Conflict" } })

        const again = yield* eventually(complete(token, teamId, completed), ({ status }) => status !== 409)
        expect(again.status, JSON.stringify(again.body)).toBe(201)
        const gone = yield* eventually(cancel(token, teamId, cancelled), ({ status }) => status !== 409)
        expect(gone.status).toBe(204)
        // Cancelled: no longer open (its declared size no longer counts), its object gone, and done with for good.
        expect((yield* rowsOf(teamId)).uploads).toEqual([])
        expect(yield* objectSize(cancelledKey)).toEqual(Option.none())
        expect(yield* complete(token, teamId, cancelled)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        expect(yield* cancel(token, teamId, cancelled)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
      }))
  })

  layer(serverOn(kind, { guarded: false }), { excludeTestServices: true })(`imports on ${kind} storage`, (it) => {
    /** A local server of files to import, and how much of an endless one it managed to send. */
    const importSource = Effect.gen(function*() {
      const png = yield* noisyPng(120, 90)
      const endless = { sent: 0, closed: false }
      const endlessTotal = 64 * 1024 * 1024
      const sendEndless = (response: ServerResponse) => {
        response.writeHead(200, { "content-type": "image/png" })
        const chunk = randomBytes(64 * 1024)
        response.on("close", () => (endless.closed = true))
        const pump = () => {
          while (endless.sent < endlessTotal && !endless.closed) {
            endless.sent += chunk.length
            if (!response.write(chunk)) return void response.once("drain", pump)
          }
          response.end()
        }
        response.write(png)
        pump()
      }
      const base = yield* makeLocalServer((request, response) => {
        switch (request.url) {
          case "/photos/beach%20day.png":
            return void response.writeHead(200, { "content-type": "image/png" }).end(png)
          case "/page.png":
            return void response.writeHead(200, { "content-type": "image/png" }).end("<!doctype html><html><body>Hello</body></html>")
          case "/missing.png":
            return void response.writeHead(404).end("Not here")
          case "/moved.png":
            return void response.writeHead(302, { location: "/photos/beach%20day.png" }).end()
          case "/endless.png":
            return sendEndless(response)
          case "/announced.png":
            // Announces more than any kind may have, sends a little, and waits.
            return void response.writeHead(200, { "content-length": String(limits.video + 1) }).write(png.subarray(0, 100))
          default:
            return void response.writeHead(404).end()
        }
      })
      return { base, png, endless, endlessTotal }
    })

    it.effect("a PNG: 201, named after the URL, its SHA-256; the same again: 200 with that asset", () =>
      Effect.scoped(Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const { base, png } = yield* importSource
        const imported = yield* importFrom(token, teamId, { url: `${base}/photos/beach%20day.png`, altText: "A beach" })
        expect(imported.status, JSON.stringify(imported.body)).toBe(201)
        expect(imported.body).toMatchObject({ name: "beach day.png", altText: "A beach", contentType: "image/png", sha256: sha256(png), width: 120, height: 90 })
        const again = yield* importFrom(token, teamId, { url: `${base}/photos/beach%20day.png`, name: "other.png" })
        expect(again.status).toBe(200)
        expect(again.body).toMatchObject({ id: imported.body.id, name: "beach day.png" })
      })))

    it.effect("HTML: 415; an error status: 502 BadGateway; a redirect: 400, not followed; nothing saved", () =>
      Effect.scoped(Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const { base } = yield* importSource
        expect(yield* importFrom(token, teamId, { url: `${base}/page.png` })).toMatchObject({ status: 415, body: { _tag: "UnsupportedMediaType" } })
        expect(yield* importFrom(token, teamId, { url: `${base}/missing.png` })).toMatchObject({
          status: 502,
          body: { _tag: "BadGateway", message: `The file could not be fetched: ${new URL(base).host} answered 404` }
        })
        expect(yield* importFrom(token, teamId, { url: `${base}/moved.png` })).toMatchObject({
          status: 400,
          body: { _tag: "BadRequest", message: expect.stringContaining("redirect (302), which is not followed") }
        })
        const closed = `http://127.0.0.1:${new URL(base).port === "1" ? "2" : "1"}/a.png`
        expect(yield* importFrom(token, teamId, { url: closed })).toMatchObject({ status: 502, body: { _tag: "BadGateway" } })
        expect(yield* rowsOf(teamId)).toEqual({ assets: [], uploads: [] })
      })))

    it.effect("too large: 413 as soon as its kind's limit passes, the rest never fetched; a Content-Length past every limit: 413 unread", () =>
      Effect.scoped(Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const { base, endless, endlessTotal } = yield* importSource
        const refused = yield* importFrom(token, teamId, { url: `${base}/endless.png` })
        expect(refused).toMatchObject({ status: 413, body: { _tag: "PayloadTooLarge", message: `The image is larger than ${limits.image} bytes` } })
        yield* eventually(Effect.sync(() => endless.closed), (closed) => closed)
        // What the sockets' buffers took beyond the limit, far from all of it.
        expect(endless.sent).toBeLessThan(endlessTotal / 4)

        const announced = yield* importFrom(token, teamId, { url: `${base}/announced.png` })
        expect(announced).toMatchObject({ status: 413, body: { _tag: "PayloadTooLarge", message: expect.stringContaining(String(limits.video)) } })
        expect(yield* rowsOf(teamId)).toEqual({ assets: [], uploads: [] })
      })))
  })
}

layer(serverOn("filesystem", { guarded: true }), { excludeTestServices: true })("imports with the production guard", (it) => {
  it.effect("plain http, loopback, private and link-local addresses: 400 BadRequest saying why; nothing is fetched", () =>
    Effect.scoped(Effect.gen(function*() {
      const { teamId, token } = yield* mediaTeam
      let requests = 0
      const base = yield* makeLocalServer((_request, response) => (requests++, response.end()))
      const port = new URL(base).port
      const refusals: ReadonlyArray<readonly [string, string]> = [
        [`${base}/a.png`, "only https addresses are allowed"],
        [`https://127.0.0.1:${port}/a.png`, "127.0.0.1 is a loopback address"],
        [`https://localhost:${port}/a.png`, "is a loopback address"],
        ["https://[::1]/a.png", "::1 is a loopback address"],
        ["https://10.1.2.3/a.png", "10.1.2.3 is a private address"],
        ["https://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"]
      ]
      for (const [url, why] of refusals) {
        const refused = yield* importFrom(token, teamId, { url })
        expect(refused, url).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining(why) } })
      }
      expect(requests).toBe(0)
      expect(yield* rowsOf(teamId)).toEqual({ assets: [], uploads: [] })
    })))
})
