import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import type { OrganizationId, PostId, SocialAccountId } from "@postline/domain"
import { ConfigProvider, Effect, Exit, Layer, Logger, LogLevel } from "effect"
import { randomUUID } from "node:crypto"
import { withSystemActor } from "../src/Access/Authorization.js"
import { BillingSettings } from "../src/Billing/Settings.js"
import { CreditsRepo } from "../src/Credits/Repo.js"
import { publishEnv, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { callsAs, createUserWithToken, startServer } from "./support/ServerProcess.js"
import { makeStripeFake, signedEvent, subscriptionObject } from "./support/StripeFake.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"
import { makeTestServer, raw } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

/**
 * Overage: a subscribed organization whose plan has a metered price buys the credits a spend lacks, and the
 * server reports them to Stripe's meter. Over the real HTTP stack, on both databases. No Stripe server can run
 * here: the server's `stripe` SDK talks to an HTTP-level fake (support/StripeFake.ts), which records the meter
 * events; the subscription comes with signed webhook events, checked for real.
 */

const stripe = await makeStripeFake()

const providerOf = (settings: Record<string, string>) =>
  ConfigProvider.fromMap(new Map(Object.entries(settings))).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))

// What the server logs from WARN up.
const logged: Array<{ readonly level: string; readonly message: string }> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ logLevel, message }) => void logged.push({ level: logLevel.label, message: String(message) }))
)

/** What was logged since `from` (an earlier `logged.length`), at `level`. */
const loggedSince = (from: number, level: string) => logged.slice(from).filter((line) => line.level === level)

// CreditsRepo beside the server: live analytics reads spend through its charge, which these tests call directly.
const serverWith = (settings: Record<string, string>) =>
  Layer.provideMerge(CreditsRepo.Default, makeTestServer(Layer.merge(capturingLogger, Logger.minimumLogLevel(LogLevel.Warning)))).pipe(
    Layer.provide(Layer.setConfigProvider(providerOf(settings)))
  )

// Publishing to a webhook account costs three credits here.
const costs = { CREDIT_COSTS: JSON.stringify({ webhook: 3 }) }

const deliver = (event: Parameters<typeof signedEvent>[0]) => {
  const { body, signature } = signedEvent(event)
  return raw({
    method: "POST",
    path: "/v1/billing/webhooks/stripe",
    headers: { "content-type": "application/json", "stripe-signature": signature },
    body
  })
}

/** Stripe's `customer.subscription.updated` of the plan, in `status`, with its metered item unless `metered` is false. */
const subscriptionEvent = (subscription: {
  readonly customerId: string
  readonly subscriptionId: string
  readonly status: string
  readonly metered: boolean
  readonly created: number
}) => ({
  id: `evt_${randomUUID()}`,
  type: "customer.subscription.updated",
  created: subscription.created,
  object: subscriptionObject({
    id: subscription.subscriptionId,
    customer: subscription.customerId,
    status: subscription.status,
    startDate: subscription.created - 60,
    items: [
      { id: "si_plan", price: "price_plan", periodEnd: subscription.created + 86_400 },
      ...(subscription.metered ? [{ id: "si_metered", price: "price_metered", periodEnd: subscription.created + 86_400 }] : [])
    ]
  })
})

interface Entry {
  readonly kind: string
  readonly amount: number
  readonly balanceAfter: number
  readonly reservedAfter: number
  readonly note: string | null
}

const overageNote = "Bought beyond the plan's credits: billed as metered usage of the plan"

/**
 * An admin's organization with `credits`, a Stripe customer and a webhook account that costs three credits a
 * publish; `subscribe` sets its subscription as Stripe's events do.
 */
