import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import type { OrganizationId, PostId, SocialAccountId } from "@postline/domain"
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { withSystemActor } from "../src/Access/Authorization.js"
import { CreditsRepo } from "../src/Credits/Repo.js"
import { publishingTeam } from "./support/Publishing.js"
import { TestServer } from "./support/TestServer.js"

const ledgerOf = (organizationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ kind: string; amount: number; balanceAfter: number; socialAccountId: string | null }>`SELECT kind,
        amount::float8 AS amount, balance_after::float8 AS "balanceAfter", social_account_id AS "socialAccountId"
      FROM credit_transactions WHERE organization_id = ${organizationId} ORDER BY balance_after DESC`)

layer(Layer.provideMerge(CreditsRepo.Default, TestServer), { excludeTestServices: true })("credits charge", (it) => {
  describe("charge", () => {
    it.effect("takes every read's credits from the available credits, one analytics entry per account, or none", () =>
      Effect.gen(function*() {
        const { credit, organization } = yield* publishingTeam(5)
        const sql = yield* SqlClient.SqlClient
        const credits = yield* CreditsRepo
        const organizationId = organization.id as OrganizationId
        const [a, b] = [randomUUID() as SocialAccountId, randomUUID() as SocialAccountId]
        // Held credits are not available: 5 - 1 = 4.
        yield* sql`UPDATE organizations SET reserved_credits = 1 WHERE id = ${organizationId}`
        const short = yield* Effect.flip(withSystemActor(credits.charge(organizationId, [
          { socialAccountId: a, amount: 2 },
          { socialAccountId: b, amount: 3 }
        ])))
        expect(short).toMatchObject({
          _tag: "PaymentRequired",
          message: `Reading analytics needs 5 credits and the organization has 4 available. Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${organizationId} --amount 1\``
        })
        expect(yield* ledgerOf(organizationId)).toEqual([])
        expect(yield* credit).toEqual({ balance: 5, reserved: 1, available: 4 })

        yield* withSystemActor(credits.charge(organizationId, [
          { socialAccountId: a, amount: 1 },
          { socialAccountId: b, amount: 3 },
          { socialAccountId: b, amount: 0 }
        ]))
        expect(yield* credit).toEqual({ balance: 1, reserved: 1, available: 0 })
        expect(yield* ledgerOf(organizationId)).toEqual([
          { kind: "analytics", amount: 1, balanceAfter: 4, socialAccountId: a },
          { kind: "analytics", amount: 3, balanceAfter: 1, socialAccountId: b }
        ])
        // Free reads need no credits.
        yield* withSystemActor(credits.charge(organizationId, [{ socialAccountId: a, amount: 0 }]))
        expect(yield* credit).toEqual({ balance: 1, reserved: 1, available: 0 })
      }))
  })

  describe("settle", () => {
    const spentThisMonth = (organizationId: OrganizationId) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ spent: number }>`SELECT (CASE WHEN spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
            THEN month_spent ELSE 0 END)::float8 AS spent FROM organizations WHERE id = ${organizationId}`.pipe(
          Effect.map(([row]) => row!.spent)
        ))

    it.effect("a release gives its credits back to this month's spend only when the hold was made this month", () =>
      Effect.gen(function*() {
        const { organization } = yield* publishingTeam(20)
        const sql = yield* SqlClient.SqlClient
        const credits = yield* CreditsRepo
        const organizationId = organization.id as OrganizationId
        const holdOf = (amount: number) => ({
          postId: randomUUID() as PostId,
          socialAccountId: randomUUID() as SocialAccountId,
          amount
        })
        const old = holdOf(3)
        const recent = holdOf(2)
        yield* withSystemActor(credits.reserve(organizationId, [old]))
        // A month passes: the hold was last month's, and so was its spend.
        yield* sql`UPDATE credit_transactions SET created_at = created_at - interval '40 days'
          WHERE organization_id = ${organizationId} AND post_id = ${old.postId}`
        yield* sql`UPDATE organizations SET spend_month = (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date
          WHERE id = ${organizationId}`
        expect(yield* spentThisMonth(organizationId)).toBe(0)

        yield* withSystemActor(credits.reserve(organizationId, [recent]))
        expect(yield* spentThisMonth(organizationId)).toBe(2)
        // Last month's hold released: this month's spend stays.
        yield* withSystemActor(credits.settle(organizationId, old, "release"))
        expect(yield* spentThisMonth(organizationId)).toBe(2)
        // This month's hold released: given back.
        yield* withSystemActor(credits.settle(organizationId, recent, "release"))
        expect(yield* spentThisMonth(organizationId)).toBe(0)
        expect((yield* ledgerOf(organizationId)).map(({ kind }) => kind).sort()).toEqual(["release", "release", "reserve", "reserve"])
      }))

    it.effect("finds a hold's reserve entry through its index, not by reading the organization's ledger", () =>
      Effect.gen(function*() {
        const { organization } = yield* publishingTeam(20)
        const sql = yield* SqlClient.SqlClient
        // CreditsRepo's heldThisMonth, planned as if the ledger were too big to read whole.
        const plan = yield* sql.withTransaction(Effect.zipRight(
          sql`SET LOCAL enable_seqscan = off`,
          sql<{ "QUERY PLAN": string }>`EXPLAIN SELECT date_trunc('month', created_at AT TIME ZONE 'UTC')::date
              = date_trunc('month', now() AT TIME ZONE 'UTC')::date AS "thisMonth"
            FROM credit_transactions WHERE organization_id = ${organization.id} AND kind = 'reserve'
              AND post_id = ${randomUUID()} AND social_account_id = ${randomUUID()}
            ORDER BY created_at DESC LIMIT 1`
        ))
        const text = plan.map((row) => row["QUERY PLAN"]).join("\n")
        expect(text).toMatch(/Index (Only )?Scan Backward using credit_transactions_reserve on credit_transactions/)
        expect(text).not.toContain("Sort")
      }))
  })
})
