import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import sharp from "sharp"
import { StorageGarbage } from "../src/Assets/Garbage.js"
import { MediaStorage } from "../src/Assets/Storage.js"
import { download, jpegWithGps, mp4Bytes, noisyPng, upload } from "./support/Media.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { freshTestStorage, s3TestSettings, testStorageKinds } from "./support/TestStorage.js"
import { LocalProviders } from "./support/Providers.js"

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** An admin's organization and team, and the typed client acting as them. */
const mediaTeam = Effect.gen(function*() {
  const admin = yield* signUp("Ada Admin")
  const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
  const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social" } })
  return { admin, organization, team, token: admin.token, teamId: team.id }
})

const storedKeys = (assetId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ storage_key: string; thumbnail_key: string | null }>`SELECT storage_key, thumbnail_key FROM assets WHERE id = ${assetId}`)

const sweepNow = Effect.flatMap(StorageGarbage, (garbage) => Effect.flatMap(MediaStorage, (storage) => garbage.sweep(100, storage.remove)))
  .pipe(Effect.provide(StorageGarbage.Default))

for (const kind of testStorageKinds) {
  const Server = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning), LocalProviders, freshTestStorage(kind))

  layer(Server, { excludeTestServices: true })(`media library on ${kind} storage`, (it) => {
    describe("uploads", () => {
      it.effect("an image: 201, its type read from its bytes, its size, hash, dimensions and a thumbnail; signed downloads with Range", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const png = yield* noisyPng(400, 300)
          const created = yield* upload({ token, teamId, bytes: png, fileName: "holiday photo.png", fields: { altText: "A beach" } })
          expect(created.status).toBe(201)
          const asset = created.body
          expect(asset).toMatchObject({
            teamId,
            folderId: null,
            name: "holiday photo.png",
            kind: "image",
            contentType: "image/png",
            sha256: sha256(png),
            width: 400,
            height: 300,
            altText: "A beach"
          })
          expect(Date.parse(asset.urlExpiresAt)).toBeGreaterThan(Date.now() + 3000 * 1000)

          const whole = yield* download(asset.url)
          expect(whole.status).toBe(200)
          expect(whole.headers.get("content-type")).toBe("image/png")
          expect(whole.bytes.length).toBe(asset.size)
          const decoded = yield* Effect.promise(() => sharp(whole.bytes).metadata())
          expect({ width: decoded.width, height: decoded.height, format: decoded.format }).toEqual({ width: 400, height: 300, format: "png" })

          const part = yield* download(asset.url, { range: "bytes=10-19" })
          expect(part.status).toBe(206)
          expect(part.headers.get("content-range")).toBe(`bytes 10-19/${asset.size}`)
          expect([...part.bytes]).toEqual([...whole.bytes.subarray(10, 20)])
          const tail = yield* download(asset.url, { range: "bytes=-5" })
          expect([...tail.bytes]).toEqual([...whole.bytes.subarray(asset.size - 5)])
          const past = yield* download(asset.url, { range: `bytes=${asset.size}-` })
          expect(past.status).toBe(416)

          const thumbnail = yield* download(asset.thumbnailUrl)
          expect(thumbnail.headers.get("content-type")).toBe("image/webp")
          const thumb = yield* Effect.promise(() => sharp(thumbnail.bytes).metadata())
          expect({ width: thumb.width, height: thumb.height, format: thumb.format }).toEqual({ width: 320, height: 240, format: "webp" })
        }))

      it.effect("the same bytes again: 200 with the asset the team already has; nothing more is stored", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const png = yield* noisyPng(40, 30)
          const first = yield* upload({ token, teamId, bytes: png, fileName: "a.png" })
          const again = yield* upload({ token, teamId, bytes: png, fileName: "b.png" })
          expect(first.status).toBe(201)
          expect(again.status).toBe(200)
          expect(again.body.id).toBe(first.body.id)
          expect(again.body.name).toBe("a.png")
          const sql = yield* SqlClient.SqlClient
          const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM assets WHERE team_id = ${teamId}`
          expect(count).toBe(1)
        }))

      it.effect("a file named .png that is HTML, or an executable: 415 UnsupportedMediaType, and nothing stored", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const html = new TextEncoder().encode("<!doctype html><html><body><script>alert(1)</script></body></html>")
          const elf = new Uint8Array(8192)
          elf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])
          for (const bytes of [html, elf, new Uint8Array(0)]) {
            const refused = yield* upload({ token, teamId, bytes, fileName: "cat.png", fileType: "image/png" })
            expect(refused.status).toBe(415)
            expect(refused.body).toEqual({ _tag: "UnsupportedMediaType", message: expect.stringContaining("read from its bytes") })
          }
          const sql = yield* SqlClient.SqlClient
          expect(yield* sql`SELECT 1 FROM assets WHERE team_id = ${teamId}`).toEqual([])
          expect(yield* sql`SELECT 1 FROM storage_garbage`).toEqual([])
        }))

      it.effect("a JPEG with GPS in its EXIF: the stored copy has no EXIF at all", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const jpeg = yield* jpegWithGps()
          const before = yield* Effect.promise(() => sharp(jpeg).metadata())
          expect(before.exif?.toString("latin1")).toContain("PostlineCam")
          const created = yield* upload({ token, teamId, bytes: jpeg, fileName: "where.jpg" })
          expect(created.status).toBe(201)
          expect(created.body).toMatchObject({ contentType: "image/jpeg", width: 64, height: 48, sha256: sha256(jpeg) })
          const stored = yield* download(created.body.url)
          const after = yield* Effect.promise(() => sharp(stored.bytes).metadata())
          expect(after.exif).toBeUndefined()
          expect(Buffer.from(stored.bytes).includes("PostlineCam")).toBe(false)
        }))

      it.effect("a HEIC photo (made by libheif's heif-enc from a JPEG with GPS): stored as an upright JPEG without metadata", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const heic = readFileSync(new URL("./fixtures/sample.heic", import.meta.url))
          expect(heic.includes("PostlineCam")).toBe(true)
          const created = yield* upload({ token, teamId, bytes: heic, fileName: "IMG_0001.HEIC", fileType: "image/heic" })
          expect(created.status).toBe(201)
          expect(created.body).toMatchObject({ name: "IMG_0001.HEIC", contentType: "image/jpeg", width: 96, height: 64, sha256: sha256(heic) })
          const stored = yield* download(created.body.url)
          expect(stored.headers.get("content-type")).toBe("image/jpeg")
          expect(Buffer.from(stored.bytes).includes("PostlineCam")).toBe(false)
          const decoded = yield* Effect.promise(() => sharp(stored.bytes).metadata())
          expect({ format: decoded.format, width: decoded.width, height: decoded.height, exif: decoded.exif }).toEqual({
            format: "jpeg",
            width: 96,
            height: 64,
            exif: undefined
          })
        }))

      it.effect("bad forms: no file, two files, a field twice, an unknown field, a bad alt text, JSON: 400 with _tag and message", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const png = yield* noisyPng(8, 8)
          const base = `/v1/teams/${teamId}/assets`
          const noFile = yield* raw({
            method: "POST",
            path: base,
            token,
            headers: { "content-type": "multipart/form-data; boundary=x" },
            body: "--x\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nHello\r\n--x--\r\n"
          })
          expect(noFile).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining("no file") } })
          const part = (name: string, value: string, file = "") =>
            `--x\r\nContent-Disposition: form-data; name="${name}"${file === "" ? "" : `; filename="${file}"`}\r\n\r\n${value}\r\n`
          const form = (body: string) =>
            raw({ method: "POST", path: base, token, headers: { "content-type": "multipart/form-data; boundary=x" }, body: `${body}--x--\r\n` })
          const twoFiles = yield* form(part("file", "GIF89a", "a.gif") + part("file", "GIF89a", "b.gif"))
          expect(twoFiles).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining("one file") } })
          const twice = yield* form(part("name", "One") + part("name", "Two") + part("file", "GIF89a", "a.gif"))
          expect(twice).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining("more than once") } })
          const json = yield* raw({ method: "POST", path: base, token, json: { file: "x" } })
          expect(json.status).toBe(400)
          expect(json.body._tag).toBe("BadRequest")
          const unknownField = yield* upload({ token, teamId, bytes: png, fields: { colour: "red" } })
          expect(unknownField).toMatchObject({ status: 400, body: { _tag: "HttpApiDecodeError" } })
          const blankAlt = yield* upload({ token, teamId, bytes: png, fields: { altText: "   " } })
          expect(blankAlt).toMatchObject({ status: 400, body: { _tag: "HttpApiDecodeError", message: expect.stringContaining("altText") } })
          const sql = yield* SqlClient.SqlClient
          expect(yield* sql`SELECT 1 FROM assets WHERE team_id = ${teamId}`).toEqual([])
        }))

      it.effect("another organization's member gets 404 for the team's uploads, assets and downloads' metadata", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const created = yield* upload({ token, teamId, bytes: yield* noisyPng(10, 10) })
          const stranger = yield* signUp("Eve")
          const theirUpload = yield* upload({ token: stranger.token, teamId, bytes: yield* noisyPng(10, 10) })
          expect(theirUpload).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
          const get = yield* raw({ method: "GET", path: `/v1/teams/${teamId}/assets/${created.body.id}`, token: stranger.token })
          expect(get).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
          const patch = yield* raw({ method: "PATCH", path: `/v1/teams/${teamId}/assets/${created.body.id}`, token: stranger.token, json: { name: "mine" } })
          expect(patch.status).toBe(404)
          const del = yield* raw({ method: "DELETE", path: `/v1/teams/${teamId}/assets/${created.body.id}`, token: stranger.token })
          expect(del.status).toBe(404)
          const list = yield* raw({ method: "GET", path: `/v1/teams/${teamId}/assets`, token: stranger.token })
          expect(list.status).toBe(404)
        }))
    })

    describe("signed URLs", () => {
      it.effect("an altered signature, path, variant or expiry: 403 Forbidden; no signature: 400", () =>
        Effect.gen(function*() {
          const { teamId, token } = yield* mediaTeam
          const { body: asset } = yield* upload({ token, teamId, bytes: yield* noisyPng(20, 20) })
          const { body: other } = yield* upload({ token, teamId, bytes: yield* noisyPng(20, 20) })
          const url = new URL(asset.url, "http://server")
          const variants = [
            url.pathname + url.search.replace(/signature=[^&]+/, "signature=AAAA"),
            url.pathname.replace(asset.id, other.id) + url.search,
            url.pathname + url.search + "&variant=thumbnail",
            url.pathname + url.search.replace(/expires=(\d+)/, (_, e) => `expires=${Number(e) + 1}`)
          ]
          for (const changed of variants) {
            const refused = yield* raw({ method: "GET", path: changed })
            expect(refused).toMatchObject({ status: 403, body: { _tag: "Forbidden" } })
          }
          const unsigned = yield* raw({ method: "GET", path: url.pathname })
          expect(unsigned.status).toBe(400)
        }))
    })

    describe("metadata", () => {
      it.effect("list with filters by folder, kind and text; get; rename, describe and move; move to an unknown folder: 404", () =>
        Effect.gen(function*() {
          const { admin, teamId, token } = yield* mediaTeam
          const folder = yield* admin.client.folders.createFolder({ path: { teamId }, payload: { name: "Summer" } })
          const { body: a } = yield* upload({ token, teamId, bytes: yield* noisyPng(10, 10), fileName: "beach.png", fields: { folderId: folder.id } })
          const { body: b } = yield* upload({ token, teamId, bytes: yield* noisyPng(10, 10), fileName: "city.png", fields: { altText: "Tall beach towers" } })
          const all = yield* admin.client.assets.listAssets({ path: { teamId }, urlParams: { sortBy: "name", sortOrder: "asc" } })
          expect(all.data.map((asset) => asset.name)).toEqual(["beach.png", "city.png"])
          expect(all.total).toBe(2)
          const inFolder = yield* admin.client.assets.listAssets({ path: { teamId }, urlParams: { folderId: folder.id } })
          expect(inFolder.data.map((asset) => asset.id)).toEqual([a.id])
          const videos = yield* admin.client.assets.listAssets({ path: { teamId }, urlParams: { kind: "video" } })
          expect(videos.total).toBe(0)
          const searched = yield* admin.client.assets.listAssets({ path: { teamId }, urlParams: { q: "BEACH" } })
          expect(searched.data.map((asset) => asset.id).sort()).toEqual([a.id, b.id].sort())
          const percent = yield* admin.client.assets.listAssets({ path: { teamId }, urlParams: { q: "%" } })
          expect(percent.total).toBe(0)

          const changed = yield* admin.client.assets.updateAsset({
            path: { teamId, assetId: b.id },
            payload: { name: "skyline.png", altText: "Towers at dusk", folderId: folder.id }
          })
          expect(changed).toMatchObject({ name: "skyline.png", altText: "Towers at dusk", folderId: folder.id })
          const got = yield* admin.client.assets.getAsset({ path: { teamId, assetId: b.id } })
          expect(got).toMatchObject({ name: "skyline.png", folderId: folder.id })
          const cleared = yield* admin.client.assets.updateAsset({ path: { teamId, assetId: b.id }, payload: { altText: null, folderId: null } })
          expect(cleared).toMatchObject({ altText: null, folderId: null })
          const lost = yield* raw({
            method: "PATCH",
            path: `/v1/teams/${teamId}/assets/${b.id}`,
            token,
            json: { folderId: "00000000-0000-4000-8000-000000000000" }
          })
          expect(lost).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        }))

      it.effect("delete: the asset goes, its objects are garbage in the same transaction and the sweep removes them", () =>
        Effect.gen(function*() {
          const { admin, teamId } = yield* mediaTeam
          const { body: asset } = yield* upload({ token: admin.token, teamId, bytes: yield* noisyPng(30, 30) })
          const [keys] = yield* storedKeys(asset.id)
          const storage = yield* MediaStorage
          expect(Option.isSome(yield* storage.size(keys.storage_key))).toBe(true)
          const deleted = yield* admin.client.assets.deleteAsset({ path: { teamId, assetId: asset.id } })
          expect(deleted.id).toBe(asset.id)
          const sql = yield* SqlClient.SqlClient
          const garbage = yield* sql<{ key: string }>`SELECT key FROM storage_garbage ORDER BY key`
          expect(garbage.map(({ key }) => key)).toEqual(expect.arrayContaining([keys.storage_key, keys.thumbnail_key]))
          yield* sweepNow
          expect(Option.isNone(yield* storage.size(keys.storage_key))).toBe(true)
          expect(Option.isNone(yield* storage.size(keys.thumbnail_key!))).toBe(true)
          expect(yield* sql`SELECT 1 FROM storage_garbage WHERE key = ${keys.storage_key}`).toEqual([])
          const gone = yield* download(asset.url)
          expect(gone.status).toBe(404)
          const [{ media_bytes }] = yield* sql<{ media_bytes: string }>`SELECT media_bytes FROM organizations o JOIN teams t
            ON t.organization_id = o.id WHERE t.id = ${teamId}`
          expect(Number(media_bytes)).toBe(0)
        }))
    })

    describe("folders", () => {
      it.effect("a tree: names unique per parent (409), no cycles (409), a non-empty folder cannot be deleted (409)", () =>
        Effect.gen(function*() {
          const { admin, organization, teamId, token } = yield* mediaTeam
          const folders = admin.client.folders
          const top = yield* folders.createFolder({ path: { teamId }, payload: { name: "Campaigns" } })
          expect(top).toMatchObject({ teamId, parentId: null, name: "Campaigns" })
          const child = yield* folders.createFolder({ path: { teamId }, payload: { name: "Spring", parentId: top.id } })
          const grandchild = yield* folders.createFolder({ path: { teamId }, payload: { name: "Week 1", parentId: child.id } })
          // The same name under another parent is fine; under the same parent it is not.
          yield* folders.createFolder({ path: { teamId }, payload: { name: "Spring" } })
          const base = `/v1/teams/${teamId}/folders`
          const duplicate = yield* raw({ method: "POST", path: base, token, json: { name: "Spring", parentId: top.id } })
          expect(duplicate).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
          const duplicateTop = yield* raw({ method: "POST", path: base, token, json: { name: "Campaigns" } })
          expect(duplicateTop.status).toBe(409)
          const cycle = yield* raw({ method: "PATCH", path: `${base}/${top.id}`, token, json: { parentId: grandchild.id } })
          expect(cycle).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("into itself") } })
          const self = yield* raw({ method: "PATCH", path: `${base}/${top.id}`, token, json: { parentId: top.id } })
          expect(self.status).toBe(409)
          const moved = yield* folders.updateFolder({ path: { teamId, folderId: grandchild.id }, payload: { parentId: null, name: "Week one" } })
          expect(moved).toMatchObject({ parentId: null, name: "Week one" })
          const unknownParent = yield* raw({ method: "POST", path: base, token, json: { name: "X", parentId: "00000000-0000-4000-8000-000000000000" } })
          expect(unknownParent).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
          const slash = yield* raw({ method: "POST", path: base, token, json: { name: "a/b" } })
          expect(slash.status).toBe(400)

          const notEmpty = yield* raw({ method: "DELETE", path: `${base}/${top.id}`, token })
          expect(notEmpty).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
          yield* upload({ token, teamId, bytes: yield* noisyPng(10, 10), fields: { folderId: child.id } })
          const withAsset = yield* raw({ method: "DELETE", path: `${base}/${child.id}`, token })
          expect(withAsset.status).toBe(409)
          const removed = yield* folders.deleteFolder({ path: { teamId, folderId: moved.id } })
          expect(removed.id).toBe(moved.id)
          const list = yield* folders.listFolders({ path: { teamId }, urlParams: { parentId: top.id } })
          expect(list.data.map((folder) => folder.name)).toEqual(["Spring"])
          const stranger = yield* signUp("Eve")
          const theirs = yield* raw({ method: "GET", path: `${base}/${top.id}`, token: stranger.token })
          expect(theirs.status).toBe(404)
          const otherTeam = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Other" } })
          const crossTeam = yield* raw({ method: "POST", path: `/v1/teams/${otherTeam.id}/folders`, token, json: { name: "In", parentId: top.id } })
          expect(crossTeam.status).toBe(404)
        }))
    })
  })
}

const quota = 200_000
const SmallQuotaServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map([["MEDIA_QUOTA_BYTES", String(quota)], ["MEDIA_MAX_IMAGE_BYTES", "150000"], ["MEDIA_MAX_VIDEO_BYTES", "200000"]]))
  ))
)

layer(SmallQuotaServer, { excludeTestServices: true })("media limits", (it) => {
  it.effect("an image over MEDIA_MAX_IMAGE_BYTES: 413 PayloadTooLarge, nothing stored", () =>
    Effect.gen(function*() {
      const { teamId, token } = yield* mediaTeam
      const big = yield* noisyPng(250, 250)
      expect(big.length).toBeGreaterThan(150_000)
      const refused = yield* upload({ token, teamId, bytes: big })
      expect(refused).toMatchObject({ status: 413, body: { _tag: "PayloadTooLarge" } })
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql`SELECT 1 FROM assets WHERE team_id = ${teamId}`).toEqual([])
    }))

  it.effect("a presigned upload's declared size counts against the quota until it is completed: past it, 409 QuotaExceeded", () =>
    Effect.gen(function*() {
      const { teamId, token } = yield* mediaTeam
      const start = (size: number) => raw({ method: "POST", path: `/v1/teams/${teamId}/assets/uploads`, token, json: { size } })
      expect((yield* start(150_000)).status).toBe(201)
      const past = yield* start(60_000)
      expect(past).toMatchObject({ status: 409, body: { _tag: "QuotaExceeded", message: expect.stringContaining("open") } })
      expect((yield* start(50_000)).status).toBe(201)
      const sql = yield* SqlClient.SqlClient
      expect((yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM asset_uploads WHERE team_id = ${teamId}`)[0].count).toBe(2)
    }))

  it.effect("a team has at most 20 presigned uploads open: the 21st gets 409 Conflict", () =>
    Effect.gen(function*() {
      const { teamId, token } = yield* mediaTeam
      const start = raw({ method: "POST", path: `/v1/teams/${teamId}/assets/uploads`, token, json: { size: 1000 } })
      for (let i = 0; i < 20; i++) expect((yield* start).status).toBe(201)
      expect(yield* start).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("20 uploads open") } })
    }))

  it.effect("a video of exactly MEDIA_MAX_VIDEO_BYTES is taken as it came; one byte more gets 413", () =>
    Effect.gen(function*() {
      const { teamId, token } = yield* mediaTeam
      const atLimit = mp4Bytes(200_000)
      const taken = yield* upload({ token, teamId, bytes: atLimit, fileName: "clip.mp4" })
      expect(taken).toMatchObject({ status: 201, body: { kind: "video", contentType: "video/mp4", size: 200_000, width: null, thumbnailUrl: null } })
      expect(Buffer.from((yield* download(taken.body.url)).bytes).equals(atLimit)).toBe(true)
      const past = yield* upload({ token, teamId, bytes: mp4Bytes(200_001), fileName: "clip2.mp4" })
      expect(past).toMatchObject({ status: 413, body: { _tag: "PayloadTooLarge", message: expect.stringContaining("200000") } })
    }))

  it.effect("two uploads at once that each fit the quota but not together: exactly one is stored, the other gets 409 QuotaExceeded", () =>
    Effect.gen(function*() {
      const { teamId, token } = yield* mediaTeam
      // About 120 KB each once stored: one fits under 200 KB, two do not.
      const [a, b] = [yield* noisyPng(200, 200), yield* noisyPng(200, 200)]
      const answers = yield* Effect.all([upload({ token, teamId, bytes: a }), upload({ token, teamId, bytes: b })], { concurrency: 2 })
      expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409])
      expect(answers.find((answer) => answer.status === 409)!.body).toEqual({ _tag: "QuotaExceeded", message: expect.stringContaining("quota") })
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ stored: string; media: string }>`SELECT sum(a.stored_bytes)::text AS stored, o.media_bytes::text AS media
        FROM assets a JOIN organizations o ON o.id = a.organization_id WHERE a.team_id = ${teamId} GROUP BY o.media_bytes`
      expect(rows).toHaveLength(1)
      expect(rows[0].stored).toBe(rows[0].media)
      expect(Number(rows[0].media)).toBeLessThanOrEqual(quota)
    }))
})

