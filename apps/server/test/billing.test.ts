import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import type { OrganizationId, SocialAccountId } from "@postline/domain"
import { ConfigProvider, Effect, Fiber, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { withSystemActor } from "../src/Access/Authorization.js"
import { CreditsRepo } from "../src/Credits/Repo.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { accountWithNothingBought } from "./support/Billing.js"
import { makeStripeFake, signedEvent, subscriptionObject } from "./support/StripeFake.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

/**
 * Billing over the real HTTP stack, on both databases. No Stripe server can run here: the server's `stripe` SDK
 * talks to an HTTP-level fake of the few endpoints it uses (support/StripeFake.ts), and the webhooks it receives
 * are signed with `stripe.webhooks.generateTestHeaderString` and checked for real.
 */

const stripe = await makeStripeFake()

const serverWith = (settings: Record<string, string>) =>
  TestServer.pipe(Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map(Object.entries(settings))).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  )))

// Publishing to a webhook account costs one credit here: the spends of these tests.
const costs = { CREDIT_COSTS: JSON.stringify({ webhook: 1 }) }

const deliver = (event: Parameters<typeof signedEvent>[0], secret?: string) => {
  const { body, signature } = signedEvent(event, secret)
  return raw({
    method: "POST",
    path: "/v1/billing/webhooks/stripe",
    headers: { "content-type": "application/json", "stripe-signature": signature },
    body
  })
}

const billingPath = (organizationId: string, suffix = "") => `/v1/organizations/${organizationId}/billing${suffix}`

/** An admin's organization with credits and a webhook account that costs one credit per publish. */
const spendingTeam = (credits: number) =>
  Effect.gen(function*() {
    const team = yield* publishingTeam(credits)
    const receiver = yield* makeWebhookReceiver
    const hook = yield* team.connect({ provider: "webhook", url: receiver.url })
    /** One publish: one credit. */
    const spendOne = Effect.flatMap(team.draft(`Post ${randomUUID()}`), (post) => team.postNow(post.id, [hook.id]))
    const billing = raw({ method: "GET", path: billingPath(team.organization.id), token: team.admin.token })
    const patch = (suffix: string, json: unknown, token = team.admin.token) =>
      raw({ method: "PATCH", path: billingPath(team.organization.id, suffix), token, json })
    return { ...team, spendOne, billing, patch }
  })

/** An admin's organization with no credits, its subscription checkout, and the sessions Stripe was asked to make for it. */
const subscribingTeam = Effect.gen(function*() {
  const team = yield* publishingTeam(0)
  const organizationId = team.organization.id
  const json = { purchase: "subscription", returnUrl: "https://app.example/" }
  const checkout = raw({ method: "POST", path: billingPath(organizationId, "/checkout"), token: team.admin.token, json })
  const sessions = () => stripe.to("/v1/checkout/sessions").filter((request) => request.params.get("client_reference_id") === organizationId)
  return { ...team, checkout, sessions }
})

/** A spending team of Stripe customer `customerId` with a saved card, auto-recharging a pack of 1000 below 5 credits. */
const recharging = (customerId: string) =>
  Effect.gen(function*() {
    const team = yield* spendingTeam(2)
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE organizations SET payment_customer_id = ${customerId}, payment_payment_method_id = 'pm_card'
      WHERE id = ${team.organization.id}`
    yield* team.patch("/auto-recharge", { enabled: true, threshold: 5, amount: 1000 })
    return team
  })

/** The payment intents Stripe was asked for, for the customer. */
const intentsOf = (customerId: string) => stripe.to("/v1/payment_intents").filter((request) => request.params.get("customer") === customerId)

/** A member (not an admin) of the organization. */
const memberOf = (organizationId: string) =>
  Effect.gen(function*() {
    const member = yield* signUp("Mo Member")
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${member.user.id}, ${organizationId}, 'member')`
    return member
  })

layer(serverWith({ ...costs, STRIPE_SECRET_KEY: "" }), { excludeTestServices: true })("billing without Stripe", (it) => {
  it.effect("GET billing says billing is off and shows the credits; selling answers 409 BillingDisabled, the webhook 404", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(7)
      const organizationId = organization.id
      const billing = yield* admin.client.billing.getBilling({ path: { organizationId } })
      expect(billing).toMatchObject({
        enabled: false,
        creditPacks: [],
        plan: null,
        credits: { balance: 7, reserved: 0, available: 7 },
        account: { paymentCustomerId: null, subscriptionStatus: "inactive", isSubscribed: false, spendCap: { monthlyCredits: null } }
      })
      const disabled = {
        _tag: "BillingDisabled",
        message: "Billing is off on this server (no STRIPE_SECRET_KEY): an operator grants credits with the admin command"
      }
      const returnUrl = "https://app.example/billing"
      for (
        const [suffix, json] of [
          ["/checkout", { purchase: "credits", credits: 1000, returnUrl }],
          ["/checkout", { purchase: "subscription", returnUrl }],
          ["/portal", { returnUrl }]
        ] as const
      ) {
        expect(yield* raw({ method: "POST", path: billingPath(organizationId, suffix), token: admin.token, json }))
          .toMatchObject({ status: 409, body: disabled })
      }
      expect(
        yield* raw({
          method: "PATCH",
          path: billingPath(organizationId, "/auto-recharge"),
          token: admin.token,
          json: { enabled: true, threshold: 10, amount: 1000 }
        })
      ).toMatchObject({ status: 409, body: disabled })
      expect(yield* deliver({ id: "evt_off", type: "checkout.session.completed", object: {} })).toMatchObject({
        status: 404,
        body: { _tag: "NotFound", message: "Billing is off on this server: it takes no payment events" }
      })
      // Unsigned too: there is no endpoint, rather than a request to sign.
      expect(
        yield* raw({ method: "POST", path: "/v1/billing/webhooks/stripe", headers: { "content-type": "application/json" }, body: "{}" })
      ).toMatchObject({
        status: 404,
        body: { _tag: "NotFound", message: "Billing is off on this server: it takes no payment events" }
      })
      expect((yield* admin.client.billing.getBilling({ path: { organizationId } })).credits.balance).toBe(7)
    }))

  it.scoped("the spend cap works without Stripe: beyond it 402 naming the cap; raised or removed, publishing goes on", () =>
    Effect.gen(function*() {
      const { billing, credit, patch, spendOne } = yield* spendingTeam(10)
      expect(yield* patch("/spend-cap", { monthlyCredits: 2 })).toMatchObject({
        status: 200,
        body: { account: { spendCap: { monthlyCredits: 2, spentThisMonth: 0 } } }
      })
      expect((yield* spendOne).status).toBe(200)
      expect((yield* spendOne).status).toBe(200)
      expect(yield* spendOne).toMatchObject({
        status: 402,
        body: {
          _tag: "PaymentRequired",
          message: "This needs 1 credit, beyond the organization's monthly spend cap of 2 credits (2 spent this month); " +
            "an admin or owner may raise the cap"
        }
      })
      expect(yield* credit).toEqual({ balance: 8, reserved: 0, available: 8 })
      expect((yield* billing).body.account.spendCap).toEqual({ monthlyCredits: 2, spentThisMonth: 2 })
      // Raised, the next publish goes; removed, there is no cap.
      yield* patch("/spend-cap", { monthlyCredits: 3 })
      expect((yield* spendOne).status).toBe(200)
      yield* patch("/spend-cap", { monthlyCredits: null })
      expect((yield* spendOne).status).toBe(200)
      expect((yield* billing).body.account.spendCap).toEqual({ monthlyCredits: null, spentThisMonth: 4 })
    }))

  it.scoped("the spend cap is bounded and strict", () =>
    Effect.gen(function*() {
      const { patch } = yield* spendingTeam(0)
      for (const json of [{ monthlyCredits: 0 }, { monthlyCredits: 1.5 }, { monthlyCredits: 1_000_000_001 }, {}, { monthlyCredits: 5, extra: 1 }]) {
        const answer = yield* patch("/spend-cap", json)
        expect(answer.status, JSON.stringify(json)).toBe(400)
        expect(answer.body._tag).toBe("HttpApiDecodeError")
      }
      expect((yield* patch("/spend-cap", { monthlyCredits: 1_000_000_000 })).status).toBe(200)
    }))
})

