import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { HttpServer } from "@effect/platform"
import Pg from "pg"
import { createUserWithToken, startServer } from "./support/ServerProcess.js"
import { postgresEnv, scopedPostgresDatabase, testDatabaseKind } from "./support/TestDatabase.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

/**
 * An admin who is demoted or removed while creating API keys must keep none
 * of them: the role check and the key's insert are one step against the
 * demotion. Each round races the two and then counts the admin's active keys.
 */

const rounds = 200
const attemptsPerRound = 3

type Send = (who: "owner" | "admin", method: "POST" | "PATCH" | "DELETE", path: string, json?: unknown) => Promise<number>

const race = async (options: {
  readonly send: Send
  readonly organizationId: string
  readonly adminId: string
  readonly activeKeysOfAdmin: () => Promise<number>
  readonly change: "demote" | "remove"
}) => {
  const { adminId, organizationId, send } = options
  const memberPath = `/v1/organizations/${organizationId}/members/${adminId}`
  let survivors = 0
  let created = 0
  for (let round = 0; round < rounds; round++) {
    // The admin starts each round as an admin: made one again after the last round's change.
    if (round > 0) {
      const restored = options.change === "demote"
        ? await send("owner", "PATCH", memberPath, { role: "admin" })
        : await send("owner", "POST", `/v1/organizations/${organizationId}/members`, { email: `${adminId}@race.test`, role: "admin" })
      expect(restored, `round ${round}: restoring the admin`).toBeLessThan(300)
    }
    const [changed, ...attempts] = await Promise.all([
      options.change === "demote"
        ? send("owner", "PATCH", memberPath, { role: "member" })
        : send("owner", "DELETE", memberPath),
      ...Array.from({ length: attemptsPerRound }, (_, i) =>
        send("admin", "POST", `/v1/organizations/${organizationId}/api-keys`, { name: `race ${round}.${i}` }))
    ])
    expect(changed).toBe(200)
    for (const status of attempts) expect([201, 403, 404]).toContain(status)
    created += attempts.filter((status) => status === 201).length
    survivors += await options.activeKeysOfAdmin()
  }
  return { survivors, created }
}

layer(TestServer, { excludeTestServices: true })("an admin demoted or removed while creating API keys", (it) => {
  for (const change of ["demote", "remove"] as const) {
    it.effect(`${change}: keeps no active key in ${rounds} rounds (one process)`, () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const owner = yield* signUp("Owner")
        const admin = yield* signUp("Admin")
        yield* sql`UPDATE users SET email = ${`${admin.user.id}@race.test`} WHERE id = ${admin.user.id}`
        const organization = yield* owner.client.organizations.createOrganization({ payload: { name: "Race" } })
        yield* sql`UPDATE memberships SET role = 'owner' WHERE user_id = ${owner.user.id}`
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${admin.user.id}, ${organization.id}, 'admin')`
        const runtime = yield* Effect.runtime<HttpServer.HttpServer | SqlClient.SqlClient>()
        const tokens = { owner: owner.token, admin: admin.token }
        const send: Send = (who, method, path, json) =>
          Effect.runPromise(Effect.provide(raw({ method, path, token: tokens[who], json }), runtime.context)).then((r) => r.status)
        const activeKeysOfAdmin = () =>
          Effect.runPromise(Effect.provide(
            sql<{ count: number }>`SELECT count(*)::int AS count FROM api_keys
              WHERE created_by_user_id = ${admin.user.id} AND revoked_at IS NULL`,
            runtime.context
          )).then(([row]) => row.count)
        const result = yield* Effect.promise(() =>
          race({ send, organizationId: organization.id, adminId: admin.user.id, activeKeysOfAdmin, change })
        )
        expect(result.survivors).toBe(0)
      }))
  }
})

describe("two server processes on one PostgreSQL database", () => {
  for (const change of ["demote", "remove"] as const) {
    it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
      `${change}: keeps no active key in ${rounds} rounds`,
      () =>
        Effect.gen(function*() {
          const { url } = yield* scopedPostgresDatabase
          const env = postgresEnv(url)
          const owner = yield* createUserWithToken(env)
          const admin = yield* createUserWithToken(env)
          const [first, second] = yield* Effect.all([startServer(env), startServer(env)], { concurrency: 2 })
          const db = yield* Effect.acquireRelease(
            Effect.promise(async () => {
              const client = new Pg.Client({ connectionString: url })
              await client.connect()
              return client
            }),
            (client) => Effect.promise(() => client.end())
          )
          const tokens = { owner: owner.token, admin: admin.token }
          // The owner's requests go to one process, the admin's to the other.
          const send: Send = (who, method, path, json) =>
            fetch(`${who === "owner" ? first.base : second.base}${path}`, {
              method,
              headers: { authorization: `Bearer ${tokens[who]}`, ...(json ? { "content-type": "application/json" } : {}) },
              ...(json ? { body: JSON.stringify(json) } : {})
            }).then(async (response) => (await response.arrayBuffer(), response.status))
          const created = yield* Effect.promise(() =>
            fetch(`${first.base}/v1/organizations`, {
              method: "POST",
              headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
              body: JSON.stringify({ name: "Race" })
            }).then((response) => response.json() as Promise<{ id: string }>)
          )
          yield* Effect.promise(async () => {
            await db.query("UPDATE users SET email = $1 WHERE id = $2", [`${admin.id}@race.test`, admin.id])
            await db.query("UPDATE memberships SET role = 'owner' WHERE user_id = $1", [owner.id])
            await db.query("INSERT INTO memberships (user_id, organization_id, role) VALUES ($1, $2, 'admin')", [admin.id, created.id])
          })
          const activeKeysOfAdmin = () =>
            db.query("SELECT count(*)::int AS count FROM api_keys WHERE created_by_user_id = $1 AND revoked_at IS NULL", [
              admin.id
            ]).then(({ rows }) => rows[0].count as number)
          const result = yield* Effect.promise(() =>
            race({ send, organizationId: created.id, adminId: admin.id, activeKeysOfAdmin, change })
          )
          expect(result.survivors).toBe(0)
          // Some keys were made before the change, so the race was real.
          expect(result.created).toBeGreaterThan(0)
        })
    )
  }
})
