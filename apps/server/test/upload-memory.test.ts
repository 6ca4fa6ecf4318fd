import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { openAsBlob } from "node:fs"
import { open } from "node:fs/promises"
import * as Path from "node:path"
import { noisyPng } from "./support/Media.js"
import { callsAs, createUserWithToken, memoryOf, startFlags, startServer, watchMemory } from "./support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "./support/TestDatabase.js"

const MiB = 1024 * 1024

/** MEDIA_MAX_VIDEO_BYTES itself (300 MiB): the largest video the server takes. */
const videoSize = 300 * MiB

/** How much the server's RSS may rise above its warm level while it takes the whole video. */
const allowedRise = 64 * MiB

/**
 * Writes a file that file-type reads as video/mp4, `size` bytes long: an `ftyp` box (major brand isom,
 * compatible isom and mp42), then one `mdat` box of random bytes to the end. Written 1 MiB at a time and hashed
 * as it goes, never held whole; answers its SHA-256.
 */
const writeMp4 = (path: string, size: number) =>
  Effect.promise(async () => {
    const hash = createHash("sha256")
    const file = await open(path, "wx", 0o600)
    try {
      const head = Buffer.alloc(32)
      head.writeUInt32BE(24, 0)
      head.write("ftypisom", 4, "latin1")
      head.writeUInt32BE(0x200, 12)
      head.write("isommp42", 16, "latin1")
      head.writeUInt32BE(size - 24, 24)
      head.write("mdat", 28, "latin1")
      hash.update(head)
      await file.write(head)
      for (let left = size - head.length; left > 0;) {
        const chunk = randomBytes(Math.min(MiB, left))
        hash.update(chunk)
        await file.write(chunk)
        left -= chunk.length
      }
    } finally {
      await file.close()
    }
    return hash.digest("hex")
  })

/** A multipart upload of the file at `path`, read from disk as fetch sends it (a file-backed Blob). */
const uploadFile = (base: string, token: string, teamId: string, path: string, type: string) =>
  Effect.promise(async () => {
    const form = new FormData()
    form.append("file", await openAsBlob(path, { type }), Path.basename(path))
    const response = await fetch(`${base}/v1/teams/${teamId}/assets`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form,
      signal: AbortSignal.timeout(100_000)
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? null : JSON.parse(text) }
  })

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

describe("a 300 MB video uploaded to the server process", () => {
  it.scopedLive("is streamed to disk: the server's RSS rises by at most 64 MB, under pnpm start's heap limit", () =>
    Effect.gen(function*() {
      expect(startFlags).toContain("--max-old-space-size=128")
      const database = yield* freshDatabaseEnv
      const mediaDir = yield* scopedTempDir("postline-media-")
      // The server spools uploads into the system's temporary folder: its own, so that nothing is left behind.
      const serverTmp = yield* scopedTempDir("postline-upload-tmp-")
      const files = yield* scopedTempDir("postline-upload-memory-")
      const { token } = yield* createUserWithToken(database)
      // A loaded machine sends the 300 MB in more than the 30 s a request may take by default: this test is of memory.
      const server = yield* startServer({ ...database, MEDIA_DIR: mediaDir, TMPDIR: serverTmp, HTTP_REQUEST_TIMEOUT_MS: "600000" })
      const pid = server.child.pid!
      const call = callsAs(server, token)
      const organization = yield* call("POST", "/v1/organizations", { name: "Uploads" })
      const team = yield* call("POST", "/v1/teams", { organizationId: organization.body.id, name: "Video" })
      expect(team.status).toBe(201)
      const teamId: string = team.body.id

      // Warm-up: an image (which loads sharp and runs the upload path once), then a 16 MB video through the same
      // path as the big one, so that the JIT-compiled code and V8's young generation are at their working size
      // before the baseline; then a pause for the garbage collector to settle.
      const pngPath = Path.join(files, "warm-up.png")
      const png = yield* noisyPng(600, 400)
      yield* Effect.promise(() => open(pngPath, "wx").then((file) => file.writeFile(png).finally(() => file.close())))
      const image = yield* uploadFile(server.base, token, teamId, pngPath, "image/png")
      expect(image).toMatchObject({ status: 201, body: { kind: "image", sha256: sha256(png) } })
      const smallPath = Path.join(files, "warm-up.mp4")
      const smallSha = yield* writeMp4(smallPath, 16 * MiB)
      const small = yield* uploadFile(server.base, token, teamId, smallPath, "video/mp4")
      expect(small).toMatchObject({ status: 201, body: { kind: "video", size: 16 * MiB, sha256: smallSha } })

      const videoPath = Path.join(files, "large.mp4")
      const videoSha = yield* writeMp4(videoPath, videoSize)
      yield* Effect.sleep("1 second")
      const baseline = memoryOf(pid).rss

      const watch = watchMemory(pid, 50)
      const startedAt = performance.now()
      const uploaded = yield* uploadFile(server.base, token, teamId, videoPath, "video/mp4")
      const seconds = (performance.now() - startedAt) / 1000
      const memory = watch.stop()

      expect(uploaded).toMatchObject({
        status: 201,
        body: { kind: "video", contentType: "video/mp4", size: videoSize, sha256: videoSha, name: "large.mp4" }
      })
      const rise = memory.peak - baseline
      console.log(
        `300 MB upload in ${seconds.toFixed(1)} s: RSS ${(baseline / MiB).toFixed(0)} MB before, peak ${(memory.peak / MiB).toFixed(0)} MB ` +
          `(polled every 50 ms: ${(memory.polledPeak / MiB).toFixed(0)} MB, ${memory.samples.length} samples), rise ${(rise / MiB).toFixed(1)} MB`
      )
      expect(memory.samples.length).toBeGreaterThan(5)
      expect(rise).toBeLessThanOrEqual(allowedRise)
    }))
})