const overageTeam = (credits: number) =>
  Effect.gen(function*() {
    const team = yield* publishingTeam(credits)
    const organizationId = team.organization.id as OrganizationId
    const receiver = yield* makeWebhookReceiver
    const hook = yield* team.connect({ provider: "webhook", url: receiver.url })
    // The portal makes the organization's customer, as a checkout would.
    yield* team.admin.client.billing.createPortal({ path: { organizationId }, payload: { returnUrl: "https://app.example/" } })
    const account = Effect.map(team.admin.client.billing.getBilling({ path: { organizationId } }), (billing) => billing.account!)
    const customerId = (yield* account).paymentCustomerId!
    const subscriptionId = `sub_${randomUUID()}`
    let created = Math.floor(Date.now() / 1000)
    /** Stripe's event of the subscription in `status`, with the plan's metered item unless `metered` is false. */
    const subscribe = (status: string, metered = true) =>
      // Each event later than the one before: an older one would change nothing.
      deliver(subscriptionEvent({ customerId, subscriptionId, status, metered, created: ++created }))
    /** One publish to the webhook account: three credits. */
    const publish = Effect.flatMap(team.draft(`Post ${randomUUID()}`), (post) => team.postNow(post.id, [hook.id]))
    /** Publishing's estimate of that publish: what it would cost, and whether it would go. */
    const estimate = Effect.flatMap(team.draft(`Post ${randomUUID()}`), (post) =>
      Effect.map(team.call("POST", `/posts/${post.id}/estimate`, { socialAccountIds: [hook.id] }), (answer) => answer.body))
    const ledger = Effect.map(
      raw({ method: "GET", path: `/v1/organizations/${organizationId}/credits/transactions?limit=100`, token: team.admin.token }),
      (response) => (response.body.data as ReadonlyArray<Entry>).map(({ amount, balanceAfter, kind, note, reservedAfter }) => ({ kind, amount, balanceAfter, reservedAfter, note }))
    )
    const sql = yield* SqlClient.SqlClient
    // The customer's: a row outlives its organization.
    const usage = sql<
      { id: string; customerId: string; credits: number; reported: boolean; failures: number; failed: boolean; lastError: string | null }
    >`SELECT id::text AS id, customer_id AS "customerId", credits::float8 AS credits, reported_at IS NOT NULL AS reported,
        failures, failed_at IS NOT NULL AS failed, last_error AS "lastError"
      FROM metered_usage WHERE customer_id = ${customerId} ORDER BY created_at, id`
    /** The meter events the server sent Stripe for this organization's customer, replays included. */
    const meterCalls = () => stripe.meterCalls.filter((call) => call.params.get("payload[stripe_customer_id]") === customerId)
    return { ...team, organizationId, customerId, account, subscribe, publish, estimate, ledger, usage, meterCalls }
  })

/** The ledger by kind and amount, whatever the order of entries made in one transaction (they share a time). */
const sortedKinds = (entries: ReadonlyArray<Entry>) => entries.map(({ amount, kind }) => `${kind} ${amount}`).sort()

const neverNegative = (entries: ReadonlyArray<Entry>) =>
  entries.every((entry) => entry.reservedAfter >= 0 && entry.balanceAfter - entry.reservedAfter >= 0)

