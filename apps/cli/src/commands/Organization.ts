import { Command } from "@effect/cli"
import { Billing, type BillingAccount, CreditAmount, CreditBalance, invalidUnless, maxCredits, TeamPostingSlots } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Schema } from "effect"
import { decodedArg, organization, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { Output } from "../Output.js"
import { online } from "../Session.js"
import { fields, orDash, table } from "../Table.js"
import { organizationOf, teamOf } from "../Workspace.js"

const credits = Command.make("credits", { ...serverOptions, organization }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const organizationId = yield* organizationOf(options.organization)
    const balance = yield* client.credits.getCredits({ path: { organizationId } })
    yield* (yield* Output).answer(CreditBalance, balance, (value) =>
      fields([
        ["Balance", String(value.balance)],
        ["Reserved", String(value.reserved)],
        ["Available", String(value.available)]
      ]))
  }).pipe(online(options))).pipe(
    Command.withDescription("The organization's credits: its balance, what publishes under way hold, and what is available")
  )

/** The subscription, auto-recharge and spend cap, as admins, owners and API keys see them. */
const accountFields = (account: BillingAccount): ReadonlyArray<readonly [string, string]> => {
  const { autoRecharge, spendCap } = account
  return [
    ["Plan", orDash(account.subscriptionPlan)],
    ["Subscription", `${account.subscriptionStatus}${account.isSubscribed ? " (subscribed)" : ""}`],
    ["Period ends", orDash(account.subscriptionCurrentPeriodEnd)],
    ["Subscription ends", orDash(account.subscriptionEndsAt)],
    [
      "Auto-recharge",
      autoRecharge.enabled
        ? `on: ${orDash(autoRecharge.amount)} credits when available falls below ${orDash(autoRecharge.threshold)}${autoRecharge.pending ? " (a recharge is under way)" : ""}`
        : "off"
    ],
    ...(autoRecharge.lastError === null ? [] : [["Last recharge error", autoRecharge.lastError] as const]),
    ["Spend cap", spendCap.monthlyCredits === null ? "none" : `${spendCap.monthlyCredits} credits a month (UTC)`],
    ["Spent this month", String(spendCap.spentThisMonth)]
  ]
}

/** The billing state for people: the credits, then what admins, owners and API keys see beyond them. */
const billingText = (value: Billing) =>
  fields([
    ["Credits", `${value.credits.available} available (balance ${value.credits.balance}, reserved ${value.credits.reserved})`],
    ["Billing", value.enabled ? "on: credits are sold" : "off: an operator grants credits"],
    ...(value.account === null
      ? [["Account", "(the subscription, auto-recharge and spend cap are shown to admins and owners)"] as const]
      : accountFields(value.account))
  ])

/** A monthly cap as the command line gives it: the domain's amount of credits, or none. */
const MonthlyCredits = Schema.Union(
  Schema.transform(Schema.Literal("none"), Schema.Null, { strict: true, decode: () => null, encode: () => "none" as const }),
  Schema.compose(Schema.NumberFromString, CreditAmount)
).annotations(invalidUnless(`must be a whole number of credits from 1 to ${maxCredits}, or none`))

const spendCap = Command.make("spend-cap", { ...serverOptions, organization, monthlyCredits: decodedArg("credits", MonthlyCredits, "The most credits a calendar month (UTC) may spend, or none to remove the cap"), yes }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const organizationId = yield* organizationOf(options.organization)
    const cap = (credits: number | null) => credits === null ? "none" : `${credits} credits a month`
    yield* confirmed({
      yes: options.yes,
      action: "setting the spend cap",
      preview: Effect.map(client.billing.getBilling({ path: { organizationId } }), ({ account }) =>
        costsNothing(
          `Set the monthly spend cap of organization ${organizationId} to ${cap(options.monthlyCredits)}` +
            (account === null ? "" : ` (now ${cap(account.spendCap.monthlyCredits)}, ${account.spendCap.spentThisMonth} spent this month)`) +
            ": beyond it publishing and analytics refreshes answer 402"
        ))
    })
    const state = yield* client.billing.updateSpendCap({ path: { organizationId }, payload: { monthlyCredits: options.monthlyCredits } })
    yield* (yield* Output).answer(Billing, state, billingText)
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "Caps what publishing and analytics may spend per calendar month (UTC): <credits>, or none to remove it; admins, owners and API keys (asks first)"
    )
  )

const billing = Command.make("billing", { ...serverOptions, organization }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const organizationId = yield* organizationOf(options.organization)
    const state = yield* client.billing.getBilling({ path: { organizationId } })
    yield* (yield* Output).answer(Billing, state, billingText)
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "The organization's billing: its credits and, for admins, owners and API keys, the plan, subscription status, auto-recharge and spend cap"
    ),
    Command.withSubcommands([spendCap])
  )

const weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

const slots = Command.make("slots", { ...serverOptions, team }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const answer = yield* client.postingSlots.getPostingSlots({ path: { teamId } })
    yield* (yield* Output).answer(TeamPostingSlots, answer, (value) =>
      table([
        { header: "weekday", value: (slot) => weekdays[slot.weekday - 1] ?? String(slot.weekday) },
        { header: "time", value: (slot) => slot.time }
      ], value.slots))
  }).pipe(online(options))).pipe(
    Command.withDescription("The team's weekly posting slots (wall-clock times in its timezone), used by schedule --next-slot")
  )

export const organizationCommands = [credits, billing, slots] as const
