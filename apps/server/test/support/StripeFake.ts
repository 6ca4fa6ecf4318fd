import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import Stripe from "stripe"

/**
 * No Stripe server can run here, so outbound Stripe calls go to this HTTP-level fake of the few endpoints the
 * server uses (customers, checkout and portal sessions, prices, payment intents and their cancel; sessions and
 * intents are kept, with the state a test gives them; one Stripe does not have is 404 resource_missing). The server's real `stripe` SDK
 * talks to it (STRIPE_API_URL); it records each request's form parameters and keeps Stripe's idempotency keys.
 */
export interface StripeRequest {
  readonly method: string
  readonly path: string
  readonly params: URLSearchParams
}

export const stripeWebhookSecret = "whsec_postline_test"

export const makeStripeFake = async () => {
  const requests: Array<StripeRequest> = []
  const byIdempotencyKey = new Map<string, unknown>()
  let counter = 0
  let declineNext = false
  // Customers whose payment intents fail as Stripe's outage would: 500, not to be retried by the SDK at once.
  const failing = new Set<string>()
  // Customers whose payment intents Stripe makes (one per idempotency key) but answers 500 about, as if it failed after.
  const failingAfterMaking = new Set<string>()
  // Customers whose meter events fail as in Stripe's outage (500); and every meter event call, replays included.
  const failingMeters = new Set<string>()
  // Customers whose meter events Stripe refuses as invalid (400), with its message: never taken, however often sent.
  const refusedMeters = new Map<string, string>()
  const meterCalls: Array<StripeRequest> = []
  // While set, meter events are answered only once it resolves: a slow Stripe.
  let heldMeters: Promise<void> | undefined
  // While set, payment intents are answered only once it resolves: a recharge held at Stripe.
  let held: Promise<void> | undefined
  // Requests answered only once their hold is released: Stripe slow at one call.
  const holds: Array<{ readonly matches: (request: StripeRequest) => boolean; readonly until: Promise<void> }> = []
  const prices = new Map([["price_pack_1000", 1000], ["price_pack_5000", 4500]])
  // The checkout sessions and payment intents made, as Stripe keeps them; tests move them on (paid, failed...).
  const sessions = new Map<string, { status: string; mode: string | null; subscription: string | null }>()
  const intents = new Map<string, { status: string; metadata: Record<string, string>; lastError: string | null }>()
  const missing = (what: string, id: string) => ({
    status: 404,
    body: { error: { type: "invalid_request_error", code: "resource_missing", message: `No such ${what}: '${id}'` } }
  })

  const answer = (request: StripeRequest): { status: number; body: unknown } => {
    const id = (prefix: string) => `${prefix}_${++counter}`
    const metadata = Object.fromEntries(
      [...request.params].flatMap(([key, value]) => {
        const match = /^metadata\[(.+)\]$/.exec(key)
        return match ? [[match[1], value]] : []
      })
    )
    if (request.method === "POST" && request.path === "/v1/customers") {
      return { status: 200, body: { id: id("cus"), object: "customer", metadata } }
    }
    if (request.method === "POST" && request.path === "/v1/checkout/sessions") {
      const session = id("cs_test")
      sessions.set(session, { status: "open", mode: request.params.get("mode"), subscription: null })
      return { status: 200, body: { id: session, object: "checkout.session", status: "open", url: `https://checkout.stripe.test/c/pay/${session}` } }
    }
    const sessionPath = /^\/v1\/checkout\/sessions\/(\w+)(\/expire)?$/.exec(request.path)
    const session = sessionPath === null ? undefined : sessions.get(sessionPath[1]!)
    if (sessionPath !== null) {
      if (session === undefined) return missing("checkout.session", sessionPath[1]!)
      const answer = () => ({ status: 200, body: { id: sessionPath[1], object: "checkout.session", ...session } })
      if (request.method === "GET" && sessionPath[2] === undefined) return answer()
      if (request.method === "POST" && sessionPath[2] !== undefined) {
        // Stripe's answer for a session that is not open.
        if (session.status !== "open") {
          return {
            status: 400,
            body: {
              error: {
                type: "invalid_request_error",
                message: `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of \`${session.status}\`.`
              }
            }
          }
        }
        session.status = "expired"
        return answer()
      }
    }
    if (request.method === "POST" && request.path === "/v1/billing_portal/sessions") {
      const session = id("bps")
      return { status: 200, body: { id: session, object: "billing_portal.session", url: `https://billing.stripe.test/p/session/${session}` } }
    }
    const price = /^\/v1\/prices\/(\w+)$/.exec(request.path)
    if (request.method === "GET" && price) {
      const amount = prices.get(price[1]!)
      return amount === undefined
        ? { status: 404, body: { error: { type: "invalid_request_error", message: `No such price: '${price[1]}'` } } }
        : { status: 200, body: { id: price[1], object: "price", unit_amount: amount, currency: "usd" } }
    }
    if (request.method === "POST" && request.path === "/v1/payment_intents" && failing.has(request.params.get("customer") ?? "")) {
      return { status: 500, body: { error: { type: "api_error", message: "Something went wrong on Stripe's end." } } }
    }
    if (request.method === "POST" && request.path === "/v1/payment_intents" && failingAfterMaking.has(request.params.get("customer") ?? "")) {
      if (![...intents.values()].some((intent) => intent.metadata.token === metadata.token)) {
        intents.set(id("pi"), { status: "succeeded", metadata, lastError: null })
      }
      return { status: 500, body: { error: { type: "api_error", message: "Something went wrong on Stripe's end." } } }
    }
    if (request.method === "POST" && request.path === "/v1/payment_intents") {
      if (declineNext) {
        declineNext = false
        return { status: 402, body: { error: { type: "card_error", code: "card_declined", message: "Your card was declined." } } }
      }
      const intent = id("pi")
      intents.set(intent, { status: "succeeded", metadata, lastError: null })
      return { status: 200, body: { id: intent, object: "payment_intent", status: "succeeded", metadata } }
    }
    const intentPath = /^\/v1\/payment_intents\/(\w+)(\/cancel)?$/.exec(request.path)
    const intent = intentPath === null ? undefined : intents.get(intentPath[1]!)
    if (request.method === "POST" && intentPath?.[2] !== undefined) {
      if (intent === undefined) return missing("payment_intent", intentPath[1]!)
      if (!["requires_payment_method", "requires_confirmation", "requires_action", "requires_capture"].includes(intent.status)) {
        return {
          status: 400,
          body: {
            error: {
              type: "invalid_request_error",
              code: "payment_intent_unexpected_state",
              message: `You cannot cancel this PaymentIntent because it has a status of ${intent.status}.`
            }
          }
        }
      }
      intent.status = "canceled"
      return { status: 200, body: { id: intentPath[1], object: "payment_intent", status: "canceled", metadata: intent.metadata } }
    }
    if (request.method === "GET" && intentPath !== null && intentPath[2] === undefined) {
      return intent === undefined
        ? missing("payment_intent", intentPath[1]!)
        : {
          status: 200,
          body: {
            id: intentPath[1],
            object: "payment_intent",
            status: intent.status,
            metadata: intent.metadata,
            last_payment_error: intent.lastError === null ? null : { type: "card_error", message: intent.lastError },
            cancellation_reason: null
          }
        }
    }
    // Billing Meters: usage of a metered price, one event per call, as Stripe answers it.
    if (request.method === "POST" && request.path === "/v1/billing/meter_events") {
      const customer = request.params.get("payload[stripe_customer_id]") ?? ""
      if (failingMeters.has(customer)) {
        return { status: 500, body: { error: { type: "api_error", message: "Something went wrong on Stripe's end." } } }
      }
      const refusal = refusedMeters.get(customer)
      if (refusal !== undefined) return { status: 400, body: { error: { type: "invalid_request_error", message: refusal } } }
      return {
        status: 200,
        body: {
          object: "billing.meter_event",
          created: Math.floor(Date.now() / 1000),
          event_name: request.params.get("event_name"),
          identifier: request.params.get("identifier"),
          livemode: false,
          payload: { stripe_customer_id: customer, value: request.params.get("payload[value]") },
          timestamp: Number(request.params.get("timestamp"))
        }
      }
    }
    return { status: 404, body: { error: { type: "invalid_request_error", message: `Unrecognized request URL (${request.path})` } } }
  }

  const server = createServer((incoming, response) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const url = new URL(incoming.url ?? "/", "http://stripe.test")
      const request = { method: incoming.method ?? "GET", path: url.pathname, params: new URLSearchParams(Buffer.concat(chunks).toString("utf8")) }
      const key = incoming.headers["idempotency-key"]
      const replayKey = typeof key === "string" ? `${request.path} ${key}` : undefined
      const stored = replayKey === undefined ? undefined : byIdempotencyKey.get(replayKey) as { status: number; body: unknown } | undefined
      if (request.path === "/v1/billing/meter_events") meterCalls.push(request)
      if (stored === undefined) requests.push(request)
      const { body, status } = stored ?? answer(request)
      if (replayKey !== undefined && stored === undefined && status < 500) byIdempotencyKey.set(replayKey, { status, body })
      const reply = () =>
        response.writeHead(status, { "content-type": "application/json", "request-id": `req_${counter}`, "stripe-should-retry": "false" })
          .end(JSON.stringify(body))
      const hold = holds.find((hold) => hold.matches(request))
      if (hold !== undefined) void hold.until.then(reply)
      else if (held !== undefined && request.path === "/v1/payment_intents") void held.then(reply)
      else if (heldMeters !== undefined && request.path === "/v1/billing/meter_events") void heldMeters.then(reply)
      else reply()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  server.unref()
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    requests,
    /** The requests to one path. */
    to: (path: string) => requests.filter((request) => request.path === path),
    /** The next payment intent is declined, as a card would be. */
    declineNextPayment: () => void (declineNext = true),
    /** Payment intents are answered only once the returned function is called (the requests are recorded at once). */
    holdPayments: () => {
      let release!: () => void
      held = new Promise<void>((resolve) => (release = resolve))
      return () => {
        held = undefined
        release()
      }
    },
    /**
     * The requests `matches` picks are answered only once the returned function is called (they are recorded at
     * once); those answered before are not.
     */
    holdRequests: (matches: (request: StripeRequest) => boolean) => {
      let release!: () => void
      const hold = { matches, until: new Promise<void>((resolve) => (release = resolve)) }
      holds.push(hold)
      return () => {
        holds.splice(holds.indexOf(hold), 1)
        release()
      }
    },
    /** The customer's payment intents are made, but Stripe answers 500 about each, until the returned function is called. */
    failAfterMakingPaymentsOf: (customerId: string) => {
      failingAfterMaking.add(customerId)
      return () => void failingAfterMaking.delete(customerId)
    },
    /** The ids of the organization's payment intents, as made. */
    paymentIntentsOf: (organizationId: string) =>
      [...intents].filter(([, intent]) => intent.metadata.organizationId === organizationId).map(([id]) => id),
    /** The payment intent's status. */
    paymentIntentStatus: (id: string) => intents.get(id)?.status,
    /** The customer's payment intents fail (500) until the returned function is called. */
    failPaymentsOf: (customerId: string) => {
      failing.add(customerId)
      return () => void failing.delete(customerId)
    },
    /** Every call to meter events, replays of an idempotency key included: what the server asked, however answered. */
    meterCalls,
    /** The customer's meter events fail (500) until the returned function is called. */
    failMeterEventsOf: (customerId: string) => {
      failingMeters.add(customerId)
      return () => void failingMeters.delete(customerId)
    },
    /** The customer's meter events are refused as invalid (400, Stripe's `invalid_request_error`) until the returned function is called. */
    refuseMeterEventsOf: (customerId: string, message: string) => {
      refusedMeters.set(customerId, message)
      return () => void refusedMeters.delete(customerId)
    },
    /** Meter events are answered only once the returned function is called (the requests are recorded at once). */
    holdMeterEvents: () => {
      let release!: () => void
      heldMeters = new Promise<void>((resolve) => (release = resolve))
      return () => {
        heldMeters = undefined
        release()
      }
    },
    /** The payment intent is now in `status` (as made, one is succeeded), with the error of its last attempt. */
    setPaymentIntent: (id: string, status: string, lastError: string | null = null) =>
      void Object.assign(intents.get(id)!, { status, lastError }),
    /** The checkout session was paid: complete, with the subscription it made. */
    completeSession: (id: string, subscription: string | null) =>
      void Object.assign(sessions.get(id)!, { status: "complete", subscription }),
    /** The checkout session's status: open, complete or expired. */
    sessionStatus: (id: string) => sessions.get(id)?.status,
    /** Stripe no longer has the price, as after its deletion; answers how to give it back. */
    forgetPrice: (id: string) => {
      const amount = prices.get(id)!
      prices.delete(id)
      return () => void prices.set(id, amount)
    },
    /** The settings of a server that sells through this fake. */
    settings: {
      STRIPE_SECRET_KEY: "sk_test_postline",
      STRIPE_WEBHOOK_SECRET: stripeWebhookSecret,
      STRIPE_API_URL: url,
      BILLING_CREDIT_PACKS: JSON.stringify({ 1000: "price_pack_1000", 5000: "price_pack_5000" }),
      BILLING_PLAN_PRICE_ID: "price_plan",
      BILLING_PLAN_METERED_PRICE_ID: "price_metered",
      BILLING_PLAN_METER_EVENT: "postline_credits",
      BILLING_PLAN_NAME: "Pro",
      BILLING_PLAN_CREDITS: "2000",
      BILLING_RECHARGE_POLL_MS: "100"
    }
  }
}

