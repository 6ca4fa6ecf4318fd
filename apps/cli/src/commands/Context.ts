import { Command, Options } from "@effect/cli"
import { AgentContext, AgentDefaultsChoice, OrganizationId, OrganizationList, TeamId, TeamList } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { decodedOption, serverOptions, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { Output } from "../Output.js"
import { pageOptions, pageParams, pageText } from "../Pages.js"
import { online } from "../Session.js"
import { fields, table } from "../Table.js"

const context = Effect.flatMap(Postline, (postline) => postline.client.agent.getContext())

const named = (item: { readonly name: string; readonly id: string } | undefined, id: string | null) =>
  id === null ? "(none)" : item === undefined ? id : `${item.name} (${id})`

/** Who the CLI acts as, where, and with which defaults. */
const identity = (postline: Postline, value: AgentContext) =>
  fields([
    ["Server", postline.baseUrl],
    ["Credentials", postline.credentials],
    ["User", value.user === null ? "(an API key)" : `${value.user.name} <${value.user.email}> (${value.user.id})`],
    [
      "Organization",
      named(value.organizations.data.find((org) => org.id === value.defaults.organizationId), value.defaults.organizationId)
    ],
    ["Team", named(value.teams.data.find((team) => team.id === value.defaults.teamId), value.defaults.teamId)]
  ])

const whoami = Command.make("whoami", serverOptions, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    yield* (yield* Output).answer(AgentContext, yield* context, (value) => identity(postline, value))
  }).pipe(online(options))).pipe(
    Command.withDescription("Who you act as: the server, the kind of credentials, the user, and the default organization and team")
  )

const defaultMark = (id: string, defaultId: string | null) => (id === defaultId ? "*" : "")

/** Saves the defaults the other commands use: a team (and its organization), or an organization and no team. */
const use = Command.make("use", {
  ...serverOptions,
  team: decodedOption("team", TeamId, "id").pipe(Options.optional, Options.withDescription("The team to use by default (and its organization)")),
  organization: decodedOption("org", OrganizationId, "id").pipe(
    Options.optional,
    Options.withDescription("The organization to use by default, when no --team is given (its oldest team is then offered)")
  ),
  yes
}, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const choice = yield* Option.match(options.team, {
      onSome: (teamId) => Effect.map(client.teams.getTeam({ path: { teamId } }), (team) => ({ organizationId: team.organizationId, teamId })),
      onNone: () =>
        Option.match(options.organization, {
          onSome: (organizationId) => Effect.succeed({ organizationId, teamId: null }),
          onNone: () => new UsageError({ message: "Pass --team <id> or --org <id> (postline context lists yours)" })
        })
    })
    yield* confirmed({
      yes: options.yes,
      action: "changing your defaults",
      preview: Effect.succeed(costsNothing(
        choice.teamId === null
          ? `Use the organization ${choice.organizationId} by default (and its oldest team)`
          : `Use the team ${choice.teamId} (of the organization ${choice.organizationId}) by default`
      ))
    })
    const saved = yield* client.agent.setDefaults({ payload: choice })
    yield* (yield* Output).answer(AgentDefaultsChoice, saved, (value) =>
      fields([["Organization", value.organizationId], ["Team", value.teamId ?? "(its oldest)"]]))
  }).pipe(online(options))).pipe(
    Command.withDescription("Saves your default team (or organization): commands use it when --team or --org is not given (asks first)")
  )

const contextCommand = Command.make("context", serverOptions, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    yield* (yield* Output).answer(AgentContext, yield* context, (value) =>
      [
        identity(postline, value),
        "",
        "Organizations (* default):",
        table([
          { header: "", value: (org) => defaultMark(org.id, value.defaults.organizationId) },
          { header: "id", value: (org) => org.id },
          { header: "name", value: (org) => org.name }
        ], value.organizations.data),
        "",
        "Teams (* default):",
        table([
          { header: "", value: (team) => defaultMark(team.id, value.defaults.teamId) },
          { header: "id", value: (team) => team.id },
          { header: "organization", value: (team) => team.organizationId },
          { header: "name", value: (team) => team.name }
        ], value.teams.data)
      ].join("\n"))
  }).pipe(online(options))).pipe(
    Command.withDescription("Your organizations and teams, and the defaults commands use when --org or --team is not given"),
    Command.withSubcommands([use])
  )

const orgs = Command.make("orgs", { ...serverOptions, ...pageOptions }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const list = yield* postline.client.organizations.listOrganizations({ urlParams: pageParams(options) })
    yield* (yield* Output).answer(OrganizationList, list, (page) =>
      pageText(
        table([
          { header: "id", value: (org) => org.id },
          { header: "name", value: (org) => org.name },
          { header: "credits", value: (org) => String(org.creditsBalance - org.reservedCredits) }
        ], page.data),
        page
      ))
  }).pipe(online(options))).pipe(Command.withDescription("The organizations you belong to, with their available credits"))

const onlyOf = decodedOption("org", OrganizationId, "id").pipe(Options.optional, Options.withDescription("Only this organization's teams"))

const teams = Command.make("teams", { ...serverOptions, ...pageOptions, organization: onlyOf }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const list = yield* postline.client.teams.listTeams({
      urlParams: {
        ...pageParams(options),
        ...Option.match(options.organization, { onNone: () => ({}), onSome: (organizationId) => ({ organizationId }) })
      }
    })
    yield* (yield* Output).answer(TeamList, list, (page) =>
      pageText(
        table([
          { header: "id", value: (team) => team.id },
          { header: "organization", value: (team) => team.organizationId },
          { header: "name", value: (team) => team.name },
          { header: "timezone", value: (team) => team.timezone ?? "UTC" }
        ], page.data),
        page
      ))
  }).pipe(online(options))).pipe(
    Command.withDescription("The teams of your organizations (of one with --org)")
  )

export const contextCommands = [whoami, contextCommand, orgs, teams] as const
