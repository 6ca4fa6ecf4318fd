import { Config, ConfigError, Effect, Either, Option, Redacted, Schema } from "effect"

/** A pack on sale: its credits and the Stripe price it is sold at. */
export interface PackSetting {
  readonly credits: number
  readonly priceId: string
}

/**
 * The subscription plan: its name, its Stripe price, the credits each paid period brings, and the metered price of
 * usage beyond them with the event name of the Stripe meter that price bills.
 */
export interface PlanSetting {
  readonly name: string
  readonly priceId: string
  readonly includedCredits: number
  readonly meteredPriceId: string | null
  readonly meterEvent: string | null
}

export interface StripeSettings {
  readonly secretKey: Redacted.Redacted<string>
  readonly webhookSecret: Redacted.Redacted<string>
  /** Where the Stripe API is; only tests and proxies change it. */
  readonly apiUrl: URL
}

const PriceId = Schema.String.pipe(Schema.pattern(/^price_[A-Za-z0-9_]+$/))
const Packs = Schema.parseJson(Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^[1-9][0-9]{0,8}$/)), value: PriceId }))

const invalid = (name: string, message: string) => ConfigError.InvalidData([name], message)

/** An empty value, as an env file may leave one, is no value. */
const setting = (name: string) => Config.option(Config.redacted(name)).pipe(
  Config.map(Option.filter((value) => Redacted.value(value).trim() !== ""))
)

const packsOf = (text: string) =>
  Either.match(Schema.decodeUnknownEither(Packs, { onExcessProperty: "error" })(text), {
    onLeft: () =>
      Effect.fail(invalid(
        "BILLING_CREDIT_PACKS",
        "must be a JSON object of credits to Stripe price ids, e.g. {\"1000\":\"price_123\",\"5000\":\"price_456\"}"
      )),
    onRight: (record) => {
      const packs = Object.entries(record).map(([credits, priceId]) => ({ credits: Number(credits), priceId }))
      return packs.length === 0
        ? Effect.fail(invalid("BILLING_CREDIT_PACKS", "must name at least one pack"))
        : Effect.succeed(packs.sort((a, b) => a.credits - b.credits))
    }
  })

const priceIdOf = (name: string) =>
  Effect.flatMap(Config.option(Config.string(name)), (value) =>
    Option.isSome(value) && value.value !== "" && !Schema.is(PriceId)(value.value)
      ? Effect.fail(invalid(name, "must be a Stripe price id (price_...)"))
      : Effect.succeed(Option.filter(value, (id) => id !== "")))

// Stripe's meter event names: up to 100 characters.
const MeterEvent = Schema.String.pipe(Schema.pattern(/^[\x21-\x7e]{1,100}$/))

/** The meter's event name goes with the metered price, each needing the other: without it overage would never be billed. */
const meterEventOf = (meteredPrice: Option.Option<string>) =>
  Effect.flatMap(Config.option(Config.string("BILLING_PLAN_METER_EVENT")), (text) => {
    const value = Option.filter(text, (name) => name !== "")
    if (Option.isSome(meteredPrice) && Option.isNone(value)) {
      return Effect.fail(ConfigError.MissingData(
        ["BILLING_PLAN_METER_EVENT"],
        "BILLING_PLAN_METERED_PRICE_ID is set, so BILLING_PLAN_METER_EVENT must name the event of the Stripe meter its price bills"
      ))
    }
    if (Option.isNone(meteredPrice) && Option.isSome(value)) {
      return Effect.fail(invalid("BILLING_PLAN_METER_EVENT", "needs BILLING_PLAN_METERED_PRICE_ID, the metered price its meter bills"))
    }
    return Option.isSome(value) && !Schema.is(MeterEvent)(value.value)
      ? Effect.fail(invalid("BILLING_PLAN_METER_EVENT", "must be a Stripe meter's event name: 1 to 100 printable characters, no spaces"))
      : Effect.succeed(value)
  })

