import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { randomUUID } from "node:crypto"
import { publishingTeam } from "./support/Publishing.js"
import { makeStripeFake, signedEvent } from "./support/StripeFake.js"
import { makeTestServer, raw } from "./support/TestServer.js"

/**
 * A credit pack's checkout session, as Stripe tells of it: several signed events (`completed`, then
 * `async_payment_succeeded` for a payment that clears later, each possibly redelivered under a new event id).
 * Its credits come once per session, and only to the organization whose Stripe customer paid. On both databases.
 */

const stripe = await makeStripeFake()

// What the server logs from WARN up.
const logged: Array<{ readonly level: string; readonly message: string }> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ logLevel, message }) => void logged.push({ level: logLevel.label, message: String(message) }))
)

const settings = ConfigProvider.fromMap(new Map(Object.entries(stripe.settings))).pipe(
  ConfigProvider.orElse(() => ConfigProvider.fromEnv())
)
const server = makeTestServer(Layer.merge(capturingLogger, Logger.minimumLogLevel(LogLevel.Warning))).pipe(
  Layer.provide(Layer.setConfigProvider(settings))
)

const deliver = (event: Parameters<typeof signedEvent>[0]) => {
  const { body, signature } = signedEvent(event)
  return Effect.map(
    raw({
      method: "POST",
      path: "/v1/billing/webhooks/stripe",
      headers: { "content-type": "application/json", "stripe-signature": signature },
      body
    }),
    (answer) => answer.status
  )
}

/** An organization that bought a pack of 1000 credits: its Stripe customer, the session Stripe made and its events. */
const buyingTeam = Effect.gen(function*() {
  const team = yield* publishingTeam(0)
  const organizationId = team.organization.id
  const { url } = yield* team.admin.client.billing.createCheckout({
    path: { organizationId },
    payload: { purchase: "credits", credits: 1000, returnUrl: "https://app.example/" }
  })
  const sessionId = url.split("/").at(-1)!
  const customerId = (yield* team.admin.client.billing.getBilling({ path: { organizationId } })).account!.paymentCustomerId!
  /** The session paid, as Stripe's event of `type` carries it, under a new event id. */
  const paid = (type: string, session: { readonly customer?: string | null; readonly organizationId?: string } = {}) => ({
    id: `evt_${randomUUID()}`,
    type,
    object: {
      id: sessionId,
      object: "checkout.session",
      mode: "payment",
      payment_status: "paid",
      customer: session.customer === undefined ? customerId : session.customer,
      client_reference_id: session.organizationId ?? organizationId,
      metadata: { purpose: "credit_pack", organizationId: session.organizationId ?? organizationId, credits: "1000" }
    }
  })
  const grants = Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ amount: number; note: string }>`SELECT amount::float8 AS amount, note FROM credit_transactions
      WHERE organization_id = ${organizationId} ORDER BY created_at`)
  return { ...team, sessionId, customerId, paid, grants }
})

layer(server, { excludeTestServices: true })("credit pack checkout sessions", (it) => {
  it.effect("a session's three paid events (completed, async_payment_succeeded, completed under another id) grant its pack once", () =>
    Effect.gen(function*() {
      const { credit, grants, paid, sessionId } = yield* buyingTeam
      for (const type of ["checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.completed"]) {
        expect(yield* deliver(paid(type))).toBe(200)
      }
      expect(yield* credit).toEqual({ balance: 1000, reserved: 0, available: 1000 })
      expect(yield* grants).toEqual([{ amount: 1000, note: `Credit pack, checkout ${sessionId}` }])
    }))

  it.effect("the events of one session delivered at once, each several times under new ids: its pack once", () =>
    Effect.gen(function*() {
      const { credit, grants, paid } = yield* buyingTeam
      const events = Array.from(
        { length: 5 },
        () => [paid("checkout.session.completed"), paid("checkout.session.async_payment_succeeded")]
      ).flat()
      const answers = yield* Effect.all(events.map(deliver), { concurrency: "unbounded" })
      expect(answers).toEqual(Array(events.length).fill(200))
      expect(yield* credit).toEqual({ balance: 1000, reserved: 0, available: 1000 })
      expect(yield* grants).toHaveLength(1)
    }))

  it.effect("a paid session naming an organization the paying customer does not belong to grants nothing, logged", () =>
    Effect.gen(function*() {
      const victim = yield* buyingTeam
      const payer = yield* buyingTeam
      const from = logged.length
      // The payer's customer paid; the metadata names the other organization.
      const misnamed = payer.paid("checkout.session.completed", { organizationId: victim.organization.id })
      expect(yield* deliver(misnamed)).toBe(200)
      // A customer of no organization here, and a session without one.
      expect(yield* deliver(victim.paid("checkout.session.completed", { customer: "cus_elsewhere" }))).toBe(200)
      expect(yield* deliver(victim.paid("checkout.session.async_payment_succeeded", { customer: null }))).toBe(200)
      for (const team of [victim, payer]) {
        expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })
        expect(yield* team.grants).toEqual([])
      }
      const warnings = logged.slice(from).filter((line) => line.level === "WARN").map((line) => line.message)
      expect(warnings).toEqual([
        `Billing: checkout ${payer.sessionId} names organization ${victim.organization.id} but was paid by ` +
        `${payer.customerId}, organization ${payer.organization.id}'s Stripe customer: its 1000 credits are not granted`,
        `Billing: checkout ${victim.sessionId} names organization ${victim.organization.id} but was paid by ` +
        `cus_elsewhere, no organization's Stripe customer: its 1000 credits are not granted`,
        `Billing: checkout ${victim.sessionId} names organization ${victim.organization.id} but was paid by ` +
        `no customer, no organization's Stripe customer: its 1000 credits are not granted`
      ])
      // The session's rightful events still grant to the organization whose customer paid.
      expect(yield* deliver(victim.paid("checkout.session.completed"))).toBe(200)
      expect((yield* victim.credit).balance).toBe(1000)
    }))
})
