import {
  Caller,
  CurrentCaller,
  Forbidden,
  type Member,
  type MemberRole,
  NotFound,
  type OrganizationId,
  type TeamId,
  type User
} from "@postline/domain"
import { Effect, Option } from "effect"
import { OrganizationsRepo, type Role } from "../Organizations/Repo.js"
import { TeamsRepo } from "../Teams/Repo.js"

const organizationNotFound = (organizationId: OrganizationId) =>
  new NotFound({ message: `Organization ${organizationId} not found` })

const isManager = (role: Role) => role === "owner" || role === "admin"

const requireManagerRole = (role: Role) =>
  isManager(role) ? Effect.void : new Forbidden({ message: "Only an admin or owner of the organization may do this" })

/** Only an owner may grant, change or take away the owner role. */
const requireOwnerFor = (callerRole: Role, ...roles: ReadonlyArray<MemberRole>) =>
  roles.includes("owner") && callerRole !== "owner"
    ? new Forbidden({ message: "Only an owner may grant, change or take away the owner role" })
    : Effect.void

/** A label of the caller, for binding cursors to whom they were issued. */
export const callerLabel = Caller.$match({
  User: ({ user }) => `user ${user.id}`,
  ApiKey: ({ apiKeyId }) => `api key ${apiKeyId}`
})

/**
 * Who may do what, in one place; handlers ask before they act.
 *
 * - Members see their organization and its teams; admins and owners change
 *   them and manage members and API keys; only an owner touches the owner role.
 * - An API key acts as an admin of its own organization, and of nothing else.
 *   It may not create organizations, nor manage API keys or members: those
 *   take a person.
 * - Whoever may not see an organization or team gets 404, as if it did not
 *   exist; whoever may see it but not do this gets 403.
 */
export class AccessPolicy extends Effect.Service<AccessPolicy>()("AccessPolicy", {
  effect: Effect.gen(function*() {
    const organizations = yield* OrganizationsRepo
    const teams = yield* TeamsRepo

    /** The caller's role in the organization: a member's own, admin for its API key; 404 for anyone else. */
    const roleIn = (organizationId: OrganizationId) =>
      Effect.flatMap(CurrentCaller, (caller): Effect.Effect<Role, NotFound> =>
        Caller.$is("ApiKey")(caller)
          ? caller.organizationId === organizationId.toLowerCase()
            ? Effect.succeed("admin")
            : organizationNotFound(organizationId)
          : Effect.flatMap(organizations.roleOf(caller.user.id, organizationId), (role) =>
            role._tag === "Some" ? Effect.succeed(role.value) : organizationNotFound(organizationId)))

    /** The person behind the request; an API key gets 403, for what takes a person. */
    const requirePerson = (action: string) =>
      Effect.flatMap(CurrentCaller, (caller): Effect.Effect<User, Forbidden> =>
        Caller.$is("User")(caller)
          ? Effect.succeed(caller.user)
          : new Forbidden({ message: `An API key may not ${action}; a member's own access token may` }))

    const viewOrganization = roleIn

    /** The organization itself, for whoever may see it, in one statement. */
    const readOrganization = (organizationId: OrganizationId) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const found = Caller.$is("User")(caller)
          ? yield* organizations.findForMember(caller.user.id, organizationId)
          : yield* Effect.zipRight(roleIn(organizationId), organizations.find(organizationId))
        if (found._tag === "None") return yield* organizationNotFound(organizationId)
        return found.value
      })

    const manageOrganization = (organizationId: OrganizationId) =>
      Effect.flatMap(roleIn(organizationId), requireManagerRole)

    const createOrganization = requirePerson("create organizations")

    /** The team and the caller's role in its organization; a team the caller may not see is as absent as a missing one. */
    const viewTeam = (teamId: TeamId) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const found = Caller.$is("User")(caller)
          ? yield* teams.findWithRole(teamId, caller.user.id)
          : (yield* teams.find(teamId)).pipe(Option.map((team) => ({
            team,
            role: team.organizationId === caller.organizationId ? "admin" as const : null
          })))
        if (found._tag === "None" || found.value.role === null) {
          return yield* new NotFound({ message: `Team ${teamId} not found` })
        }
        return { team: found.value.team, role: found.value.role }
      })

    const manageTeam = (teamId: TeamId) =>
      Effect.tap(viewTeam(teamId), ({ role }) => requireManagerRole(role))

    /** Admins and owners, in person, manage API keys; answers who is acting. */
    const manageApiKeys = (organizationId: OrganizationId) =>
      Effect.gen(function*() {
        const role = yield* roleIn(organizationId)
        const user = yield* requirePerson("manage API keys")
        yield* requireManagerRole(role)
        return user
      })

    /** Any member, in person, may see the members; answers who is acting and their role. */
    const viewMembers = (organizationId: OrganizationId) =>
      Effect.gen(function*() {
        const role = yield* roleIn(organizationId)
        const user = yield* requirePerson("see or manage members")
        return { user, role }
      })

    const addMember = (organizationId: OrganizationId, role: MemberRole) =>
      Effect.gen(function*() {
        const caller = yield* viewMembers(organizationId)
        yield* requireManagerRole(caller.role)
        yield* requireOwnerFor(caller.role, role)
      })

    const changeRole = (caller: { readonly role: Role }, member: Member, role: MemberRole) =>
      Effect.zipRight(requireManagerRole(caller.role), requireOwnerFor(caller.role, member.role, role))

    /** Anyone may leave; removing someone else takes an admin or owner, and an owner for an owner. */
    const removeMember = (caller: { readonly user: User; readonly role: Role }, member: Member) =>
      member.userId === caller.user.id
        ? Effect.void
        : Effect.zipRight(requireManagerRole(caller.role), requireOwnerFor(caller.role, member.role))

    return {
      viewOrganization,
      readOrganization,
      manageOrganization,
      createOrganization,
      viewTeam,
      manageTeam,
      manageApiKeys,
      viewMembers,
      addMember,
      changeRole,
      removeMember
    } as const
  }),
  dependencies: [OrganizationsRepo.Default, TeamsRepo.Default]
}) {}
