import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { publishingTeam } from "./support/Publishing.js"
import { raw, TestServer } from "./support/TestServer.js"
import { inSeconds } from "./support/Waiting.js"

/**
 * The `reason` of representative refusals (409, 402, 400): the stable code a client acts on, in a body that is
 * exactly `{ _tag, reason, message }`, on either database.
 */

const refusal = (status: number, _tag: string, reason: string) => ({ status, body: { _tag, reason, message: expect.any(String) } })

/** What a test compares of an answer: its status and body. */
const answered = ({ body, status }: { readonly status: number; readonly body: unknown }) => ({ status, body })

layer(TestServer, { excludeTestServices: true })("the reasons of refusals", (it) => {
  it.scoped("publishing: insufficient_credits, spend_cap_reached, already_published, post_not_draft, post_scheduled, post_not_scheduled, idempotency_key_reused", () =>
    Effect.gen(function*() {
      // Mastodon (its fake): a publish to it costs a credit.
      const mastodon = yield* makeMastodonFake()
      const { admin, call, connect, draft, organization, postNow } = yield* publishingTeam(0)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const post = yield* draft("Sent once", [toot.id])
      expect(answered(yield* postNow(post.id, [toot.id]))).toEqual(refusal(402, "PaymentRequired", "insufficient_credits"))

      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET credits_balance = 5 WHERE id = ${organization.id}`
      expect((yield* postNow(post.id, [toot.id])).status).toBe(200)
      const again = yield* postNow(post.id, [toot.id], "again")
      expect(answered(again)).toEqual(refusal(409, "Conflict", "already_published"))
      // A replay is the first answer, reason and all; the key with another request is refused.
      expect(answered(yield* postNow(post.id, [toot.id], "again"))).toEqual(answered(again))
      const other = yield* draft("Another")
      expect(answered(yield* postNow(other.id, [toot.id], "again"))).toEqual(refusal(400, "BadRequest", "idempotency_key_reused"))
      expect(answered(yield* call("PATCH", `/posts/${post.id}`, { content: "Changed" }))).toEqual(refusal(409, "Conflict", "post_not_draft"))
      expect(answered(yield* call("DELETE", `/posts/${post.id}`))).toEqual(refusal(409, "Conflict", "post_not_draft"))

      expect(answered(yield* call("POST", `/posts/${other.id}/unschedule`))).toEqual(refusal(409, "Conflict", "post_not_scheduled"))
      const scheduled = yield* call("POST", `/posts/${other.id}/schedule`, { socialAccountIds: [toot.id], scheduledAt: inSeconds(3600) })
      expect(scheduled.status).toBe(200)
      expect(answered(yield* postNow(other.id, [toot.id]))).toEqual(refusal(409, "Conflict", "post_scheduled"))
      expect(answered(yield* call("POST", `/posts/${other.id}/schedule`, { socialAccountIds: [toot.id], slot: "next" })))
        .toEqual(refusal(400, "BadRequest", "no_posting_slots"))

      const capped = yield* raw({
        method: "PATCH",
        path: `/v1/organizations/${organization.id}/billing/spend-cap`,
        token: admin.token,
        json: { monthlyCredits: 1 }
      })
      expect(capped.status).toBe(200)
      const third = yield* draft("Past the cap")
      expect(answered(yield* postNow(third.id, [toot.id]))).toEqual(refusal(402, "PaymentRequired", "spend_cap_reached"))
      expect(mastodon.statuses).toHaveLength(1)
    }))

  it.scoped("the team's and the organization's: folder_name_taken, folder_cycle, folder_not_empty, last_admin_or_owner, invalid_cursor", () =>
    Effect.gen(function*() {
      const { admin, call, organization } = yield* publishingTeam(0)
      const parent = yield* call("POST", "/folders", { name: "Parent" })
      expect(parent.status).toBe(201)
      expect(answered(yield* call("POST", "/folders", { name: "Parent" }))).toEqual(refusal(409, "Conflict", "folder_name_taken"))
      const child = yield* call("POST", "/folders", { name: "Child", parentId: parent.body.id })
      expect(child.status).toBe(201)
      expect(answered(yield* call("PATCH", `/folders/${parent.body.id}`, { parentId: child.body.id })))
        .toEqual(refusal(409, "Conflict", "folder_cycle"))
      expect(answered(yield* call("DELETE", `/folders/${parent.body.id}`))).toEqual(refusal(409, "Conflict", "folder_not_empty"))

      const demoted = yield* raw({
        method: "PATCH",
        path: `/v1/organizations/${organization.id}/members/${admin.user.id}`,
        token: admin.token,
        json: { role: "member" }
      })
      expect(answered(demoted)).toEqual(refusal(409, "Conflict", "last_admin_or_owner"))
      expect(answered(yield* call("GET", "/posts?cursor=abc"))).toEqual(refusal(400, "BadRequest", "invalid_cursor"))
    }))
})
