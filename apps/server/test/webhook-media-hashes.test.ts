import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import sharp from "sharp"
import { jpegWithGps, serverUrl, upload } from "./support/Media.js"
import { publishEnv } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver, publishingTeam, type ReceivedEvent } from "./support/Publishing.js"
import { callsAs, createUserWithToken, freePort, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"
import { makeTestServer } from "./support/TestServer.js"

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

interface WebhookMedium {
  readonly assetId: string
  readonly sha256: string
  readonly url: string
}

/**
 * A receiver that checks: it downloads each medium from its `url` and compares the bytes' SHA-256 with the event's
 * `sha256`, answering 200 when all match and 422 naming those that do not, as a careful receiver would. `seen`
 * keeps what it downloaded, by asset.
 */
const makeCheckingReceiver = Effect.gen(function*() {
  const receiver = yield* makeWebhookReceiver
  const seen = new Map<string, { readonly announced: string; readonly downloaded: string }>()
  const check = async (event: ReceivedEvent) => {
    const media: ReadonlyArray<WebhookMedium> = JSON.parse(event.body).data.media
    const mismatched: Array<string> = []
    for (const medium of media) {
      const response = await fetch(medium.url)
      const downloaded = sha256(new Uint8Array(await response.arrayBuffer()))
      seen.set(medium.assetId, { announced: medium.sha256, downloaded })
      if (response.status !== 200 || downloaded !== medium.sha256) mismatched.push(medium.assetId)
    }
    return mismatched
  }
  receiver.answerWith((event, response) =>
    void check(event).then(
      (mismatched) =>
        mismatched.length === 0
          ? response.writeHead(200, { "content-type": "application/json" }).end("{}")
          : response.writeHead(422).end(`sha256 does not match the file at url: ${mismatched.join(", ")}`),
      (error) => response.writeHead(500).end(String(error))
    ))
  return { ...receiver, seen }
})

/** Images whose stored copies are rewritten: EXIF stripped, re-encoded; HEIC stored as JPEG. */
const imagesStoredRewritten = Effect.gen(function*() {
  const pixels = () => sharp({ create: { width: 48, height: 32, channels: 3, background: { r: 30, g: 90, b: 160 } } })
  const exif = { IFD0: { Make: "PostlineCam", Model: "Test" } }
  return [
    { fileName: "photo.jpg", bytes: yield* jpegWithGps() },
    { fileName: "drawing.png", bytes: yield* Effect.promise(() => pixels().png({ compressionLevel: 0 }).withExif(exif).toBuffer()) },
    { fileName: "sticker.webp", bytes: yield* Effect.promise(() => pixels().webp({ quality: 50 }).withExif(exif).toBuffer()) },
    { fileName: "IMG_0001.HEIC", bytes: readFileSync(new URL("./fixtures/sample.heic", import.meta.url)) }
  ]
})

describe("a webhook's media, from the built server", () => {
  it.scopedLive("each data.media[].sha256 is the SHA-256 of the file at its url, for JPEG, PNG, WebP and HEIC uploads", () =>
    Effect.gen(function*() {
      const receiver = yield* makeCheckingReceiver
      const port = yield* freePort
      const env = publishEnv(yield* freshDatabaseEnv, {
        CREDIT_COSTS: "{}",
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`
      })
      const { token } = yield* createUserWithToken(env)
      const server = yield* startServer(env)
      const call = callsAs(server, token)
      const organization = (yield* call("POST", "/v1/organizations", { name: "Hashes" })).body
      const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" })).body
      const hook = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiver.url })).body

      const uploaded: Array<{ readonly id: string; readonly sha256: string; readonly contentType: string }> = []
      for (const { bytes, fileName } of yield* imagesStoredRewritten) {
        const form = new FormData()
        form.append("file", new Blob([bytes]), fileName)
        const response = yield* Effect.promise(() =>
          fetch(`${server.base}/v1/teams/${team.id}/assets`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
        )
        const asset = yield* Effect.promise(() => response.json() as Promise<any>)
        expect(response.status, `${fileName}: ${JSON.stringify(asset)}\n${server.lines.join("\n")}`).toBe(201)
        uploaded.push(asset)
      }
      expect(uploaded.map((asset) => asset.contentType)).toEqual(["image/jpeg", "image/png", "image/webp", "image/jpeg"])
      const post = (yield* call("POST", `/v1/teams/${team.id}/posts`, {
        content: "Four formats",
        media: uploaded.map((asset) => ({ assetId: asset.id }))
      })).body
      const answer = yield* call("POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, { socialAccountIds: [hook.id] })

      expect(answer.body.results[0], JSON.stringify(answer.body)).toMatchObject({ status: "published", error: null })
      for (const asset of uploaded) {
        const { announced, downloaded } = receiver.seen.get(asset.id)!
        expect(announced).toBe(downloaded)
        // The file served is the rewritten copy, not the upload: the asset's own hash (of the upload) differs.
        expect(downloaded).not.toBe(asset.sha256)
      }
    }))
})

// An image stored before the stored copies' hashes were kept: its hash is read from storage when a post sends it.
const Server = makeTestServer(Logger.minimumLogLevel(LogLevel.Error)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map([["PUBLIC_URL", "http://127.0.0.1"]])).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)

layer(Server, { excludeTestServices: true })("a webhook's media stored before their hashes were kept", (it) => {
  it.scoped("gets the hash of the file at its url, read from storage once and kept", () =>
    Effect.gen(function*() {
      const base = yield* serverUrl
      const receiver = yield* makeWebhookReceiver
      const { admin, call, connect, postNow, team } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const { body: asset } = yield* upload({ token: admin.token, teamId: team.id, bytes: yield* jpegWithGps(), fileName: "old.jpg" })
      const sql = yield* SqlClient.SqlClient
      // As the migration leaves an image uploaded before it.
      yield* sql`UPDATE assets SET stored_sha256 = NULL WHERE id = ${asset.id}`
      const post = (yield* call("POST", "/posts", { content: "An old photo", media: [{ assetId: asset.id }] })).body
      expect((yield* postNow(post.id, [hook.id])).body.results[0]).toMatchObject({ status: "published" })

      const [medium] = JSON.parse(receiver.received[0].body).data.media as Array<WebhookMedium>
      // The link names PUBLIC_URL; the path is this server's.
      const served = yield* Effect.promise(() => fetch(`${base}${new URL(medium.url).pathname}${new URL(medium.url).search}`).then((r) => r.arrayBuffer()))
      expect(medium.sha256).toBe(sha256(new Uint8Array(served)))
      const [kept] = yield* sql<{ storedSha256: string }>`SELECT stored_sha256 AS "storedSha256" FROM assets WHERE id = ${asset.id}`
      expect(kept.storedSha256).toBe(medium.sha256)
    }))
})