describe("BILLING_PLAN_METER_EVENT", () => {
  const stripeSettings = {
    STRIPE_SECRET_KEY: "sk_test_postline",
    STRIPE_WEBHOOK_SECRET: "whsec_x",
    BILLING_CREDIT_PACKS: `{"1000":"price_pack_1000"}`,
    BILLING_PLAN_PRICE_ID: "price_plan"
  }
  const settingsWith = (settings: Record<string, string>) =>
    Effect.exit(Effect.provide(BillingSettings, BillingSettings.Default.pipe(Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map(Object.entries(settings)))
    )))))

  layer(Layer.empty)((it) => {
    it.effect("goes with BILLING_PLAN_METERED_PRICE_ID, each needing the other; a meter's event name (no spaces, 1 to 100 characters)", () =>
      Effect.gen(function*() {
        const without = yield* settingsWith({ ...stripeSettings, BILLING_PLAN_METERED_PRICE_ID: "price_metered" })
        expect(Exit.isFailure(without)).toBe(true)
        expect(String(without)).toContain(
          "BILLING_PLAN_METERED_PRICE_ID is set, so BILLING_PLAN_METER_EVENT must name the event of the Stripe meter its price bills"
        )
        const alone = yield* settingsWith({ ...stripeSettings, BILLING_PLAN_METER_EVENT: "postline_credits" })
        expect(String(alone)).toContain("needs BILLING_PLAN_METERED_PRICE_ID, the metered price its meter bills")
        for (const name of ["two words", "x".repeat(101)]) {
          const bad = yield* settingsWith({ ...stripeSettings, BILLING_PLAN_METERED_PRICE_ID: "price_metered", BILLING_PLAN_METER_EVENT: name })
          expect(String(bad)).toContain("must be a Stripe meter's event name: 1 to 100 printable characters, no spaces")
        }
        const both = yield* settingsWith({ ...stripeSettings, BILLING_PLAN_METERED_PRICE_ID: "price_metered", BILLING_PLAN_METER_EVENT: "postline_credits" })
        expect(Exit.isSuccess(both) && both.value.plan).toMatchObject({
          _tag: "Some",
          value: { meteredPriceId: "price_metered", meterEvent: "postline_credits" }
        })
        // Empty, as an env file leaves it: none, and neither needs the other.
        expect(Exit.isSuccess(yield* settingsWith({ ...stripeSettings, BILLING_PLAN_METERED_PRICE_ID: "", BILLING_PLAN_METER_EVENT: "" })))
          .toBe(true)
      }))
  })
})