// A real S3 server that refuses the server's credentials: every write to it fails.
if (testStorageKinds.includes("s3")) {
  const RefusingStorageServer = makeTestServer(
    Logger.minimumLogLevel(LogLevel.None),
    LocalProviders,
    freshTestStorage("s3", s3TestSettings("not-the-secret"))
  )

  layer(RefusingStorageServer, { excludeTestServices: true })("media storage that refuses writes", (it) => {
    it.effect("an upload whose bytes cannot be stored leaves no asset, and its keys wait for the sweep", () =>
      Effect.gen(function*() {
        const { teamId, token } = yield* mediaTeam
        const failed = yield* upload({ token, teamId, bytes: yield* noisyPng(20, 20) })
        expect(failed).toMatchObject({ status: 500, body: { _tag: "InternalError" } })
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT 1 FROM assets WHERE team_id = ${teamId}`).toEqual([])
        const [{ media_bytes }] = yield* sql<{ media_bytes: string }>`SELECT media_bytes FROM organizations o
          JOIN teams t ON t.organization_id = o.id WHERE t.id = ${teamId}`
        expect(Number(media_bytes)).toBe(0)
        // Whatever part of the object reached the store, the sweep will remove it.
        const reserved = yield* sql<{ key: string }>`SELECT key FROM storage_garbage WHERE key LIKE ${`assets/${teamId}/%`}`
        expect(reserved.map(({ key }) => key.split("/").at(-1)).sort()).toEqual(["original.png", "thumbnail.webp"])
      }))
  })
}
