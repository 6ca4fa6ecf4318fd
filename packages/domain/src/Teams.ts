import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { invalidUnless, Name, optional, strict, Timestamp, WebsiteUrl } from "./Fields.js"
import { OrganizationId, TeamId } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"
import { Timezone } from "./Timezones.js"

export const Team = Schema.Struct({
  id: TeamId,
  organizationId: OrganizationId,
  name: Name,
  website: Schema.NullOr(Schema.String).annotations({ description: "Brand website URL" }),
  linkTrackingDefault: Schema.Boolean.annotations({
    description: "Default link-tracking toggle for new posts: the team's override, else the plan default"
  }),
  timezone: Schema.NullOr(Schema.String).annotations({ description: "IANA timezone name" }),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({ identifier: "Team" })
export type Team = typeof Team.Type

const teamFields = {
  website: optional(
    Schema.NullOr(WebsiteUrl).annotations({
      description: "Brand website URL; null clears it",
      ...invalidUnless("must be an absolute http or https URL, or null")
    })
  ),
  linkTrackingDefault: optional(
    Schema.NullOr(Schema.Boolean).annotations({
      description: "Default link tracking for new posts; null resets to the plan default",
      ...invalidUnless("must be true, false or null")
    })
  ),
  timezone: optional(
    Schema.NullOr(Timezone).annotations({
      description: "IANA timezone name; null clears it",
      ...invalidUnless("must be an IANA timezone name supported by the server, or null")
    })
  )
}

export const CreateTeam = Schema.Struct({
  organizationId: OrganizationId,
  name: Name,
  ...teamFields
}).annotations({ ...strict, identifier: "CreateTeam" })
export type CreateTeam = typeof CreateTeam.Type

export const UpdateTeam = Schema.Struct({
  name: optional(Name),
  ...teamFields
}).annotations({ ...strict, identifier: "UpdateTeam" })
export type UpdateTeam = typeof UpdateTeam.Type

export const TeamListQuery = Schema.Struct({
  organizationId: optional(OrganizationId),
  ...listQueryFields
}).annotations(strict)
export type TeamListQuery = typeof TeamListQuery.Type

export const TeamList = ListEnvelope(Team, "TeamList")

const teamPath = Schema.Struct({ teamId: TeamId })

export class TeamsGroup extends HttpApiGroup.make("teams")
  .add(
    HttpApiEndpoint.get("listTeams", "/v1/teams")
      .setUrlParams(TeamListQuery)
      .addSuccess(TeamList)
      .annotate(OpenApi.Summary, "List teams")
      .annotate(
        OpenApi.Description,
        "The teams of every organization the caller belongs to, or of one of them (404 if the caller is not a member)."
      )
  )
  .add(
    HttpApiEndpoint.post("createTeam", "/v1/teams")
      .setPayload(CreateTeam)
      .addSuccess(Team, { status: 201 })
      .annotate(OpenApi.Summary, "Create team")
      .annotate(OpenApi.Description, "Creates a team in an organization. Only an admin or owner of it may.")
  )
  .add(
    HttpApiEndpoint.get("getTeam", "/v1/teams/:teamId")
      .setPath(teamPath)
      .addSuccess(Team)
      .annotate(OpenApi.Summary, "Get team")
      .annotate(OpenApi.Description, "One team of an organization the caller belongs to; any other gives 404.")
  )
  .add(
    HttpApiEndpoint.patch("updateTeam", "/v1/teams/:teamId")
      .setPath(teamPath)
      .setPayload(UpdateTeam)
      .addSuccess(Team)
      .annotate(OpenApi.Summary, "Update team")
      .annotate(
        OpenApi.Description,
        "Changes a team's fields; null clears website and timezone and resets linkTrackingDefault to the plan " +
          "default. Only an admin or owner of its organization may."
      )
  )
  .annotate(OpenApi.Title, "teams")
  .annotate(OpenApi.Description, "Teams (workspaces): they own social accounts, assets and posts")
{}
