import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
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

      const { body, signature } = signedEvent({
        id: `evt_${randomUUID()}`,
        type: "checkout.session.completed",
        object: {
          id: "cs_process",
          mode: "payment",
          payment_status: "paid",
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
    }), 60_000)
})