/**
 * Billing's settings, read once at start. Without STRIPE_SECRET_KEY the server sells nothing (an operator grants
 * credits); with it, STRIPE_WEBHOOK_SECRET and BILLING_CREDIT_PACKS must be set and valid, or the server does not
 * start. BILLING_PLAN_PRICE_ID (with BILLING_PLAN_CREDITS, BILLING_PLAN_METERED_PRICE_ID with
 * BILLING_PLAN_METER_EVENT, and BILLING_PLAN_NAME) offers a subscription.
 */
export class BillingSettings extends Effect.Service<BillingSettings>()("Billing/Settings", {
  effect: Effect.gen(function*() {
    const secretKey = yield* setting("STRIPE_SECRET_KEY")
    // Under 10 ms the poll is a busy loop on the database; over an hour a recharge comes too late to help.
    const rechargePollMs = yield* Config.integer("BILLING_RECHARGE_POLL_MS").pipe(
      Config.validate({
        message: "must be a whole number of milliseconds from 10 to 3600000",
        validation: (ms) => ms >= 10 && ms <= 3_600_000
      }),
      Config.withDefault(2000)
    )
    // Billing off is said by GET …/billing (enabled: false), not logged: this runs before the database opens, where
    // a start that fails must leave its one FATAL line alone.
    if (Option.isNone(secretKey)) {
      return { stripe: Option.none<StripeSettings>(), packs: [] as ReadonlyArray<PackSetting>, plan: Option.none<PlanSetting>(), rechargePollMs }
    }
    const webhookSecret = yield* setting("STRIPE_WEBHOOK_SECRET")
    if (Option.isNone(webhookSecret)) {
      return yield* Effect.fail(ConfigError.MissingData(
        ["STRIPE_WEBHOOK_SECRET"],
        "STRIPE_SECRET_KEY is set, so STRIPE_WEBHOOK_SECRET (the endpoint's signing secret, whsec_...) must be set too"
      ))
    }
    const packsText = yield* Config.option(Config.string("BILLING_CREDIT_PACKS"))
    if (Option.isNone(packsText)) {
      return yield* Effect.fail(ConfigError.MissingData(
        ["BILLING_CREDIT_PACKS"],
        "STRIPE_SECRET_KEY is set, so BILLING_CREDIT_PACKS must name the packs on sale, e.g. {\"1000\":\"price_123\"}"
      ))
    }
    const packs = yield* packsOf(packsText.value)
    const planPrice = yield* priceIdOf("BILLING_PLAN_PRICE_ID")
    const meteredPrice = yield* priceIdOf("BILLING_PLAN_METERED_PRICE_ID")
    if (Option.isNone(planPrice) && Option.isSome(meteredPrice)) {
      return yield* Effect.fail(invalid("BILLING_PLAN_METERED_PRICE_ID", "needs BILLING_PLAN_PRICE_ID, the plan it belongs to"))
    }
    const meterEvent = yield* meterEventOf(meteredPrice)
    const planName = yield* Config.string("BILLING_PLAN_NAME").pipe(Config.withDefault("standard"))
    const includedCredits = yield* Config.integer("BILLING_PLAN_CREDITS").pipe(
      Config.validate({ message: `must be a whole number of credits from 0 to 1000000000`, validation: (n) => n >= 0 && n <= 1_000_000_000 }),
      Config.withDefault(0)
    )
    const apiUrl = yield* Config.url("STRIPE_API_URL").pipe(Config.withDefault(new URL("https://api.stripe.com")))
    return {
      stripe: Option.some<StripeSettings>({ secretKey: secretKey.value, webhookSecret: webhookSecret.value, apiUrl }),
      packs: packs as ReadonlyArray<PackSetting>,
      plan: Option.map(planPrice, (priceId): PlanSetting => ({
        name: planName,
        priceId,
        includedCredits,
        meteredPriceId: Option.getOrNull(meteredPrice),
        meterEvent: Option.getOrNull(meterEvent)
      })),
      rechargePollMs
    }
  })
}) {}
