import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync, statSync } from "node:fs"
import { request } from "node:http"
import * as Path from "node:path"
import { makeLocalServer } from "./support/LocalServer.js"
import { noisyPng } from "./support/Media.js"
import { callsAs, createUserWithToken, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "./support/TestDatabase.js"
import { eventually } from "./support/Waiting.js"

/** The files under `dir` (a MEDIA_TMP_DIR), as paths relative to it. */
const filesUnder = (dir: string) =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => Path.relative(dir, Path.join(entry.parentPath, entry.name)))

const teamOf = (server: ServerProcess, token: string) =>
  Effect.gen(function*() {
    const call = callsAs(server, token)
    const organization = yield* call("POST", "/v1/organizations", { name: "Acme" })
    const team = yield* call("POST", "/v1/teams", { organizationId: organization.body.id, name: "Social" })
    expect(team.status, team.text).toBe(201)
    return team.body.id as string
  })

/** Raw PUT of `bytes` to `url` (a path on `server` or absolute). */
const put = (server: ServerProcess, url: string, bytes: Uint8Array, headers: Record<string, string>) =>
  Effect.promise(() =>
    fetch(url.startsWith("/") ? `${server.base}${url}` : url, { method: "PUT", body: bytes, headers }).then((response) => response.status)
  )

/**
 * An S3 server enough for the media storage (path-style PUT, HEAD, GET, DELETE, ListObjectsV2), without checking
 * signatures; while `holdReads` is set, it never answers a GET of an upload's object, and counts them.
 */