layer(serverWith({ ...costs, ...stripe.settings }), { excludeTestServices: true })("overage with a metered plan (an HTTP-level fake of Stripe)", (it) => {
  it.scoped("a subscribed organization short of credits publishes: the shortfall is bought (overage) and reported to Stripe's meter once", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(1)
      expect(yield* team.estimate).toMatchObject({ total: 3, available: 1, sufficient: false })
      expect((yield* team.subscribe("active")).status).toBe(200)
      // The plan buys what the credits lack: the estimate says it goes.
      expect(yield* team.estimate).toMatchObject({ total: 3, available: 1, sufficient: true })
      expect(yield* team.publish).toMatchObject({ status: 200 })
      expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })
      // Exactly the shortfall, 3 - 1, bought before the hold: its entry shows the hold's credits available.
      const ledger = yield* team.ledger
      expect(sortedKinds(ledger)).toEqual(["overage 2", "reserve 3", "spend 3"])
      expect(ledger.find((entry) => entry.kind === "overage")).toEqual({
        kind: "overage",
        amount: 2,
        balanceAfter: 3,
        reservedAfter: 0,
        note: overageNote
      })
      expect(ledger.find((entry) => entry.kind === "reserve")).toMatchObject({ balanceAfter: 3, reservedAfter: 3 })
      expect(neverNegative(ledger)).toBe(true)

      const [row] = yield* team.usage
      expect(row).toMatchObject({ customerId: team.customerId, credits: 2 })
      const reported = yield* eventually(team.usage, (rows) => rows.every((row) => row.reported))
      expect(reported).toEqual([{ ...row, reported: true }])
      const [call, ...others] = team.meterCalls()
      expect(others).toEqual([])
      expect(Object.fromEntries(call!.params)).toMatchObject({
        event_name: "postline_credits",
        "payload[stripe_customer_id]": team.customerId,
        "payload[value]": "2",
        identifier: row!.id
      })
      expect(Math.abs(Number(call!.params.get("timestamp")) - Date.now() / 1000)).toBeLessThan(300)

      // Another overage, reported after more rounds of the reporter: the first is still reported once.
      expect(yield* team.publish).toMatchObject({ status: 200 })
      const both = yield* eventually(team.usage, (rows) => rows.length === 2 && rows.every((row) => row.reported))
      expect(both.map((row) => row.credits)).toEqual([2, 3])
      expect(team.meterCalls().map((call) => call.params.get("identifier"))).toEqual(both.map((row) => row.id))
      expect(team.meterCalls().map((call) => call.params.get("payload[value]"))).toEqual(["2", "3"])
      expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })
    }))

  it.scoped("two concurrent publishes with no credits: two overages, two rows, two meter events, the totals right", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(0)
      yield* team.subscribe("active")
      const answers = yield* Effect.all([team.publish, team.publish], { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status)).toEqual([200, 200])
      expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })
      const ledger = yield* team.ledger
      expect(sortedKinds(ledger)).toEqual(["overage 3", "overage 3", "reserve 3", "reserve 3", "spend 3", "spend 3"])
      expect(neverNegative(ledger)).toBe(true)
      const rows = yield* eventually(team.usage, (rows) => rows.length === 2 && rows.every((row) => row.reported))
      expect(rows.map((row) => row.credits)).toEqual([3, 3])
      const calls = team.meterCalls()
      expect(calls.map((call) => call.params.get("identifier")).sort()).toEqual(rows.map((row) => row.id).sort())
      expect(calls.reduce((sum, call) => sum + Number(call.params.get("payload[value]")), 0)).toBe(6)
    }))

  it.scoped("no overage while trialing (Stripe bills nothing of a trial, its metered usage neither): 402, nothing written; once active, a live analytics read (a direct charge) buys its shortfall too; a released hold leaves what was bought", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(1)
      yield* team.subscribe("trialing")
      expect(yield* team.account).toMatchObject({ subscriptionStatus: "trialing", paymentMeteredSubscriptionItemId: "si_metered" })
      const credits = yield* CreditsRepo
      const read = withSystemActor(credits.charge(team.organizationId, [{ socialAccountId: randomUUID() as SocialAccountId, amount: 4 }]))
      expect(yield* team.estimate).toMatchObject({ total: 3, available: 1, sufficient: false })
      expect(yield* Effect.flip(read)).toMatchObject({
        _tag: "PaymentRequired",
        message: `Reading analytics needs 4 credits and the organization has 1 available. An admin or owner buys a pack of 1000 or 5000 credits with a checkout: POST /v1/organizations/${team.organizationId}/billing/checkout`
      })
      expect(yield* team.publish).toMatchObject({
        status: 402,
        body: { _tag: "PaymentRequired", message: `Publishing needs 3 credits and the organization has 1 available. An admin or owner buys a pack of 1000 or 5000 credits with a checkout: POST /v1/organizations/${team.organizationId}/billing/checkout` }
      })
      expect(yield* team.ledger).toEqual([])
      expect(yield* team.usage).toEqual([])
      expect(yield* team.credit).toEqual({ balance: 1, reserved: 0, available: 1 })
      expect(team.meterCalls()).toEqual([])

      yield* team.subscribe("active")
      yield* read
      expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })
      expect(sortedKinds(yield* team.ledger)).toEqual(["analytics 4", "overage 3"])
      expect((yield* team.ledger).find((entry) => entry.kind === "overage")).toMatchObject({ balanceAfter: 4, reservedAfter: 0 })

      // A hold bought as overage and then released: the credits were bought, and stay.
      const hold = { postId: randomUUID() as PostId, socialAccountId: randomUUID() as SocialAccountId, amount: 2 }
      yield* withSystemActor(credits.reserve(team.organizationId, [hold]))
      expect(yield* team.credit).toEqual({ balance: 2, reserved: 2, available: 0 })
      yield* withSystemActor(credits.settle(team.organizationId, hold, "release"))
      expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })
      expect(neverNegative(yield* team.ledger)).toBe(true)

      const rows = yield* eventually(team.usage, (rows) => rows.length === 2 && rows.every((row) => row.reported))
      expect(rows.map((row) => row.credits)).toEqual([3, 2])
      expect(team.meterCalls().map((call) => call.params.get("payload[value]"))).toEqual(["3", "2"])
    }))

  it.scoped("a failing meter endpoint (500) leaves the usage unreported; it is reported once Stripe answers again", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(0)
      yield* team.subscribe("active")
      const from = logged.length
      const recover = stripe.failMeterEventsOf(team.customerId)
      expect((yield* team.publish).status).toBe(200)
      // Two refused attempts: the row waits, unreported, for the next.
      yield* eventually(Effect.sync(() => team.meterCalls().length), (calls) => calls >= 2)
      const [waiting] = yield* team.usage
      expect(waiting).toMatchObject({ credits: 3, reported: false })
      expect(waiting!.failures).toBeGreaterThanOrEqual(1)
      recover()
      const [row] = yield* eventually(team.usage, (rows) => rows[0]?.reported === true)
      expect(row).toMatchObject({ id: waiting!.id, reported: true })
      // Every attempt was the same event: Stripe counts one, whichever attempts reached it.
      expect(new Set(team.meterCalls().map((call) => call.params.get("identifier")))).toEqual(new Set([row!.id]))
      expect(sortedKinds(yield* team.ledger)).toEqual(["overage 3", "reserve 3", "spend 3"])
      // Each failed attempt is one warning naming the row, no error: it is tried again.
      expect(loggedSince(from, "WARN").filter((line) => line.message.includes(row!.id)).length).toBeGreaterThanOrEqual(1)
      expect(loggedSince(from, "ERROR")).toEqual([])
    }))

  it.scoped("a report Stripe refuses as invalid (400) fails for good with the reason, logged once as an error, and is never sent again", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(0)
      yield* team.subscribe("active")
      const from = logged.length
      const reason = "The timestamp must be within the past 35 days"
      const accept = stripe.refuseMeterEventsOf(team.customerId, reason)
      expect((yield* team.publish).status).toBe(200)
      const [refused] = yield* eventually(team.usage, (rows) => rows[0]?.failed === true)
      expect(refused).toMatchObject({ credits: 3, reported: false, failed: true, lastError: reason, failures: 1 })
      // Stripe takes the customer's events again: a later overage is reported, the refused one is never claimed again.
      accept()
      expect((yield* team.publish).status).toBe(200)
      const rows = yield* eventually(team.usage, (rows) => rows.length === 2 && rows[1]!.reported)
      expect(rows[0]).toEqual(refused)
      expect(team.meterCalls().map((call) => call.params.get("identifier"))).toEqual([refused!.id, rows[1]!.id])
      const errors = loggedSince(from, "ERROR")
      expect(errors).toHaveLength(1)
      expect(errors[0]!.message).toContain(refused!.id)
      expect(errors[0]!.message).toContain(reason)
      expect(loggedSince(from, "WARN").filter((line) => line.message.includes("overage"))).toEqual([])
      expect(sortedKinds(yield* team.ledger)).toEqual(["overage 3", "overage 3", "reserve 3", "reserve 3", "spend 3", "spend 3"])
    }))

  it.scoped("a slow Stripe: a server process leases only as many rows as it can report within their lease, however many wait", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(0)
      yield* team.subscribe("active")
      const sql = yield* SqlClient.SqlClient
      const release = yield* Effect.acquireRelease(Effect.sync(stripe.holdMeterEvents), (release) => Effect.sync(release))
      // Twelve overages waiting at once, as after an outage; the first report is held at Stripe.
      yield* sql`INSERT INTO metered_usage (organization_id, customer_id, credits)
        SELECT ${team.organizationId}, ${team.customerId}, 1 FROM generate_series(1, 12)`
      yield* eventually(Effect.sync(() => team.meterCalls().length), (calls) => calls >= 1)
      const [leases] = yield* sql<{ leased: number; seconds: number }>`SELECT count(*)::int AS leased,
          extract(epoch FROM min(due_at) - now())::float8 AS seconds
        FROM metered_usage WHERE customer_id = ${team.customerId} AND reported_at IS NULL AND due_at > now()`
      // Reported one after another, each call at most about 35 s (the Stripe client's 10 s timeout × 3 attempts, and
      // the waits between): the last leased row is reported before its lease lapses, and no other process reports it.
      expect(leases!.leased).toBeGreaterThanOrEqual(1)
      expect(leases!.leased * 35).toBeLessThanOrEqual(leases!.seconds)
      release()
      const rows = yield* eventually(team.usage, (rows) => rows.every((row) => row.reported))
      expect(rows).toHaveLength(12)
      expect(team.meterCalls().map((call) => call.params.get("identifier")).sort()).toEqual(rows.map((row) => row.id).sort())
    }))

  it.scoped("a deleted organization's usage stays its customer's: the row keeps the customer, without the organization, and is reported", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(0)
      yield* team.subscribe("active")
      const recover = stripe.failMeterEventsOf(team.customerId)
      expect((yield* team.publish).status).toBe(200)
      yield* eventually(Effect.sync(() => team.meterCalls().length), (calls) => calls >= 1)
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM organizations WHERE id = ${team.organizationId}`
      const [kept] = yield* sql<{ organizationId: string | null }>`SELECT organization_id AS "organizationId"
        FROM metered_usage WHERE customer_id = ${team.customerId}`
      expect(kept).toEqual({ organizationId: null })
      recover()
      const [row] = yield* eventually(team.usage, (rows) => rows[0]?.reported === true)
      expect(row).toMatchObject({ customerId: team.customerId, credits: 3, reported: true })
      expect(team.meterCalls().at(-1)!.params.get("identifier")).toBe(row!.id)
    }))

  it.scoped("no overage without an active subscription with the metered item: 402 as before, nothing written", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(1)
      const credits = yield* CreditsRepo
      const refused = {
        status: 402,
        body: { _tag: "PaymentRequired", message: `Publishing needs 3 credits and the organization has 1 available. An admin or owner buys a pack of 1000 or 5000 credits with a checkout: POST /v1/organizations/${team.organizationId}/billing/checkout` }
      }
      const nothingWritten = Effect.gen(function*() {
        expect(yield* team.ledger).toEqual([])
        expect(yield* team.usage).toEqual([])
        expect(yield* team.credit).toEqual({ balance: 1, reserved: 0, available: 1 })
        expect(team.meterCalls()).toEqual([])
      })
      // Never subscribed.
      expect(yield* team.publish).toMatchObject(refused)
      yield* nothingWritten
      // Subscribed to a plan without the metered item.
      yield* team.subscribe("active", false)
      expect((yield* team.account).subscriptionStatus).toBe("active")
      expect(yield* team.publish).toMatchObject(refused)
      yield* nothingWritten
      // With it, but no longer active; an analytics read as well.
      for (const status of ["past_due", "unpaid", "paused", "canceled"]) {
        yield* team.subscribe(status)
        expect(yield* team.account).toMatchObject({ subscriptionStatus: status, paymentMeteredSubscriptionItemId: "si_metered" })
        expect(yield* team.estimate).toMatchObject({ total: 3, available: 1, sufficient: false })
        expect(yield* team.publish).toMatchObject(refused)
        expect(yield* Effect.flip(withSystemActor(credits.charge(team.organizationId, [{ socialAccountId: randomUUID() as SocialAccountId, amount: 2 }]))))
          .toMatchObject({ _tag: "PaymentRequired", message: `Reading analytics needs 2 credits and the organization has 1 available. An admin or owner buys a pack of 1000 or 5000 credits with a checkout: POST /v1/organizations/${team.organizationId}/billing/checkout` })
        yield* nothingWritten
      }
      // past_due as an unpaid invoice makes it.
      yield* team.subscribe("active")
      yield* deliver({
        id: `evt_${randomUUID()}`,
        type: "invoice.payment_failed",
        created: Math.floor(Date.now() / 1000) + 3600,
        object: {
          id: `in_${randomUUID()}`,
          object: "invoice",
          customer: team.customerId,
          parent: { subscription_details: { subscription: (yield* team.account).paymentSubscriptionId } },
          billing_reason: "subscription_cycle",
          amount_paid: 0
        }
      })
      expect((yield* team.account).subscriptionStatus).toBe("past_due")
      expect(yield* team.publish).toMatchObject(refused)
      yield* nothingWritten
    }))

  it.scoped("the spend cap stops an overage: 402 naming the cap, no usage, no ledger entry; raised, the overage goes", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(0)
      yield* team.subscribe("active")
      const capPath = `/v1/organizations/${team.organizationId}/billing/spend-cap`
      const cap = (monthlyCredits: number) => raw({ method: "PATCH", path: capPath, token: team.admin.token, json: { monthlyCredits } })
      expect((yield* cap(2)).status).toBe(200)
      expect(yield* team.estimate).toMatchObject({ total: 3, available: 0, sufficient: false })
      expect(yield* team.publish).toMatchObject({
        status: 402,
        body: {
          _tag: "PaymentRequired",
          message: "This needs 3 credits, beyond the organization's monthly spend cap of 2 credits (0 spent this month); " +
            "an admin or owner may raise the cap"
        }
      })
      const credits = yield* CreditsRepo
      expect(yield* Effect.flip(withSystemActor(credits.charge(team.organizationId, [{ socialAccountId: randomUUID() as SocialAccountId, amount: 3 }]))))
        .toMatchObject({ _tag: "PaymentRequired", message: expect.stringContaining("monthly spend cap of 2 credits") })
      expect(yield* team.ledger).toEqual([])
      expect(yield* team.usage).toEqual([])
      expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })
      expect((yield* cap(3)).status).toBe(200)
      expect((yield* team.publish).status).toBe(200)
      expect(sortedKinds(yield* team.ledger)).toEqual(["overage 3", "reserve 3", "spend 3"])
    }))

  it.scoped("another organization's usage never appears: its ledger, usage and meter events are its own", () =>
    Effect.gen(function*() {
      const buyer = yield* overageTeam(0)
      const other = yield* overageTeam(10)
      yield* buyer.subscribe("active")
      yield* other.subscribe("active")
      expect((yield* buyer.publish).status).toBe(200)
      expect((yield* other.publish).status).toBe(200)
      yield* eventually(buyer.usage, (rows) => rows.length === 1 && rows[0]!.reported)
      expect(sortedKinds(yield* other.ledger)).toEqual(["reserve 3", "spend 3"])
      expect(yield* other.usage).toEqual([])
      expect(other.meterCalls()).toEqual([])
      expect(buyer.meterCalls().map((call) => call.params.get("payload[stripe_customer_id]"))).toEqual([buyer.customerId])
      // Nor can its admin read the buyer's ledger.
      expect(
        yield* raw({ method: "GET", path: `/v1/organizations/${buyer.organizationId}/credits/transactions`, token: other.admin.token })
      ).toMatchObject({ status: 404 })
    }))
})

layer(
  serverWith({ ...costs, ...stripe.settings, BILLING_PLAN_METERED_PRICE_ID: "", BILLING_PLAN_METER_EVENT: "" }),
  { excludeTestServices: true }
)("overage with a plan that has no metered price", (it) => {
  it.scoped("a subscribed organization short of credits gets 402, even with a metered item left from before; nothing written", () =>
    Effect.gen(function*() {
      const team = yield* overageTeam(1)
      yield* team.subscribe("active")
      // The plan has no metered price: Stripe's item is not the plan's.
      expect(yield* team.account).toMatchObject({ subscriptionStatus: "active", paymentMeteredSubscriptionItemId: null })
      const refused = {
        status: 402,
        body: { _tag: "PaymentRequired", message: `Publishing needs 3 credits and the organization has 1 available. An admin or owner buys a pack of 1000 or 5000 credits with a checkout: POST /v1/organizations/${team.organizationId}/billing/checkout` }
      }
      expect(yield* team.publish).toMatchObject(refused)
      // One left from when the plan had a metered price: this server reports no usage, so it sells none.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET payment_metered_subscription_item_id = 'si_before' WHERE id = ${team.organizationId}`
      expect(yield* team.publish).toMatchObject(refused)
      expect(yield* team.ledger).toEqual([])
      expect(yield* team.usage).toEqual([])
      expect(yield* team.credit).toEqual({ balance: 1, reserved: 0, available: 1 })
    }))
})

