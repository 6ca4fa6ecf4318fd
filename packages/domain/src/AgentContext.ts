import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { User } from "./Authentication.js"
import { strict } from "./Fields.js"
import { OrganizationId, TeamId } from "./Ids.js"
import { Organization } from "./Organizations.js"
import { Team } from "./Teams.js"

/** How many organizations, and how many teams, the context holds at most. */
export const AgentContextLimit = 100

/** The first items of a list, and whether more follow: the context is one answer, not a page. */
const FirstItems = <Item extends Schema.Schema.Any>(item: Item, identifier: string, description: string) =>
  Schema.Struct({
    data: Schema.Array(item),
    hasMore: Schema.Boolean.annotations({
      description: `Whether there are more than ${AgentContextLimit}; list them with their own endpoint`
    })
  }).annotations({ identifier, description })

export const AgentDefaults = Schema.Struct({
  organizationId: Schema.NullOr(OrganizationId),
  teamId: Schema.NullOr(TeamId)
}).annotations({
  identifier: "AgentDefaults",
  description: "The caller's saved choice while it is still accessible, else the organization joined first and " +
    "its oldest team; null when there is none"
})
export type AgentDefaults = typeof AgentDefaults.Type

/** A choice of defaults: an organization, and one of its teams or none. */
export const AgentDefaultsChoice = Schema.Struct({
  organizationId: OrganizationId,
  teamId: Schema.NullOr(TeamId).annotations({
    description: "A team of the organization, or null for none: the context then offers the organization's oldest team"
  })
}).annotations({ identifier: "AgentDefaultsChoice" })
export type AgentDefaultsChoice = typeof AgentDefaultsChoice.Type

export const SetAgentDefaults = Schema.Struct(AgentDefaultsChoice.fields).annotations({
  ...strict,
  identifier: "SetAgentDefaults"
})
export type SetAgentDefaults = typeof SetAgentDefaults.Type

export const AgentContext = Schema.Struct({
  user: Schema.NullOr(User).annotations({ description: "The user; null for an API key" }),
  organizations: FirstItems(
    Organization,
    "AgentOrganizations",
    `The first ${AgentContextLimit} organizations the caller can access, in the order the caller joined them`
  ),
  teams: FirstItems(
    Team,
    "AgentTeams",
    `The first ${AgentContextLimit} teams the caller can access, oldest first`
  ),
  defaults: AgentDefaults
}).annotations({ identifier: "AgentContext" })
export type AgentContext = typeof AgentContext.Type

export class AgentGroup extends HttpApiGroup.make("agent")
  .add(
    HttpApiEndpoint.get("getContext", "/v1/agent/context")
      .addSuccess(AgentContext)
      .annotate(OpenApi.Summary, "Get agent context")
      .annotate(
        OpenApi.Description,
        "The user, the organizations and teams the caller can access and the default ids, in one call. An API key " +
          "sees no user, its own organization and that organization's teams."
      )
  )
  .add(
    HttpApiEndpoint.put("setDefaults", "/v1/agent/context/defaults")
      .setPayload(SetAgentDefaults)
      .addSuccess(AgentDefaultsChoice)
      .annotate(OpenApi.Summary, "Set agent defaults")
      .annotate(
        OpenApi.Description,
        "Saves the caller's default organization and team and answers them. Both must be accessible to the caller " +
          "(404 otherwise); a team of another organization gives 400 `team_not_in_organization`."
      )
  )
  .annotate(OpenApi.Title, "agent")
  .annotate(OpenApi.Description, "What an agent needs to start: who it acts for, where, and its defaults")
{}