const fakeS3 = (bucket: string) =>
  Effect.gen(function*() {
    const objects = new Map<string, Buffer>()
    const state = { holdReads: true, heldReads: 0 }
    const base = yield* makeLocalServer((incoming, response) => {
      const url = new URL(incoming.url ?? "/", "http://s3.invalid")
      const key = decodeURIComponent(url.pathname.slice(`/${bucket}/`.length))
      if (incoming.method === "GET" && key === "") {
        const prefix = url.searchParams.get("prefix") ?? ""
        const listed = [...objects].filter(([name]) => name.startsWith(prefix))
        response.writeHead(200, { "content-type": "application/xml" }).end(
          `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
            `<Name>${bucket}</Name><Prefix>${prefix}</Prefix><KeyCount>${listed.length}</KeyCount><MaxKeys>1000</MaxKeys>` +
            `<IsTruncated>false</IsTruncated>${listed.map(([name, bytes]) => `<Contents><Key>${name}</Key><Size>${bytes.length}</Size></Contents>`).join("")}` +
            `</ListBucketResult>`
        )
        return
      }
      const object = objects.get(key)
      switch (incoming.method) {
        case "PUT": {
          const chunks: Array<Buffer> = []
          incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
          incoming.on("end", () => (objects.set(key, Buffer.concat(chunks)), response.writeHead(200, { etag: "\"x\"" }).end()))
          return
        }
        case "HEAD":
          return void (object ? response.writeHead(200, { "content-length": object.length }).end() : response.writeHead(404).end())
        case "GET":
          if (state.holdReads && key.startsWith("uploads/")) return void state.heldReads++
          return void (object
            ? response.writeHead(200, { "content-length": object.length }).end(object)
            : response.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code></Error>"))
        case "DELETE":
          objects.delete(key)
          return void response.writeHead(204).end()
        default:
          return void response.writeHead(405).end()
      }
    })
    return { base, objects, state }
  })

describe("a server killed with SIGKILL during a presigned upload", () => {
  it.scopedLive("during the PUT: the restarted server removes the dead process's temporary files, and the upload is sent again and completed", () =>
    Effect.gen(function*() {
      const tmp = yield* scopedTempDir("postline-media-tmp-")
      const env = { ...(yield* freshDatabaseEnv), MEDIA_TMP_DIR: tmp, MEDIA_LEASE_SECONDS: "1" }
      const { token } = yield* createUserWithToken(env)
      const first = yield* startServer(env)
      const teamId = yield* teamOf(first, token)
      const png = yield* noisyPng(300, 300)
      const started = yield* callsAs(first, token)("POST", `/v1/teams/${teamId}/assets/uploads`, { size: png.length })
      expect(started.status, started.text).toBe(201)
      const { uploadId, url, headers } = started.body

      // Half the bytes sent, the rest held back: the server has claimed the upload and spools to a temporary file.
      const halfSent = request(`${first.base}${url}`, { method: "PUT", headers })
      halfSent.on("error", () => {}) // the server dies under it
      halfSent.write(png.subarray(0, png.length / 2))
      const spooled = () => filesUnder(tmp).filter((file) => file.endsWith("upload") && statSync(Path.join(tmp, file)).size > 0)
      expect(yield* eventually(Effect.sync(spooled), (files) => files.length > 0)).toHaveLength(1)
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)
      halfSent.destroy()

      const second = yield* startServer(env)
      // Its files are no live process's: gone (the new process's own folder is empty).
      const left = yield* eventually(Effect.sync(() => filesUnder(tmp)), (files) => files.length === 0)
      expect(left).toEqual([])
      // 409 while the dead process's claim lasts (MEDIA_LEASE_SECONDS), then the bytes are taken again.
      const resent = yield* eventually(put(second, url, png, headers), (status) => status !== 409)
      expect(resent).toBe(204)
      const completed = yield* callsAs(second, token)("POST", `/v1/teams/${teamId}/assets/uploads/${uploadId}/complete`)
      expect(completed.status, completed.text).toBe(201)
    }))

  it.scopedLive("during completion (S3): after a restart the upload completes, and another one is cancelled, its object removed", () =>
    Effect.gen(function*() {
      const s3 = yield* fakeS3("crash-test")
      const env = {
        ...(yield* freshDatabaseEnv),
        MEDIA_TMP_DIR: yield* scopedTempDir("postline-media-tmp-"),
        MEDIA_LEASE_SECONDS: "1",
        S3_BUCKET: "crash-test",
        S3_ENDPOINT: s3.base,
        S3_ACCESS_KEY_ID: "tester",
        S3_SECRET_ACCESS_KEY: "testing"
      }
      const { token } = yield* createUserWithToken(env)
      const first = yield* startServer(env)
      const teamId = yield* teamOf(first, token)
      const uploads = yield* Effect.forEach([1, 2], () =>
        Effect.gen(function*() {
          const png = yield* noisyPng(50, 50)
          const started = yield* callsAs(first, token)("POST", `/v1/teams/${teamId}/assets/uploads`, { size: png.length })
          expect(started.status, started.text).toBe(201)
          expect(started.body.url.startsWith(`${s3.base}/crash-test/uploads/`)).toBe(true)
          expect(yield* put(first, started.body.url, png, started.body.headers)).toBe(200)
          return started.body.uploadId as string
        }))
      const [completedId, cancelledId] = uploads as [string, string]

      // Both completions claimed, each reading its object from the bucket, which holds the reads: then the kill.
      for (const id of uploads) {
        void fetch(`${first.base}/v1/teams/${teamId}/assets/uploads/${id}/complete`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` }
        }).catch(() => {})
      }
      yield* eventually(Effect.sync(() => s3.state.heldReads), (reads) => reads >= 2)
      expect(s3.state.heldReads).toBe(2)
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)
      s3.state.holdReads = false

      const second = yield* startServer(env)
      const call = callsAs(second, token)
      const completed = yield* eventually(
        call("POST", `/v1/teams/${teamId}/assets/uploads/${completedId}/complete`),
        ({ status }) => status !== 409
      )
      expect(completed.status, completed.text).toBe(201)
      const cancelled = yield* eventually(call("DELETE", `/v1/teams/${teamId}/assets/uploads/${cancelledId}`), ({ status }) => status !== 409)
      expect(cancelled.status, cancelled.text).toBe(204)
      expect(s3.objects.has(`uploads/${teamId}/${cancelledId}`)).toBe(false)
      expect((yield* call("POST", `/v1/teams/${teamId}/assets/uploads/${cancelledId}/complete`)).status).toBe(404)
    }))
})