/**
 * The built server (the bundle, with the `stripe` SDK inside) reports overage as its background worker runs; on
 * PostgreSQL two processes share the database and each row is reported by one of them, once.
 */
describe("the built server's overage", () => {
  it.scopedLive("reports each overage once through the bundled SDK, however many server processes report", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(makeStripeFake)
      const receiver = yield* makeWebhookReceiver
      // Publishing to a webhook account costs one credit: each publish of an organization with none buys one.
      const env = publishEnv(yield* freshDatabaseEnv, fake.settings)
      const { token } = yield* createUserWithToken(env)
      const server = yield* startServer(env)
      if (testDatabaseKind === "postgres") yield* startServer(env)
      const call = callsAs(server, token)
      const organization = (yield* call("POST", "/v1/organizations", { name: "Acme" })).body
      const path = `/v1/organizations/${organization.id}/billing`
      expect((yield* call("POST", `${path}/portal`, { returnUrl: "https://app.example/" })).status).toBe(201)
      const customerId = (yield* call("GET", path)).body.account.paymentCustomerId
      const { body, signature } = signedEvent(subscriptionEvent({
        customerId,
        subscriptionId: "sub_process",
        status: "active",
        metered: true,
        created: Math.floor(Date.now() / 1000)
      }))
      const delivered = yield* Effect.promise(() =>
        fetch(`${server.base}/v1/billing/webhooks/stripe`, {
          method: "POST",
          headers: { "content-type": "application/json", "stripe-signature": signature },
          body
        })
      )
      expect(delivered.status).toBe(200)

      const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" })).body
      const account = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiver.url })).body
      const publish = Effect.gen(function*() {
        const post = (yield* call("POST", `/v1/teams/${team.id}/posts`, { content: `Post ${randomUUID()}` })).body
        return (yield* call("POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, { socialAccountIds: [account.id] })).status
      })
      const identifiers = () => fake.meterCalls.map((call) => call.params.get("identifier"))
      expect(yield* Effect.all(Array.from({ length: 6 }, () => publish), { concurrency: 3 })).toEqual([200, 200, 200, 200, 200, 200])
      yield* readUntil(Effect.sync(identifiers), (found) => new Set(found).size === 6)
      // One more, reported after many rounds of both processes: every row is still reported once.
      expect(yield* publish).toBe(200)
      yield* readUntil(Effect.sync(identifiers), (found) => new Set(found).size === 7)
      expect(identifiers()).toHaveLength(7)
      expect(new Set(fake.meterCalls.map((call) => `${call.params.get("payload[stripe_customer_id]")} ${call.params.get("payload[value]")}`)))
        .toEqual(new Set([`${customerId} 1`]))
      const ledger = (yield* call("GET", `/v1/organizations/${organization.id}/credits/transactions?limit=100`)).body.data as ReadonlyArray<Entry>
      expect(ledger.filter((entry) => entry.kind === "overage")).toHaveLength(7)
      expect((yield* call("GET", path)).body.credits).toEqual({ balance: 0, reserved: 0, available: 0 })
    }))
})
