import type { OrganizationId, TeamId } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { UsageError } from "./Errors.js"

/** The caller's defaults as the server keeps them (GET /v1/agent/context): the saved choice, else the first. */
const defaults = Effect.flatMap(Postline, (postline) => postline.client.agent.getContext()).pipe(
  Effect.map((context) => context.defaults)
)

/** The team a command acts on: `--team`, else the caller's default team. */
export const teamOf = (team: Option.Option<TeamId>) =>
  Option.match(team, {
    onSome: Effect.succeed,
    onNone: () =>
      Effect.flatMap(defaults, ({ teamId }) =>
        teamId === null
          ? new UsageError({ message: "You have no team yet: pass --team <id>, or create one (postline teams lists yours)" })
          : Effect.succeed(teamId))
  })

/** The organization a command acts on: `--org`, else the caller's default organization. */
export const organizationOf = (organization: Option.Option<OrganizationId>) =>
  Option.match(organization, {
    onSome: Effect.succeed,
    onNone: () =>
      Effect.flatMap(defaults, ({ organizationId }) =>
        organizationId === null
          ? new UsageError({ message: "You belong to no organization: pass --org <id> (postline orgs lists yours)" })
          : Effect.succeed(organizationId))
  })