// CreditsRepo beside the server: live analytics reads spend through its charge, which these tests call directly.
layer(Layer.provideMerge(CreditsRepo.Default, serverWith({ ...costs, ...stripe.settings })), { excludeTestServices: true })("billing with Stripe (an HTTP-level fake of it)", (it) => {
  it.effect("admins, owners and API keys see the whole billing state; members the credits only; another organization 404", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(3)
      const organizationId = organization.id
      const member = yield* memberOf(organizationId)
      const { key } = yield* admin.client.apiKeys.createApiKey({ path: { organizationId }, payload: { name: "Billing" } })
      const whole = yield* admin.client.billing.getBilling({ path: { organizationId } })
      expect(whole).toEqual({
        enabled: true,
        creditPacks: [{ credits: 1000 }, { credits: 5000 }],
        plan: { name: "Pro", includedCredits: 2000 },
        credits: { balance: 3, reserved: 0, available: 3 },
        account: accountWithNothingBought(0)
      })
      expect(yield* raw({ method: "GET", path: billingPath(organizationId), token: key })).toMatchObject({ status: 200, body: whole })
      expect(yield* member.client.billing.getBilling({ path: { organizationId } })).toEqual({ ...whole, account: null })
      const outsider = yield* signUp("Otto Outsider")
      expect(yield* raw({ method: "GET", path: billingPath(organizationId), token: outsider.token })).toMatchObject({
        status: 404,
        body: { _tag: "NotFound", message: `Organization ${organizationId} not found` }
      })
    }))

  it.effect("Organization's payment identifiers: admins, owners and API keys see them; a member gets null (get, list, agent context)", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET payment_customer_id = 'cus_secret', payment_subscription_id = 'sub_secret',
          payment_payment_method_id = 'pm_secret', payment_metered_subscription_item_id = 'si_secret',
          is_subscribed = true, subscription_status = 'active', auto_recharge_enabled = true
        WHERE id = ${organizationId}`
      const member = yield* memberOf(organizationId)
      const { key } = yield* admin.client.apiKeys.createApiKey({ path: { organizationId }, payload: { name: "Billing" } })
      const identifiers = {
        paymentCustomerId: "cus_secret",
        paymentSubscriptionId: "sub_secret",
        paymentPaymentMethodId: "pm_secret",
        paymentMeteredSubscriptionItemId: "si_secret"
      }
      const hidden = { paymentCustomerId: null, paymentSubscriptionId: null, paymentPaymentMethodId: null, paymentMeteredSubscriptionItemId: null }
      // The subscription's and auto-recharge's state stays visible to members: it is state, not an identifier.
      const state = { isSubscribed: true, subscriptionStatus: "active", autoRechargeEnabled: true }
      const seen = (token: string) =>
        Effect.gen(function*() {
          const one = yield* raw({ method: "GET", path: `/v1/organizations/${organizationId}`, token })
          const list = yield* raw({ method: "GET", path: "/v1/organizations", token })
          const context = yield* raw({ method: "GET", path: "/v1/agent/context", token })
          const inList = list.body.data.find((item: { id: string }) => item.id === organizationId)
          const inContext = context.body.organizations.data.find((item: { id: string }) => item.id === organizationId)
          return [one.body, inList, inContext]
        })
      for (const shown of yield* seen(admin.token)) expect(shown).toMatchObject({ ...identifiers, ...state })
      for (const shown of yield* seen(key)) expect(shown).toMatchObject({ ...identifiers, ...state })
      for (const shown of yield* seen(member.token)) expect(shown).toMatchObject({ ...hidden, ...state })
    }))

  it.effect("a member cannot change billing (403) and another organization cannot (404); nothing changes", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id
      const member = yield* memberOf(organizationId)
      const outsider = yield* signUp("Otto Outsider")
      const calls = [
        { method: "POST", suffix: "/checkout", json: { purchase: "credits", credits: 1000, returnUrl: "https://app.example/" } },
        { method: "POST", suffix: "/portal", json: { returnUrl: "https://app.example/" } },
        { method: "PATCH", suffix: "/auto-recharge", json: { enabled: false } },
        { method: "PATCH", suffix: "/spend-cap", json: { monthlyCredits: 5 } }
      ] as const
      const before = stripe.requests.length
      for (const { json, method, suffix } of calls) {
        expect(yield* raw({ method, path: billingPath(organizationId, suffix), token: member.token, json })).toMatchObject({
          status: 403,
          body: { _tag: "Forbidden", message: "Only an admin or owner of the organization may do this" }
        })
        expect(yield* raw({ method, path: billingPath(organizationId, suffix), token: outsider.token, json })).toMatchObject({
          status: 404,
          body: { _tag: "NotFound" }
        })
      }
      expect(stripe.requests.length).toBe(before)
      expect((yield* admin.client.billing.getBilling({ path: { organizationId } })).account?.spendCap.monthlyCredits).toBeNull()
    }))

  it.effect("checkout of a pack: one customer for the organization, a payment session at the pack's price, its URL", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id
      const returnUrl = "https://app.example/billing?done=1"
      const first = yield* admin.client.billing.createCheckout({
        path: { organizationId },
        payload: { purchase: "credits", credits: 5000, returnUrl }
      })
      expect(first.url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_\d+$/)
      const [customer] = stripe.to("/v1/customers").filter((request) => request.params.get("metadata[organizationId]") === organizationId)
      expect(customer!.params.get("name")).toBe("Acme")
      const sessions = () => stripe.to("/v1/checkout/sessions").filter((request) => request.params.get("client_reference_id") === organizationId)
      const [session] = sessions()
      const { paymentCustomerId } = (yield* admin.client.billing.getBilling({ path: { organizationId } })).account!
      expect(paymentCustomerId).toMatch(/^cus_\d+$/)
      expect(Object.fromEntries(session!.params)).toMatchObject({
        mode: "payment",
        customer: paymentCustomerId,
        "line_items[0][price]": "price_pack_5000",
        "line_items[0][quantity]": "1",
        "metadata[purpose]": "credit_pack",
        "metadata[organizationId]": organizationId,
        "metadata[credits]": "5000",
        "payment_intent_data[setup_future_usage]": "off_session",
        success_url: returnUrl,
        cancel_url: returnUrl
      })
      // The second checkout uses the same customer.
      yield* admin.client.billing.createCheckout({ path: { organizationId }, payload: { purchase: "credits", credits: 1000, returnUrl } })
      expect(sessions().map((request) => request.params.get("customer"))).toEqual([paymentCustomerId, paymentCustomerId])
      expect(stripe.to("/v1/customers").filter((request) => request.params.get("metadata[organizationId]") === organizationId)).toHaveLength(1)

      const path = billingPath(organizationId, "/checkout")
      expect(yield* raw({ method: "POST", path, token: admin.token, json: { purchase: "credits", credits: 1234, returnUrl } }))
        .toMatchObject({
          status: 400,
          body: { _tag: "BadRequest", message: "No pack of 1234 credits is on sale; the packs: 1000, 5000" }
        })
      for (
        const json of [
          { purchase: "credits", credits: 1000 },
          { purchase: "credits", credits: 1000, returnUrl: "javascript:alert(1)" },
          { purchase: "credits", credits: 0, returnUrl },
          { purchase: "gift", returnUrl },
          { purchase: "subscription", returnUrl, extra: true }
        ]
      ) {
        const answer = yield* raw({ method: "POST", path, token: admin.token, json })
        expect(answer.status, JSON.stringify(json)).toBe(400)
        expect(answer.body._tag).toBe("HttpApiDecodeError")
      }
      expect(sessions()).toHaveLength(2)
    }))

  it.effect("checkout of the plan: its price and the metered price in one subscription session; 409 once subscribed", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id
      const payload = { purchase: "subscription", returnUrl: "https://app.example/" } as const
      yield* admin.client.billing.createCheckout({ path: { organizationId }, payload })
      const [session] = stripe.to("/v1/checkout/sessions").filter((request) => request.params.get("client_reference_id") === organizationId)
      expect(Object.fromEntries(session!.params)).toMatchObject({
        mode: "subscription",
        "line_items[0][price]": "price_plan",
        "line_items[0][quantity]": "1",
        "line_items[1][price]": "price_metered",
        "subscription_data[metadata][organizationId]": organizationId
      })
      expect(session!.params.has("line_items[1][quantity]")).toBe(false)
      const sql = yield* SqlClient.SqlClient
      // Subscribed and no customer yet: refused before one is made at Stripe.
      const fresh = yield* publishingTeam(0)
      yield* sql`UPDATE organizations SET is_subscribed = true, subscription_status = 'active' WHERE id = ${fresh.organization.id}`
      expect(
        yield* raw({ method: "POST", path: billingPath(fresh.organization.id, "/checkout"), token: fresh.admin.token, json: payload })
      ).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
      expect(stripe.to("/v1/customers").filter((request) => request.params.get("metadata[organizationId]") === fresh.organization.id))
        .toEqual([])
      yield* sql`UPDATE organizations SET is_subscribed = true, subscription_status = 'active' WHERE id = ${organizationId}`
      expect(yield* raw({ method: "POST", path: billingPath(organizationId, "/checkout"), token: admin.token, json: payload }))
        .toMatchObject({
          status: 409,
          body: {
            _tag: "Conflict",
            message: "The organization is subscribed already (active): change the subscription in the billing portal"
          }
        })
    }))

  it.effect("portal: a session of the provider's portal for the organization's customer", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id
      const { url } = yield* admin.client.billing.createPortal({ path: { organizationId }, payload: { returnUrl: "https://app.example/" } })
      expect(url).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_\d+$/)
      const { paymentCustomerId } = (yield* admin.client.billing.getBilling({ path: { organizationId } })).account!
      const portal = stripe.to("/v1/billing_portal/sessions").find((request) => request.params.get("customer") === paymentCustomerId)
      expect(portal!.params.get("return_url")).toBe("https://app.example/")
    }))

  it.effect("checkout.session.completed grants the pack's credits once per event id: replayed, and 20 deliveries at once", () =>
    Effect.gen(function*() {
      const { credit, organization } = yield* publishingTeam(0)
      const sql = yield* SqlClient.SqlClient
      const customerId = `cus_${randomUUID()}`
      yield* sql`UPDATE organizations SET payment_customer_id = ${customerId} WHERE id = ${organization.id}`
      const session = (id: string, credits = "1000") => ({
        id,
        object: "checkout.session",
        mode: "payment",
        payment_status: "paid",
        customer: customerId,
        client_reference_id: organization.id,
        metadata: { purpose: "credit_pack", organizationId: organization.id, credits }
      })
      const completed = { id: `evt_${randomUUID()}`, type: "checkout.session.completed", object: session("cs_1") }
      expect((yield* deliver(completed)).status).toBe(200)
      expect((yield* deliver(completed)).status).toBe(200)
      expect(yield* credit).toEqual({ balance: 1000, reserved: 0, available: 1000 })

      const concurrent = { id: `evt_${randomUUID()}`, type: "checkout.session.completed", object: session("cs_2", "5000") }
      const answers = yield* Effect.all(Array.from({ length: 20 }, () => deliver(concurrent)), { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
      expect(yield* credit).toEqual({ balance: 6000, reserved: 0, available: 6000 })

      const grants = yield* sql<{ amount: number; note: string }>`SELECT amount::float8 AS amount, note FROM credit_transactions
        WHERE organization_id = ${organization.id} ORDER BY amount`
      expect(grants).toEqual([
        { amount: 1000, note: "Credit pack, checkout cs_1" },
        { amount: 5000, note: "Credit pack, checkout cs_2" }
      ])
      // Unpaid (a payment that completes later), it grants nothing until its async_payment_succeeded.
      const unpaid = { ...session("cs_3"), payment_status: "unpaid" }
      expect((yield* deliver({ id: `evt_${randomUUID()}`, type: "checkout.session.completed", object: unpaid })).status).toBe(200)
      expect((yield* credit).balance).toBe(6000)
      yield* deliver({ id: `evt_${randomUUID()}`, type: "checkout.session.async_payment_succeeded", object: session("cs_3") })
      expect((yield* credit).balance).toBe(7000)
    }))

  it.effect("a bad or missing signature is 400 and changes nothing; unknown events are acknowledged and ignored", () =>
    Effect.gen(function*() {
      const { credit, organization } = yield* publishingTeam(0)
      const event = {
        id: `evt_${randomUUID()}`,
        type: "checkout.session.completed",
        object: {
          id: "cs_forged",
          mode: "payment",
          payment_status: "paid",
          metadata: { purpose: "credit_pack", organizationId: organization.id, credits: "5000" }
        }
      }
      expect(yield* deliver(event, "whsec_someone_else")).toMatchObject({
        status: 400,
        body: { _tag: "BadRequest", message: "The Stripe-Signature header does not match the body" }
      })
      const { body } = signedEvent(event)
      expect(
        yield* raw({ method: "POST", path: "/v1/billing/webhooks/stripe", headers: { "content-type": "application/json" }, body })
      ).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: "The Stripe-Signature header is missing" } })
      // A body changed after signing: the signature covers the raw bytes.
      const signed = signedEvent(event)
      expect(
        yield* raw({
          method: "POST",
          path: "/v1/billing/webhooks/stripe",
          headers: { "content-type": "application/json", "stripe-signature": signed.signature },
          body: signed.body.replace("5000", "50000")
        })
      ).toMatchObject({ status: 400, body: { _tag: "BadRequest" } })
      expect((yield* credit).balance).toBe(0)
      // Correctly signed but not of the shape Stripe sends: said so, not blamed on the signature.
      const unreadable = { id: `evt_${randomUUID()}`, type: "customer.subscription.updated", object: { id: "sub_x" } }
      expect(yield* deliver(unreadable)).toMatchObject({
        status: 400,
        body: {
          _tag: "BadRequest",
          message: `The event ${unreadable.id} (customer.subscription.updated) is signed but its content cannot be read`
        }
      })
      expect(yield* deliver({ id: `evt_${randomUUID()}`, type: "customer.created", object: { id: "cus_x" } })).toMatchObject({
        status: 200,
        body: { received: true }
      })
      expect((yield* credit).balance).toBe(0)
    }))

  it.effect("customer.subscription.* drives subscriptionStatus, the plan and its dates; invoice.payment_failed → past_due; invoice.paid brings the plan's credits", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id as OrganizationId
      yield* admin.client.billing.createPortal({ path: { organizationId }, payload: { returnUrl: "https://app.example/" } })
      const account = () => Effect.map(admin.client.billing.getBilling({ path: { organizationId } }), (billing) => billing.account!)
      const customerId = (yield* account()).paymentCustomerId!
      const start = Date.UTC(2026, 10, 1) / 1000
      const periodEnd = Date.UTC(2026, 11, 1) / 1000
      const subscription = (status: string, extra: Record<string, unknown> = {}) => ({
        ...subscriptionObject({
          id: "sub_1",
          customer: customerId,
          status,
          startDate: start,
          paymentMethod: "pm_sub",
          items: [
            { id: "si_plan", price: "price_plan", periodEnd },
            { id: "si_metered", price: "price_metered", periodEnd }
          ]
        }),
        ...extra
      })
      const now = Math.floor(Date.now() / 1000)
      const event = (type: string, object: unknown, created: number) => deliver({ id: `evt_${randomUUID()}`, type, object, created })

      yield* event("customer.subscription.created", subscription("trialing"), now - 10)
      expect(yield* account()).toMatchObject({
        paymentSubscriptionId: "sub_1",
        paymentMeteredSubscriptionItemId: "si_metered",
        paymentPaymentMethodId: "pm_sub",
        isSubscribed: true,
        subscriptionStatus: "trialing",
        subscriptionPlan: "Pro",
        subscriptionStartedAt: "2026-11-01T00:00:00.000Z",
        subscriptionEndsAt: null,
        subscriptionCurrentPeriodEnd: "2026-12-01T00:00:00.000Z"
      })
      yield* event("customer.subscription.updated", subscription("active"), now - 8)
      expect((yield* account()).subscriptionStatus).toBe("active")
      const invoice = (id: string, extra: Record<string, unknown> = {}) => ({
        id,
        object: "invoice",
        customer: customerId,
        parent: { subscription_details: { subscription: "sub_1" } },
        billing_reason: "subscription_cycle",
        amount_paid: 2900,
        ...extra
      })
      // A one-off invoice's failure is no subscription's.
      yield* event("invoice.payment_failed", invoice("in_one_off", { parent: null, billing_reason: "manual" }), now - 7)
      expect(yield* account()).toMatchObject({ subscriptionStatus: "active", isSubscribed: true })
      yield* event("invoice.payment_failed", invoice("in_1"), now - 6)
      expect(yield* account()).toMatchObject({ subscriptionStatus: "past_due", isSubscribed: true })
      // An older event that arrives late changes nothing.
      yield* event("customer.subscription.updated", subscription("active"), now - 9)
      expect((yield* account()).subscriptionStatus).toBe("past_due")
      // Within one second the last delivered applies, but the subscription's `created` (incomplete), delivered
      // after its `updated`, does not undo the status reached since.
      for (const status of ["unpaid", "paused", "active"] as const) {
        yield* event("customer.subscription.updated", subscription(status), now - 5)
      }
      expect(yield* account()).toMatchObject({ subscriptionStatus: "active", isSubscribed: true })
      yield* event("customer.subscription.created", subscription("incomplete"), now - 5)
      expect(yield* account()).toMatchObject({ subscriptionStatus: "active", isSubscribed: true })
      // An event about another subscription (an old or a duplicate one) does not overwrite the current one.
      yield* event("customer.subscription.updated", subscription("canceled", { id: "sub_old" }), now - 4)
      expect(yield* account()).toMatchObject({ paymentSubscriptionId: "sub_1", subscriptionStatus: "active", isSubscribed: true })
      yield* event("customer.subscription.updated", subscription("paused"), now - 4)
      expect(yield* account()).toMatchObject({ subscriptionStatus: "paused", isSubscribed: false })
      const cancelAt = Date.UTC(2026, 11, 15) / 1000
      yield* event("customer.subscription.deleted", subscription("canceled", { ended_at: cancelAt }), now - 3)
      expect(yield* account()).toMatchObject({
        subscriptionStatus: "canceled",
        isSubscribed: false,
        subscriptionEndsAt: "2026-12-15T00:00:00.000Z"
      })
      // Each paid period of the plan brings its credits, once per event; an invoice of no subscription none.
      const paid = { id: `evt_${randomUUID()}`, type: "invoice.paid", object: invoice("in_2") }
      yield* deliver(paid)
      yield* deliver(paid)
      yield* event("invoice.paid", invoice("in_3", { parent: null, billing_reason: "manual" }), now)
      // Only a period's invoice (the first, a renewal) paid with money brings them: not a proration, nor $0.
      yield* event("invoice.paid", invoice("in_4", { billing_reason: "subscription_update" }), now)
      yield* event("invoice.paid", invoice("in_5", { billing_reason: "subscription_create", amount_paid: 0 }), now)
      yield* event("invoice.paid", invoice("in_6", { billing_reason: "manual" }), now)
      expect((yield* admin.client.billing.getBilling({ path: { organizationId } })).credits.balance).toBe(2000)
      // The organization's row is what the contract's Organization shows too.
      const shown = yield* admin.client.organizations.getOrganization({ path: { organizationId } })
      expect(shown).toMatchObject({ subscriptionStatus: "canceled", paymentSubscriptionId: "sub_1", subscriptionPlan: "Pro" })
      // Once it is canceled, a new subscription's events are the organization's.
      yield* event("customer.subscription.created", subscription("active", { id: "sub_2" }), now)
      expect(yield* account()).toMatchObject({ paymentSubscriptionId: "sub_2", subscriptionStatus: "active", isSubscribed: true })
    }))

  it.scoped("auto-recharge: admins set it; it takes a threshold, a pack's credits and a saved payment method", () =>
    Effect.gen(function*() {
      const { organization, patch } = yield* spendingTeam(0)
      expect(yield* patch("/auto-recharge", { enabled: true, threshold: 100, amount: 1000 })).toMatchObject({
        status: 409,
        body: {
          _tag: "Conflict",
          message: "The organization has no saved payment method: buy a credit pack first, its card is kept for recharges"
        }
      })
      // A pack paid through a checkout keeps its card.
      yield* deliver({
        id: `evt_${randomUUID()}`,
        type: "payment_intent.succeeded",
        object: { id: "pi_pack", object: "payment_intent", payment_method: "pm_card", metadata: { purpose: "credit_pack", organizationId: organization.id } }
      })
      expect(yield* patch("/auto-recharge", { enabled: true, threshold: 100 })).toMatchObject({
        status: 400,
        body: { _tag: "BadRequest", message: "Auto-recharge needs a threshold and an amount" }
      })
      expect(yield* patch("/auto-recharge", { enabled: true, threshold: 100, amount: 1500 })).toMatchObject({
        status: 400,
        body: { _tag: "BadRequest", message: "amount must be the credits of a pack on sale: 1000, 5000" }
      })
      for (const json of [{ threshold: 100 }, { enabled: "yes" }, { enabled: true, threshold: -1, amount: 1000 }, { enabled: true, other: 1 }]) {
        const answer = yield* patch("/auto-recharge", json)
        expect(answer.status, JSON.stringify(json)).toBe(400)
        expect(answer.body._tag).toBe("HttpApiDecodeError")
      }
      expect(yield* patch("/auto-recharge", { enabled: true, threshold: 100, amount: 1000 })).toMatchObject({
        status: 200,
        body: {
          account: {
            paymentPaymentMethodId: "pm_card",
            autoRecharge: { enabled: true, threshold: 100, amount: 1000, pending: false, lastError: null }
          }
        }
      })
      // Turned off, it keeps its figures for the next time.
      expect((yield* patch("/auto-recharge", { enabled: false })).body.account.autoRecharge).toEqual({
        enabled: false,
        threshold: 100,
        amount: 1000,
        pending: false,
        lastError: null
      })
      // A pack taken off sale since: auto-recharge still turns off, and does not turn on with it.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET auto_recharge_enabled = true, auto_recharge_amount = 777 WHERE id = ${organization.id}`
      expect(yield* patch("/auto-recharge", { enabled: false })).toMatchObject({
        status: 200,
        body: { account: { autoRecharge: { enabled: false, amount: 777 } } }
      })
      expect(yield* patch("/auto-recharge", { enabled: true })).toMatchObject({
        status: 400,
        body: { _tag: "BadRequest", message: "amount must be the credits of a pack on sale: 1000, 5000" }
      })
      expect(yield* patch("/auto-recharge", { enabled: false, amount: 777 })).toMatchObject({ status: 400 })
    }))

  it.scoped("auto-recharge: a spend below the threshold starts one recharge, never two; its webhook brings the credits once", () =>
    Effect.gen(function*() {
      const { billing, credit, organization, patch, spendOne } = yield* spendingTeam(5)
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET payment_customer_id = 'cus_recharge', payment_payment_method_id = 'pm_recharge'
        WHERE id = ${organization.id}`
      yield* patch("/auto-recharge", { enabled: true, threshold: 4, amount: 1000 })
      const intents = () =>
        stripe.to("/v1/payment_intents").filter((request) => request.params.get("metadata[organizationId]") === organization.id)

      expect((yield* spendOne).status).toBe(200) // 4 left: not below the threshold
      expect((yield* billing).body.account.autoRecharge.pending).toBe(false)
      // Below it, concurrently: one recharge is decided, whatever the number of spends.
      const spends = yield* Effect.all([spendOne, spendOne, spendOne], { concurrency: "unbounded" })
      expect(spends.map((answer) => answer.status)).toEqual([200, 200, 200])
      expect((yield* billing).body.account.autoRecharge.pending).toBe(true)
      const [intent] = yield* eventually(Effect.sync(intents), (found) => found.length > 0)
      expect(Object.fromEntries(intent!.params)).toMatchObject({
        amount: "1000",
        currency: "usd",
        customer: "cus_recharge",
        payment_method: "pm_recharge",
        off_session: "true",
        confirm: "true",
        "metadata[purpose]": "auto_recharge",
        "metadata[credits]": "1000"
      })
      const [{ paymentIntentId }] = yield* eventually(
        sql<{ paymentIntentId: string | null }>`SELECT auto_recharge_payment_intent_id AS "paymentIntentId" FROM organizations
          WHERE id = ${organization.id}`,
        ([row]) => row?.paymentIntentId !== null
      )
      expect((yield* spendOne).status).toBe(200)
      expect(intents()).toHaveLength(1)
      expect(yield* credit).toEqual({ balance: 0, reserved: 0, available: 0 })

      const succeeded = {
        id: `evt_${randomUUID()}`,
        type: "payment_intent.succeeded",
        object: {
          id: paymentIntentId,
          object: "payment_intent",
          payment_method: "pm_recharge",
          metadata: Object.fromEntries([...intent!.params].flatMap(([key, value]) => {
            const match = /^metadata\[(.+)\]$/.exec(key)
            return match ? [[match[1], value]] : []
          }))
        }
      }
      const answers = yield* Effect.all(Array.from({ length: 20 }, () => deliver(succeeded)), { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
      expect(yield* credit).toEqual({ balance: 1000, reserved: 0, available: 1000 })
      expect((yield* billing).body.account.autoRecharge).toMatchObject({ enabled: true, pending: false, lastError: null })
    }))

  it.scoped("auto-recharge: a declined recharge ends it and turns auto-recharge off, with the reason", () =>
    Effect.gen(function*() {
      const { billing, organization, patch, spendOne } = yield* spendingTeam(2)
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET payment_customer_id = 'cus_declined', payment_payment_method_id = 'pm_declined'
        WHERE id = ${organization.id}`
      yield* patch("/auto-recharge", { enabled: true, threshold: 5, amount: 5000 })
      stripe.declineNextPayment()
      expect((yield* spendOne).status).toBe(200)
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(after.body.account.autoRecharge).toEqual({
        enabled: false,
        threshold: 5,
        amount: 5000,
        pending: false,
        lastError: "The recharge failed: Your card was declined."
      })
      // Off, a spend starts nothing.
      expect((yield* spendOne).status).toBe(200)
      expect((yield* billing).body.account.autoRecharge.pending).toBe(false)
      // Turned on again, the reason goes.
      expect((yield* patch("/auto-recharge", { enabled: true })).body.account.autoRecharge.lastError).toBeNull()
    }))

  it.scoped("auto-recharge turned off after a spend decided a recharge that has not started: no payment follows", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const first = yield* recharging(`cus_held_${randomUUID()}`)
      const second = yield* recharging(`cus_off_${randomUUID()}`)
      // The first organization's payment is held at Stripe: the recharger waits in it, so the second's decision
      // and its turning off both happen before the recharger can look at the second.
      const release = stripe.holdPayments()
      yield* Effect.addFinalizer(() => Effect.sync(release))
      expect((yield* first.spendOne).status).toBe(200)
      const firstCustomer = (yield* first.billing).body.account.paymentCustomerId
      yield* eventually(Effect.sync(() => intentsOf(firstCustomer)), (found) => found.length === 1)
      expect((yield* second.spendOne).status).toBe(200)
      expect((yield* second.billing).body.account.autoRecharge.pending).toBe(true)
      expect(yield* second.patch("/auto-recharge", { enabled: false })).toMatchObject({
        status: 200,
        body: { account: { autoRecharge: { enabled: false, pending: false } } }
      })
      release()
      yield* eventually(
        sql<{ id: string | null }>`SELECT auto_recharge_payment_intent_id AS id FROM organizations WHERE id = ${first.organization.id}`,
        ([row]) => row?.id !== null
      )
      // Several rounds of the recharger (BILLING_RECHARGE_POLL_MS is 20 here): none pays for the second.
      yield* Effect.sleep("200 millis")
      expect(intentsOf((yield* second.billing).body.account.paymentCustomerId)).toEqual([])
    }))

  it.scoped("auto-recharge: a recharge Stripe keeps failing holds up no other, and ends after five attempts", () =>
    Effect.gen(function*() {
      const failingCustomer = `cus_failing_${randomUUID()}`
      const healthyCustomer = `cus_healthy_${randomUUID()}`
      const failing = yield* recharging(failingCustomer)
      const healthy = yield* recharging(healthyCustomer)
      const restore = stripe.failPaymentsOf(failingCustomer)
      yield* Effect.addFinalizer(() => Effect.sync(restore))
      expect((yield* failing.spendOne).status).toBe(200)
      yield* eventually(Effect.sync(() => intentsOf(failingCustomer)), (found) => found.length >= 2)
      expect((yield* healthy.spendOne).status).toBe(200)
      yield* eventually(Effect.sync(() => intentsOf(healthyCustomer)), (found) => found.length === 1)
      const after = yield* eventually(failing.billing, (answer) => answer.body.account.autoRecharge.enabled === false)
      expect(after.body.account.autoRecharge).toMatchObject({
        pending: false,
        lastError: "The recharge could not start: the payment provider failed 5 times"
      })
      expect(intentsOf(failingCustomer)).toHaveLength(5)
      expect(intentsOf(healthyCustomer)).toHaveLength(1)
    }))

  it.scoped("auto-recharge: a pack's price that Stripe no longer has ends the recharge as a decline does, not tried again", () =>
    Effect.gen(function*() {
      const { billing, organization, patch, spendOne } = yield* spendingTeam(2)
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE organizations SET payment_customer_id = 'cus_gone', payment_payment_method_id = 'pm_gone'
        WHERE id = ${organization.id}`
      yield* patch("/auto-recharge", { enabled: true, threshold: 5, amount: 5000 })
      const restore = stripe.forgetPrice("price_pack_5000")
      yield* Effect.addFinalizer(() => Effect.sync(restore))
      expect((yield* spendOne).status).toBe(200)
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.enabled === false)
      expect(after.body.account.autoRecharge).toMatchObject({
        pending: false,
        lastError: "The recharge failed: No such price: 'price_pack_5000'"
      })
      expect(stripe.to("/v1/payment_intents").filter((request) => request.params.get("customer") === "cus_gone")).toEqual([])
    }))

  /** A team whose recharge has started at Stripe (its payment intent made, succeeded as made) and whose webhook has not come. */
  const startedRecharge = Effect.gen(function*() {
    const team = yield* spendingTeam(2)
    const sql = yield* SqlClient.SqlClient
    const customerId = `cus_late_${randomUUID()}`
    yield* sql`UPDATE organizations SET payment_customer_id = ${customerId}, payment_payment_method_id = 'pm_late'
      WHERE id = ${team.organization.id}`
    yield* team.patch("/auto-recharge", { enabled: true, threshold: 5, amount: 1000 })
    expect((yield* team.spendOne).status).toBe(200)
    const [{ paymentIntentId }] = yield* eventually(
      sql<{ paymentIntentId: string | null }>`SELECT auto_recharge_payment_intent_id AS "paymentIntentId" FROM organizations
        WHERE id = ${team.organization.id}`,
      ([row]) => row?.paymentIntentId !== null
    )
    const intent = stripe.to("/v1/payment_intents").find((request) => request.params.get("customer") === customerId)!
    const succeeded = {
      id: `evt_${randomUUID()}`,
      type: "payment_intent.succeeded",
      object: {
        id: paymentIntentId,
        object: "payment_intent",
        payment_method: "pm_late",
        metadata: Object.fromEntries([...intent.params].flatMap(([key, value]) => {
          const match = /^metadata\[(.+)\]$/.exec(key)
          return match ? [[match[1], value]] : []
        }))
      }
    }
    /** The lookups of the payment at Stripe so far. */
    const lookups = () => stripe.requests.filter((request) => request.method === "GET" && request.path === `/v1/payment_intents/${paymentIntentId}`)
    /** As if the webhook had been awaited long enough (10 minutes): the start, and the last look, moved back an hour. */
    const lapse = sql`UPDATE organizations SET auto_recharge_started_at = auto_recharge_started_at - interval '1 hour',
        auto_recharge_checked_at = auto_recharge_checked_at - interval '1 hour'
      WHERE id = ${team.organization.id}`
    /**
     * As if a day had passed since the start; a look made was the sixth, just before the day was up (the next one
     * of the usual waits ten hours away).
     */
    const overdue = sql`UPDATE organizations SET auto_recharge_started_at = now() - interval '25 hours',
        auto_recharge_checked_at = CASE WHEN auto_recharge_checks > 0 THEN now() - interval '61 minutes' END,
        auto_recharge_checks = CASE WHEN auto_recharge_checks > 0 THEN 6 ELSE 0 END
      WHERE id = ${team.organization.id}`
    const grants = sql<{ amount: number; note: string }>`SELECT amount::float8 AS amount, note FROM credit_transactions
      WHERE organization_id = ${team.organization.id} AND kind = 'grant' AND note LIKE 'Auto-recharge%'`
    return { ...team, paymentIntentId: paymentIntentId!, succeeded, lookups, lapse, overdue, grants }
  })

  it.scoped("auto-recharge whose webhook never comes: looked up at Stripe once it is late, paid → its credits once; the late webhook grants nothing", () =>
    Effect.gen(function*() {
      const { billing, credit, grants, lapse, lookups, paymentIntentId, succeeded } = yield* startedRecharge
      // Not late yet: several rounds of the recharger ask Stripe nothing.
      yield* Effect.sleep("200 millis")
      expect(lookups()).toEqual([])
      expect((yield* billing).body.account.autoRecharge.pending).toBe(true)
      yield* lapse
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(after.body.account.autoRecharge).toMatchObject({ enabled: true, pending: false, lastError: null })
      expect(lookups()).toHaveLength(1)
      expect(yield* credit).toEqual({ balance: 1001, reserved: 0, available: 1001 })
      expect(yield* grants).toEqual([{ amount: 1000, note: `Auto-recharge, payment ${paymentIntentId}` }])
      // Stripe delivers it after all, several times at once: acknowledged, nothing more granted.
      const answers = yield* Effect.all(Array.from({ length: 5 }, () => deliver(succeeded)), { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status)).toEqual(Array(5).fill(200))
      expect(yield* credit).toEqual({ balance: 1001, reserved: 0, available: 1001 })
      expect(yield* grants).toHaveLength(1)
    }))

  it.scoped("auto-recharge: the webhook first, the recharger asks Stripe nothing; both at once, the credits come once", () =>
    Effect.gen(function*() {
      const first = yield* startedRecharge
      expect((yield* deliver(first.succeeded)).status).toBe(200)
      expect((yield* first.billing).body.account.autoRecharge.pending).toBe(false)
      yield* first.lapse
      yield* Effect.sleep("200 millis")
      expect(first.lookups()).toEqual([])
      expect(yield* first.grants).toHaveLength(1)
      expect((yield* first.credit).balance).toBe(1001)

      // The lookup and deliveries of the webhook race: the lookup is held at Stripe while the webhook comes, then
      // answers the payment succeeded. The credits come once, whoever sees the payment first.
      const raced = yield* startedRecharge
      const release = stripe.holdRequests((request) =>
        request.method === "GET" && request.path === `/v1/payment_intents/${raced.paymentIntentId}`
      )
      yield* Effect.addFinalizer(() => Effect.sync(release))
      yield* raced.lapse
      yield* eventually(Effect.sync(raced.lookups), (found) => found.length === 1)
      const answers = yield* Effect.all(Array.from({ length: 5 }, () => deliver(raced.succeeded)), { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status)).toEqual(Array(5).fill(200))
      expect((yield* raced.billing).body.account.autoRecharge.pending).toBe(false)
      expect(yield* raced.grants).toHaveLength(1)
      release()
      // The held lookup answers and is acted on within a few rounds of the recharger.
      yield* Effect.sleep("300 millis")
      expect(raced.lookups()).toHaveLength(1)
      expect(yield* raced.grants).toHaveLength(1)
      expect((yield* raced.credit).balance).toBe(1001)
    }))

  it.scoped("auto-recharge whose webhook never comes: a failed payment found at Stripe ends it with the reason and turns it off", () =>
    Effect.gen(function*() {
      const { billing, credit, grants, lapse, lookups, paymentIntentId } = yield* startedRecharge
      stripe.setPaymentIntent(paymentIntentId, "requires_payment_method", "Your card has insufficient funds.")
      yield* lapse
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(after.body.account.autoRecharge).toEqual({
        enabled: false,
        threshold: 5,
        amount: 1000,
        pending: false,
        lastError: "The recharge failed: Your card has insufficient funds."
      })
      expect(lookups()).toHaveLength(1)
      expect(yield* grants).toEqual([])
      expect((yield* credit).balance).toBe(1)
    }))

  it.scoped("auto-recharge whose webhook never comes: a payment still processing stays pending, asked again later, less often", () =>
    Effect.gen(function*() {
      const { billing, credit, grants, lapse, lookups, organization, paymentIntentId } = yield* startedRecharge
      const sql = yield* SqlClient.SqlClient
      stripe.setPaymentIntent(paymentIntentId, "processing")
      yield* lapse
      yield* eventually(Effect.sync(lookups), (found) => found.length === 1)
      // Asked once: the next look waits twice as long (20 minutes), so the following rounds ask nothing.
      yield* Effect.sleep("200 millis")
      expect(lookups()).toHaveLength(1)
      expect((yield* billing).body.account.autoRecharge).toMatchObject({ enabled: true, pending: true })
      const [checks] = yield* sql<{ checks: number }>`SELECT auto_recharge_checks AS checks FROM organizations WHERE id = ${organization.id}`
      expect(checks).toEqual({ checks: 1 })
      // Ten minutes since the last look are not enough; twenty are.
      yield* sql`UPDATE organizations SET auto_recharge_checked_at = now() - interval '11 minutes' WHERE id = ${organization.id}`
      yield* Effect.sleep("200 millis")
      expect(lookups()).toHaveLength(1)
      yield* sql`UPDATE organizations SET auto_recharge_checked_at = now() - interval '21 minutes' WHERE id = ${organization.id}`
      yield* eventually(Effect.sync(lookups), (found) => found.length === 2)
      expect((yield* billing).body.account.autoRecharge.pending).toBe(true)
      // Paid at last: the next look grants it.
      stripe.setPaymentIntent(paymentIntentId, "succeeded")
      yield* lapse
      yield* eventually(billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(lookups()).toHaveLength(3)
      expect(yield* grants).toHaveLength(1)
      expect((yield* credit).balance).toBe(1001)
    }))

  it.scoped("auto-recharge whose webhook never comes: a lookup Stripe fails counts as one, asked again later; a day after the start it ends", () =>
    Effect.gen(function*() {
      const { billing, grants, lapse, organization, overdue } = yield* startedRecharge
      const sql = yield* SqlClient.SqlClient
      // A payment Stripe does not know answers 404: the lookup fails.
      yield* sql`UPDATE organizations SET auto_recharge_payment_intent_id = 'pi_unknown' WHERE id = ${organization.id}`
      yield* lapse
      const lookups = () => stripe.requests.filter((request) => request.path === "/v1/payment_intents/pi_unknown")
      yield* eventually(Effect.sync(lookups), (found) => found.length > 0)
      yield* Effect.sleep("200 millis")
      // Asked once (the SDK does not retry a 404), not again in the rounds that follow.
      expect(lookups()).toHaveLength(1)
      const [row] = yield* sql<{ checks: number }>`SELECT auto_recharge_checks AS checks FROM organizations WHERE id = ${organization.id}`
      expect(row).toEqual({ checks: 1 })
      expect((yield* billing).body.account.autoRecharge).toMatchObject({ enabled: true, pending: true, lastError: null })
      expect(yield* grants).toEqual([])
      // A day after its start, the next look failing too ends it: auto-recharge is not held up for good.
      yield* overdue
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(after.body.account.autoRecharge).toMatchObject({
        enabled: false,
        pending: false,
        lastError: "The recharge failed: Stripe gave no outcome for payment pi_unknown in 24 hours (the lookup failed)"
      })
      expect(lookups()).toHaveLength(2)
      expect(yield* grants).toEqual([])
    }))

  it.scoped("auto-recharge undecided a day after its start: canceled at Stripe when it still can be, ended as failed; paid after all, its credits come", () =>
    Effect.gen(function*() {
      const cancels = (paymentIntentId: string) => stripe.to(`/v1/payment_intents/${paymentIntentId}/cancel`)
      // Waiting for the customer's action: canceled, then ended.
      const waiting = yield* startedRecharge
      stripe.setPaymentIntent(waiting.paymentIntentId, "requires_action")
      yield* waiting.lapse
      yield* eventually(Effect.sync(waiting.lookups), (found) => found.length === 1)
      expect((yield* waiting.billing).body.account.autoRecharge.pending).toBe(true)
      yield* waiting.overdue
      const ended = yield* eventually(waiting.billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(ended.body.account.autoRecharge).toMatchObject({
        enabled: false,
        lastError: `The recharge failed: Stripe gave no outcome for payment ${waiting.paymentIntentId} in 24 hours (requires_action, canceled)`
      })
      expect(cancels(waiting.paymentIntentId)).toHaveLength(1)
      expect(stripe.paymentIntentStatus(waiting.paymentIntentId)).toBe("canceled")
      expect(yield* waiting.grants).toEqual([])

      // Processing, which Stripe cannot cancel: ended without; it succeeds later and its webhook brings the credits.
      const processing = yield* startedRecharge
      stripe.setPaymentIntent(processing.paymentIntentId, "processing")
      yield* processing.overdue
      const given = yield* eventually(processing.billing, (answer) => answer.body.account.autoRecharge.pending === false)
      expect(given.body.account.autoRecharge).toMatchObject({
        enabled: false,
        lastError: `The recharge failed: Stripe gave no outcome for payment ${processing.paymentIntentId} in 24 hours (processing)`
      })
      expect(cancels(processing.paymentIntentId)).toEqual([])
      stripe.setPaymentIntent(processing.paymentIntentId, "succeeded")
      expect((yield* deliver(processing.succeeded)).status).toBe(200)
      expect(yield* processing.grants).toEqual([{ amount: 1000, note: `Auto-recharge, payment ${processing.paymentIntentId}` }])
      expect((yield* processing.credit).balance).toBe(1001)
      expect((yield* deliver({ ...processing.succeeded, id: `evt_${randomUUID()}` })).status).toBe(200)
      expect(yield* processing.grants).toHaveLength(1)
    }))

  it.scoped("auto-recharge: a payment Stripe made while answering 500 to every start ends the recharge as not started; its webhook still brings the credits, once", () =>
    Effect.gen(function*() {
      const { billing, credit, organization, patch, spendOne } = yield* spendingTeam(2)
      const sql = yield* SqlClient.SqlClient
      const customerId = `cus_made_${randomUUID()}`
      yield* sql`UPDATE organizations SET payment_customer_id = ${customerId}, payment_payment_method_id = 'pm_made'
        WHERE id = ${organization.id}`
      yield* patch("/auto-recharge", { enabled: true, threshold: 5, amount: 1000 })
      const restore = stripe.failAfterMakingPaymentsOf(customerId)
      yield* Effect.addFinalizer(() => Effect.sync(restore))
      expect((yield* spendOne).status).toBe(200)
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.enabled === false)
      expect(after.body.account.autoRecharge).toMatchObject({
        pending: false,
        lastError: "The recharge could not start: the payment provider failed 5 times"
      })
      const [paymentIntentId, ...others] = stripe.paymentIntentsOf(organization.id)
      expect(others).toEqual([])
      const [request] = stripe.to("/v1/payment_intents").filter((request) => request.params.get("customer") === customerId)
      const succeeded = (id: string) => ({
        id,
        type: "payment_intent.succeeded",
        object: {
          id: paymentIntentId,
          object: "payment_intent",
          payment_method: "pm_made",
          metadata: Object.fromEntries([...request!.params].flatMap(([key, value]) => {
            const match = /^metadata\[(.+)\]$/.exec(key)
            return match ? [[match[1], value]] : []
          }))
        }
      })
      const answers = yield* Effect.all(
        [succeeded(`evt_${randomUUID()}`), succeeded(`evt_${randomUUID()}`)].map((event) => deliver(event)),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status)).toEqual([200, 200])
      expect(yield* credit).toEqual({ balance: 1001, reserved: 0, available: 1001 })
      expect((yield* billing).body.account.autoRecharge).toMatchObject({ enabled: false, pending: false })
    }))

  it.effect("subscription checkouts made concurrently: each expires the one open before, so one session at most can be paid", () =>
    Effect.gen(function*() {
      const { admin, checkout, organization } = yield* subscribingTeam
      const sql = yield* SqlClient.SqlClient
      const answers = yield* Effect.all([checkout, checkout], { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status)).toEqual([201, 201])
      const ids = answers.map((answer) => /\/(cs_test_\d+)$/.exec(answer.body.url)![1]!)
      const [{ open }] = yield* sql<{ open: string }>`SELECT subscription_checkout_session_id AS open FROM organizations
        WHERE id = ${organization.id}`
      const earlier = ids.find((id) => id !== open)!
      expect(ids).toContain(open)
      const expires = () =>
        stripe.requests.filter((request) => ids.some((id) => request.path === `/v1/checkout/sessions/${id}/expire`)).map((request) => request.path)
      expect(expires()).toEqual([`/v1/checkout/sessions/${earlier}/expire`])
      expect([stripe.sessionStatus(earlier), stripe.sessionStatus(open)]).toEqual(["expired", "open"])
      // A credit pack's checkout leaves the subscription's session open.
      const pack = yield* raw({
        method: "POST",
        path: billingPath(organization.id, "/checkout"),
        token: admin.token,
        json: { purchase: "credits", credits: 1000, returnUrl: "https://app.example/" }
      })
      expect(pack.status).toBe(201)
      expect(expires()).toHaveLength(1)
      expect(stripe.sessionStatus(open)).toBe("open")
      // The next subscription checkout expires the open one.
      const third = yield* checkout
      expect(third.status).toBe(201)
      expect(stripe.sessionStatus(open)).toBe("expired")
    }))

  it.effect("a subscription checkout waits its turn a few seconds, then 409; a claim left by a process that died lapses after two minutes", () =>
    Effect.gen(function*() {
      const { checkout, organization, sessions } = yield* subscribingTeam
      const sql = yield* SqlClient.SqlClient
      // Another request holds the claim (here set by hand) for longer than this one waits.
      yield* sql`UPDATE organizations SET subscription_checkout_claim = gen_random_uuid(), subscription_checkout_claimed_at = now()
        WHERE id = ${organization.id}`
      expect(yield* checkout).toMatchObject({
        status: 409,
        body: { _tag: "Conflict", message: "Another subscription checkout of the organization is being made: try again in a moment" }
      })
      expect(sessions()).toEqual([])
      // A claim outlasts the three calls to Stripe its checkout may make, each up to 30 seconds with its retries.
      yield* sql`UPDATE organizations SET subscription_checkout_claimed_at = now() - interval '100 seconds' WHERE id = ${organization.id}`
      expect((yield* checkout).status).toBe(409)
      yield* sql`UPDATE organizations SET subscription_checkout_claimed_at = now() - interval '121 seconds' WHERE id = ${organization.id}`
      expect((yield* checkout).status).toBe(201)
      expect(sessions()).toHaveLength(1)
      const [row] = yield* sql<{ claim: string | null }>`SELECT subscription_checkout_claim AS claim FROM organizations
        WHERE id = ${organization.id}`
      expect(row).toEqual({ claim: null })
    }))

  it.effect("a subscription checkout after the one before was paid (its subscription on its way): 409, no new session", () =>
    Effect.gen(function*() {
      const { admin, checkout, organization } = yield* subscribingTeam
      const first = yield* checkout
      const paid = /\/(cs_test_\d+)$/.exec(first.body.url)![1]!
      stripe.completeSession(paid, "sub_on_its_way")
      const sessions = () =>
        stripe.to("/v1/checkout/sessions").filter((request) => request.params.get("client_reference_id") === organization.id)
      expect(yield* checkout).toMatchObject({
        status: 409,
        body: {
          _tag: "Conflict",
          message: "The organization's previous subscription checkout was paid and its subscription is being set up: " +
            "GET …/billing shows it once it is"
        }
      })
      expect(stripe.requests.filter((request) => request.path === `/v1/checkout/sessions/${paid}/expire`)).toHaveLength(1)
      expect(sessions()).toHaveLength(1)
      // Credit packs are still sold meanwhile.
      const pack = yield* raw({
        method: "POST",
        path: billingPath(organization.id, "/checkout"),
        token: admin.token,
        json: { purchase: "credits", credits: 1000, returnUrl: "https://app.example/" }
      })
      expect(pack.status).toBe(201)

      // Its subscription arrives, then ends: a checkout is made again, the paid session being that ended subscription's.
      const { paymentCustomerId } = (yield* admin.client.billing.getBilling({ path: { organizationId: organization.id as OrganizationId } })).account!
      const subscription = (status: string) =>
        subscriptionObject({ id: "sub_on_its_way", customer: paymentCustomerId, status, startDate: Math.floor(Date.now() / 1000) })
      const now = Math.floor(Date.now() / 1000)
      yield* deliver({ id: `evt_${randomUUID()}`, type: "customer.subscription.created", object: subscription("active"), created: now - 2 })
      expect(yield* checkout).toMatchObject({ status: 409, body: { message: expect.stringContaining("subscribed already (active)") } })
      yield* deliver({ id: `evt_${randomUUID()}`, type: "customer.subscription.deleted", object: subscription("canceled"), created: now - 1 })
      expect((yield* checkout).status).toBe(201)
      expect(sessions().filter((request) => request.params.get("mode") === "subscription")).toHaveLength(2)
    }))

  it.effect("a subscription checkout while the organization's subscription is unpaid or paused: 409, pointing to the portal; canceled, a checkout is made", () =>
    Effect.gen(function*() {
      const { admin, checkout, organization, sessions } = yield* subscribingTeam
      const organizationId = organization.id as OrganizationId
      yield* admin.client.billing.createPortal({ path: { organizationId }, payload: { returnUrl: "https://app.example/" } })
      const customerId = (yield* admin.client.billing.getBilling({ path: { organizationId } })).account!.paymentCustomerId
      const now = Math.floor(Date.now() / 1000)
      const subscription = (status: string, created: number) =>
        deliver({
          id: `evt_${randomUUID()}`,
          type: "customer.subscription.updated",
          created,
          object: subscriptionObject({ id: "sub_stalled", customer: customerId, status, startDate: now })
        })
      for (const [status, created] of [["unpaid", now - 3], ["paused", now - 2]] as const) {
        expect((yield* subscription(status, created)).status).toBe(200)
        expect(yield* checkout).toMatchObject({
          status: 409,
          body: {
            _tag: "Conflict",
            message: `The organization is subscribed already (${status}): change the subscription in the billing portal`
          }
        })
      }
      expect(sessions()).toEqual([])
      yield* subscription("canceled", now - 1)
      expect((yield* checkout).status).toBe(201)
      expect(sessions()).toHaveLength(1)
    }))

  it.effect("a subscription checkout whose stored session Stripe does not know (another account or mode): taken as expired, a new one made", () =>
    Effect.gen(function*() {
      const { checkout, organization } = yield* subscribingTeam
      const sql = yield* SqlClient.SqlClient
      expect((yield* checkout).status).toBe(201)
      yield* sql`UPDATE organizations SET subscription_checkout_session_id = 'cs_test_unknown' WHERE id = ${organization.id}`
      const answer = yield* checkout
      expect(answer.status).toBe(201)
      const made = /\/(cs_test_\d+)$/.exec(answer.body.url)![1]!
      expect(stripe.requests.filter((request) => request.path === "/v1/checkout/sessions/cs_test_unknown/expire")).toHaveLength(1)
      const [row] = yield* sql<{ open: string }>`SELECT subscription_checkout_session_id AS open FROM organizations WHERE id = ${organization.id}`
      expect(row).toEqual({ open: made })
      expect(stripe.sessionStatus(made)).toBe("open")
    }))

  it.scoped("a subscription checkout runs to its end once Stripe is asked: its session is kept though the client went away; a claim lost meanwhile expires it, 409", () =>
    Effect.gen(function*() {
      const { admin, checkout, organization, sessions: creates } = yield* subscribingTeam
      const sql = yield* SqlClient.SqlClient
      const stored = sql<{ open: string | null; claim: string | null }>`SELECT subscription_checkout_session_id AS open,
          subscription_checkout_claim::text AS claim FROM organizations WHERE id = ${organization.id}`
      const holdCreates = () =>
        stripe.holdRequests((request) =>
          request.method === "POST" && request.path === "/v1/checkout/sessions" &&
          request.params.get("client_reference_id") === organization.id
        )
      yield* admin.client.billing.createPortal({ path: { organizationId: organization.id as OrganizationId }, payload: { returnUrl: "https://app.example/" } })

      // The client goes away while Stripe makes the session: the session is kept, the claim given back.
      const release = holdCreates()
      yield* Effect.addFinalizer(() => Effect.sync(release))
      const address = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
      const abort = new AbortController()
      const request = fetch(`http://127.0.0.1:${address.port}${billingPath(organization.id, "/checkout")}`, {
        method: "POST",
        headers: { authorization: `Bearer ${admin.token}`, "content-type": "application/json" },
        body: JSON.stringify({ purchase: "subscription", returnUrl: "https://app.example/" }),
        signal: abort.signal
      }).catch(() => undefined)
      yield* eventually(Effect.sync(creates), (found) => found.length === 1)
      abort.abort()
      yield* Effect.promise(() => request)
      // The server sees the connection closed before Stripe answers.
      yield* Effect.sleep("200 millis")
      release()
      const [kept] = yield* eventually(stored, ([row]) => row?.open !== null)
      expect(kept!.claim).toBeNull()
      expect(stripe.sessionStatus(kept!.open!)).toBe("open")

      // The claim lapses and another checkout takes it while Stripe makes this one's session: this session is
      // expired rather than left payable beside the other's, and the request refused.
      const releaseAgain = holdCreates()
      yield* Effect.addFinalizer(() => Effect.sync(releaseAgain))
      const fiber = yield* Effect.fork(checkout)
      yield* eventually(Effect.sync(creates), (found) => found.length === 2)
      yield* sql`UPDATE organizations SET subscription_checkout_claim = gen_random_uuid(), subscription_checkout_claimed_at = now()
        WHERE id = ${organization.id}`
      releaseAgain()
      expect(yield* Fiber.join(fiber)).toMatchObject({
        status: 409,
        body: {
          _tag: "Conflict",
          message: "Another subscription checkout of the organization was made while this one waited for Stripe: try again in a moment"
        }
      })
      const lost = stripe.requests.filter((request) => /^\/v1\/checkout\/sessions\/cs_test_\d+\/expire$/.test(request.path)).at(-1)!
      const lostId = /(cs_test_\d+)/.exec(lost.path)![1]!
      expect(lostId).not.toBe(kept!.open)
      expect(stripe.sessionStatus(lostId)).toBe("expired")
      const [after] = yield* stored
      expect(after!.open).toBe(kept!.open)
    }))

  it.scoped("a call Stripe does not answer is given up after 10 seconds and tried again (a checkout's claim outlasts three such calls)", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id as OrganizationId
      const returnUrl = "https://app.example/slow"
      // Every attempt is held, the retry too (a replay of the first's idempotency key): counted as it comes.
      let attempts = 0
      const release = stripe.holdRequests((request) => request.params.get("return_url") === returnUrl && ++attempts > 0)
      yield* Effect.addFinalizer(() => Effect.sync(release))
      const portal = yield* Effect.fork(admin.client.billing.createPortal({ path: { organizationId }, payload: { returnUrl } }))
      yield* eventually(Effect.sync(() => attempts), (count) => count === 1)
      const started = Date.now()
      yield* eventually(Effect.sync(() => attempts), (count) => count === 2)
      expect(attempts).toBe(2)
      expect(Date.now() - started).toBeGreaterThan(8_000)
      release()
      expect((yield* Fiber.join(portal)).url).toMatch(/^https:\/\/billing\.stripe\.test\//)
    }))

  it.effect("a second subscription's events while the organization's is active change nothing (an operator is warned)", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam(0)
      const organizationId = organization.id as OrganizationId
      yield* admin.client.billing.createPortal({ path: { organizationId }, payload: { returnUrl: "https://app.example/" } })
      const account = () => Effect.map(admin.client.billing.getBilling({ path: { organizationId } }), (billing) => billing.account!)
      const customerId = (yield* account()).paymentCustomerId
      const now = Math.floor(Date.now() / 1000)
      const subscription = (id: string, status: string, created: number) =>
        deliver({
          id: `evt_${randomUUID()}`,
          type: "customer.subscription.created",
          created,
          object: subscriptionObject({ id, customer: customerId, status, startDate: now })
        })
      expect((yield* subscription("sub_first", "active", now - 2)).status).toBe(200)
      expect((yield* subscription("sub_second", "active", now - 1)).status).toBe(200)
      expect(yield* account()).toMatchObject({ paymentSubscriptionId: "sub_first", subscriptionStatus: "active", isSubscribed: true })
    }))

  it.effect("payment events received over 30 days ago are forgotten; younger ones kept", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const old = `evt_old_${randomUUID()}`
      const young = `evt_young_${randomUUID()}`
      yield* sql`INSERT INTO billing_events (event_id, type, received_at) VALUES
        (${old}, 'invoice.paid', now() - interval '31 days'), (${young}, 'invoice.paid', now() - interval '29 days')`
      const kept = sql<{ id: string }>`SELECT event_id AS id FROM billing_events WHERE event_id IN (${old}, ${young})`
      const rows = yield* eventually(kept, (rows) => rows.length === 1)
      expect(rows).toEqual([{ id: young }])
    }))

  it.scoped("the spend cap holds under concurrent publishes: exactly the cap is spent, the rest 402", () =>
    Effect.gen(function*() {
      const { billing, credit, patch, spendOne } = yield* spendingTeam(100)
      yield* patch("/spend-cap", { monthlyCredits: 3 })
      const answers = yield* Effect.all(Array.from({ length: 10 }, () => spendOne), { concurrency: "unbounded" })
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(3)
      for (const refused of answers.filter((answer) => answer.status !== 200)) {
        expect(refused).toMatchObject({ status: 402, body: { _tag: "PaymentRequired", message: expect.stringContaining("monthly spend cap of 3 credits") } })
      }
      expect(yield* credit).toEqual({ balance: 97, reserved: 0, available: 97 })
      expect((yield* billing).body.account.spendCap).toEqual({ monthlyCredits: 3, spentThisMonth: 3 })
    }))

  it.scoped("a direct charge (live analytics reads) counts against the spend cap and decides a recharge, as publishing does", () =>
    Effect.gen(function*() {
      const { billing, credit, organization, patch } = yield* spendingTeam(10)
      const organizationId = organization.id as OrganizationId
      const credits = yield* CreditsRepo
      const read = (amount: number) => withSystemActor(credits.charge(organizationId, [{ socialAccountId: randomUUID() as SocialAccountId, amount }]))
      yield* patch("/spend-cap", { monthlyCredits: 3 })
      yield* read(2)
      expect(yield* Effect.flip(read(2))).toMatchObject({
        _tag: "PaymentRequired",
        message: "This needs 2 credits, beyond the organization's monthly spend cap of 3 credits (2 spent this month); " +
          "an admin or owner may raise the cap"
      })
      expect(yield* credit).toEqual({ balance: 8, reserved: 0, available: 8 })

      const sql = yield* SqlClient.SqlClient
      // No customer: the recharge this decides cannot start, and says why.
      yield* sql`UPDATE organizations SET payment_payment_method_id = 'pm_x' WHERE id = ${organizationId}`
      yield* patch("/auto-recharge", { enabled: true, threshold: 8, amount: 1000 })
      yield* read(1)
      const after = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.enabled === false)
      expect(after.body.account.autoRecharge).toMatchObject({
        pending: false,
        lastError: "The recharge could not start: the organization has no customer at the payment provider"
      })
      expect(after.body.account.spendCap).toEqual({ monthlyCredits: 3, spentThisMonth: 3 })
      // A customer but no saved card (removed since): that reason.
      yield* sql`UPDATE organizations SET payment_customer_id = 'cus_x', payment_payment_method_id = NULL WHERE id = ${organizationId}`
      yield* sql`UPDATE organizations SET auto_recharge_enabled = true WHERE id = ${organizationId}`
      yield* patch("/spend-cap", { monthlyCredits: null })
      yield* read(1)
      const noCard = yield* eventually(billing, (answer) => answer.body.account.autoRecharge.enabled === false)
      expect(noCard.body.account.autoRecharge).toMatchObject({
        pending: false,
        lastError: "The recharge could not start: no saved payment method"
      })
    }))
})
