import { Command } from "@effect/cli"
import { CreditBalance, TeamPostingSlots } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect } from "effect"
import { organization, serverOptions, team } from "../CommonOptions.js"
import { Output } from "../Output.js"
import { online } from "../Session.js"
import { fields, table } from "../Table.js"
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

export const organizationCommands = [credits, slots] as const
