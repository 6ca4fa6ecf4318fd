import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { publishEnv, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver } from "./support/Publishing.js"
import { callsAs, createUserWithToken, startServer } from "./support/ServerProcess.js"
import { makeStripeFake, signedEvent } from "./support/StripeFake.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

/**
 * The built server (the bundle, with the `stripe` SDK inside) sells through Stripe: here an HTTP-level fake of it,
 * since no Stripe server can run here, and events signed with the SDK's test header.
 */
describe("the built server with Stripe", () => {
  it.scopedLive("starts a checkout through the bundled SDK and takes a signed event's credits", () =>
    Effect.gen(function*() {
      const stripe = yield* Effect.promise(makeStripeFake)
      const env = { ...(yield* freshDatabaseEnv), ...stripe.settings }
      const { token } = yield* createUserWithToken(env)
      const server = yield* startServer(env)
      const call = callsAs(server, token)
      const organization = (yield* call("POST", "/v1/organizations", { name: "Acme" })).body
      const path = `/v1/organizations/${organization.id}/billing`
      const checkout = yield* call("POST", `${path}/checkout`, { purchase: "credits", credits: 1000, returnUrl: "https://app.example/" })
      expect(checkout).toMatchObject({ status: 201, body: { url: expect.stringMatching(/^https:\/\/checkout\.stripe\.test\//) } })
      expect(stripe.to("/v1/checkout/sessions")).toHaveLength(1)
      const customer = (yield* call("GET", path)).body.account.paymentCustomerId

      const { body, signature } = signedEvent({
        id: `evt_${randomUUID()}`,
        type: "checkout.session.completed",
        object: {
          id: "cs_process",
          mode: "payment",
          payment_status: "paid",
          customer,
          metadata: { purpose: "credit_pack", organizationId: organization.id, credits: "1000" }
        }
      })
      const delivered = yield* Effect.promise(() =>
        fetch(`${server.base}/v1/billing/webhooks/stripe`, {
          method: "POST",
          headers: { "content-type": "application/json", "stripe-signature": signature },
          body
        })
      )
      expect(delivered.status).toBe(200)
      expect((yield* call("GET", path)).body).toMatchObject({ enabled: true, credits: { balance: 1000 } })
    }))

  it.scopedLive("recharges in the background: a spend below the threshold pays a pack off-session, its webhook brings the credits", () =>
    Effect.gen(function*() {
      const stripe = yield* Effect.promise(makeStripeFake)
      const receiver = yield* makeWebhookReceiver
      const env = publishEnv(yield* freshDatabaseEnv, stripe.settings)
      const { token } = yield* createUserWithToken(env)
      const server = yield* startServer(env)
      const call = callsAs(server, token)
      const deliver = (event: Parameters<typeof signedEvent>[0]) =>
        Effect.promise(() => {
          const { body, signature } = signedEvent(event)
          return fetch(`${server.base}/v1/billing/webhooks/stripe`, {
            method: "POST",
            headers: { "content-type": "application/json", "stripe-signature": signature },
            body
          }).then((response) => response.status)
        })
      const organization = (yield* call("POST", "/v1/organizations", { name: "Acme" })).body
      const path = `/v1/organizations/${organization.id}/billing`
      // A pack bought through a checkout: its credits, and its card kept for recharges.
      expect((yield* call("POST", `${path}/checkout`, { purchase: "credits", credits: 1000, returnUrl: "https://app.example/" })).status)
        .toBe(201)
      const paidPack = { purpose: "credit_pack", organizationId: organization.id }
      const customer = (yield* call("GET", path)).body.account.paymentCustomerId
      expect(
        yield* deliver({
          id: `evt_${randomUUID()}`,
          type: "checkout.session.completed",
          object: { id: "cs_pack", mode: "payment", payment_status: "paid", customer, metadata: { ...paidPack, credits: "1000" } }
        })
      ).toBe(200)
      expect(
        yield* deliver({
          id: `evt_${randomUUID()}`,
          type: "payment_intent.succeeded",
          object: { id: "pi_pack", object: "payment_intent", payment_method: "pm_card", metadata: paidPack }
        })
      ).toBe(200)
      expect((yield* call("PATCH", `${path}/auto-recharge`, { enabled: true, threshold: 1000, amount: 1000 })).status).toBe(200)

      const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" })).body
      const account = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiver.url })).body
      const post = (yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "One credit" })).body
      expect((yield* call("POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, { socialAccountIds: [account.id] })).status).toBe(200)
      expect((yield* call("GET", path)).body.account.autoRecharge.pending).toBe(true)
      // The server process's recharger (started with its background workers) pays the pack.
      const intents = yield* readUntil(Effect.sync(() => stripe.to("/v1/payment_intents")), (found) => found.length > 0)
      expect(intents).toHaveLength(1)
      const [intent] = intents
      expect(Object.fromEntries(intent!.params)).toMatchObject({
        payment_method: "pm_card",
        "metadata[purpose]": "auto_recharge",
        "metadata[organizationId]": organization.id,
        "metadata[credits]": "1000"
      })
      const metadata = Object.fromEntries([...intent!.params].flatMap(([key, value]) => {
        const match = /^metadata\[(.+)\]$/.exec(key)
        return match ? [[match[1], value]] : []
      }))
      expect(
        yield* deliver({
          id: `evt_${randomUUID()}`,
          type: "payment_intent.succeeded",
          object: { id: "pi_recharge", object: "payment_intent", payment_method: "pm_card", metadata }
        })
      ).toBe(200)
      expect((yield* call("GET", path)).body).toMatchObject({
        credits: { balance: 1999 },
        account: { autoRecharge: { enabled: true, pending: false, lastError: null } }
      })
    }))
})
