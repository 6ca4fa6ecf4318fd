import { Command } from "@effect/cli"
import { Billing, type BillingAccount, CreditBalance, TeamPostingSlots } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect } from "effect"
import { organization, serverOptions, team } from "../CommonOptions.js"
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

const billing = Command.make("billing", { ...serverOptions, organization }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const organizationId = yield* organizationOf(options.organization)
    const state = yield* client.billing.getBilling({ path: { organizationId } })
    yield* (yield* Output).answer(Billing, state, (value) =>
      fields([
        ["Credits", `${value.credits.available} available (balance ${value.credits.balance}, reserved ${value.credits.reserved})`],
        ["Billing", value.enabled ? "on: credits are sold" : "off: an operator grants credits"],
        ...(value.account === null
          ? [["Account", "(the subscription, auto-recharge and spend cap are shown to admins and owners)"] as const]
          : accountFields(value.account))
      ]))
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "The organization's billing: its credits and, for admins, owners and API keys, the plan, subscription status, auto-recharge and spend cap"
    )
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