const signer = new Stripe("sk_test_postline")

/** An event as Stripe sends it: its JSON and a real `Stripe-Signature` over it, made with the endpoint's secret. */
export const signedEvent = (
  event: { readonly id: string; readonly type: string; readonly created?: number; readonly object: unknown },
  secret = stripeWebhookSecret
) => {
  const body = JSON.stringify({
    id: event.id,
    object: "event",
    api_version: "2026-10-28.endive",
    created: event.created ?? Math.floor(Date.now() / 1000),
    type: event.type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object: event.object }
  })
  return { body, signature: signer.webhooks.generateTestHeaderString({ payload: body, secret }) }
}


/** A Stripe Subscription as its events carry it: nothing ended or cancelled; `items` its prices and period end. */
export const subscriptionObject = (subscription: {
  readonly id: string
  readonly customer: string | null
  readonly status: string
  readonly startDate: number
  readonly paymentMethod?: string | null
  readonly items?: ReadonlyArray<{ readonly id: string; readonly price: string; readonly periodEnd: number }>
}) => ({
  id: subscription.id,
  object: "subscription",
  customer: subscription.customer,
  status: subscription.status,
  start_date: subscription.startDate,
  ended_at: null,
  cancel_at: null,
  default_payment_method: subscription.paymentMethod ?? null,
  items: {
    object: "list",
    data: (subscription.items ?? []).map((item) => ({ id: item.id, price: { id: item.price }, current_period_end: item.periodEnd }))
  }
})
