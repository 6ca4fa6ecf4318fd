import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { codePoints, invalidUnless, oneOf, strict, Timestamp, whiteSpace } from "./Fields.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"
import { OrganizationId, UserId } from "./Ids.js"
import { OrganizationPath } from "./Organizations.js"

export const MemberRole = oneOf("owner", "admin", "member").annotations({
  identifier: "MemberRole",
  description: "owner and admin manage the organization; only an owner grants or takes away the owner role"
})
export type MemberRole = typeof MemberRole.Type

export const Member = Schema.Struct({
  organizationId: OrganizationId,
  userId: UserId,
  email: Schema.String,
  name: Schema.String,
  role: MemberRole,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({ identifier: "Member" })
export type Member = typeof Member.Type

// No white space, and no NUL, which PostgreSQL cannot store.
const emailShape = new RegExp(`^[^${whiteSpace}@\\u0000]+@[^${whiteSpace}@\\u0000]+$`)
const maxEmailLength = 254

const Email = Schema.String.pipe(
  Schema.filter((s) => emailShape.test(s) && codePoints(s) <= maxEmailLength, {
    jsonSchema: { pattern: emailShape.source, maxLength: maxEmailLength }
  })
).annotations({
  identifier: "Email",
  description: `An email address: something, @, something, without white space; at most ${maxEmailLength} characters`,
  ...invalidUnless("must be an email address")
})

export const AddMember = Schema.Struct({ email: Email, role: MemberRole }).annotations({
  ...strict,
  identifier: "AddMember"
})
export type AddMember = typeof AddMember.Type

export const UpdateMember = Schema.Struct({ role: MemberRole }).annotations({ ...strict, identifier: "UpdateMember" })

export const MemberList = ListEnvelope(Member, "MemberList")

const memberPath = Schema.Struct({ organizationId: OrganizationId, userId: UserId })

export class MembersGroup extends HttpApiGroup.make("members")
  .add(
    HttpApiEndpoint.get("listMembers", "/v1/organizations/:organizationId/members")
      .setPath(OrganizationPath)
      .setUrlParams(Schema.Struct(listQueryFields).annotations(strict))
      .addSuccess(MemberList)
      .annotate(OpenApi.Summary, "List members")
      .annotate(OpenApi.Description, "The members of an organization; any member may list them. sortBy name sorts by the user's name.")
  )
  .add(
    HttpApiEndpoint.post("addMember", "/v1/organizations/:organizationId/members")
      .setPath(OrganizationPath)
      .setPayload(AddMember)
      .addSuccess(Member, { status: 201 })
      .annotate(OpenApi.Summary, "Add member")
      .annotate(
        OpenApi.Description,
        "Adds an existing user by email (404 if there is none, 409 `already_member` if already a member). Admins and owners may; only an owner may add an owner."
      )
  )
  .add(
    HttpApiEndpoint.patch("updateMember", "/v1/organizations/:organizationId/members/:userId")
      .setPath(memberPath)
      .setPayload(UpdateMember)
      .addSuccess(Member)
      .annotate(OpenApi.Summary, "Change a member's role")
      .annotate(
        OpenApi.Description,
        "Admins and owners may; only an owner grants or takes away the owner role. Demoting the last admin or owner gives 409 `last_admin_or_owner`."
      )
  )
  .add(
    HttpApiEndpoint.del("removeMember", "/v1/organizations/:organizationId/members/:userId")
      .setPath(memberPath)
      .addSuccess(Member)
      .annotate(OpenApi.Summary, "Remove member")
      .annotate(
        OpenApi.Description,
        "Removes a member, who loses access at once; answers the removed member. Admins and owners may remove others " +
          "(only an owner removes an owner); anyone may remove themselves. Removing the last admin or owner gives 409 `last_admin_or_owner`."
      )
  )
  .annotate(OpenApi.Title, "members")
  .annotate(OpenApi.Description, "Members of an organization and their roles")
{}
