import {
  Caller,
  CurrentCaller,
  Forbidden,
  type MemberRole,
  NotFound,
  type OrganizationId,
  type Team,
  type TeamId,
  Unauthorized,
  type User
} from "@postline/domain"
import { Effect, Option } from "effect"
import { AccessRepo, type LockOption } from "./Repo.js"

export const isManager = (role: MemberRole) => role === "owner" || role === "admin"

const unlocked: LockOption = { lock: false }

export const organizationNotFound = (organizationId: OrganizationId) =>
  new NotFound({ message: `Organization ${organizationId} not found` })

const teamNotFound = (teamId: TeamId) => new NotFound({ message: `Team ${teamId} not found` })

const revokedMeanwhile = new Unauthorized({ message: "Invalid, revoked or expired API key" })

/**
 * What every feature's policy builds on.
 *
 * - Members see their organization and its teams; admins and owners change
 *   them; only an owner touches the owner role.
 * - An API key acts as an admin of its own organization, and of nothing else,
 *   except for what takes a person (`person`).
 * - Whoever may not see an organization or team gets 404, as if it did not
 *   exist; whoever may see it but not do this gets 403.
 */
export class Access extends Effect.Service<Access>()("Access", {
  effect: Effect.gen(function*() {
    const repo = yield* AccessRepo

    /** An API key's role in the organization: admin in its own, while it is active; none elsewhere. */
    const keyRole = (key: Extract<Caller, { _tag: "ApiKey" }>, organizationId: OrganizationId, options: LockOption) =>
      key.organizationId !== organizationId
        ? Effect.succeedNone
        : options.lock
        ? Effect.flatMap(repo.lockActiveKey(key.apiKeyId), (active) =>
          active ? Effect.succeedSome<MemberRole>("admin") : revokedMeanwhile)
        : Effect.succeedSome<MemberRole>("admin")

    /** The caller's role in the organization; 404 for anyone without one. */
    const roleIn = (organizationId: OrganizationId, options: LockOption = unlocked) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const role = Caller.$is("ApiKey")(caller)
          ? yield* keyRole(caller, organizationId, options)
          : yield* repo.roleOf(caller.user.id, organizationId, options)
        if (Option.isNone(role)) return yield* organizationNotFound(organizationId)
        return role.value
      })

    /** The team and the caller's role in its organization; a team the caller may not see is as absent as a missing one. */
    const teamAccess = (teamId: TeamId, options: LockOption = unlocked) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const found: Option.Option<{ readonly team: Team; readonly role: MemberRole }> = Caller.$is("ApiKey")(caller)
          ? yield* Effect.flatMap(repo.teamOf(teamId, caller.organizationId), (team) =>
            Option.isNone(team)
              ? Effect.succeedNone
              : Effect.map(keyRole(caller, team.value.organizationId, options), Option.map((role) => ({ team: team.value, role }))))
          : yield* repo.teamWithRole(teamId, caller.user.id, options)
        if (Option.isNone(found)) return yield* teamNotFound(teamId)
        return found.value
      })

    /** The person behind the request; an API key gets 403, for what takes a person. */
    const person = (action: string) =>
      Effect.flatMap(CurrentCaller, (caller): Effect.Effect<User, Forbidden> =>
        Caller.$is("User")(caller)
          ? Effect.succeed(caller.user)
          : new Forbidden({ message: `An API key may not ${action}; a member's own access token may` }))

    /** The person acting in the organization: an API key of the organization gets 403, any other 404. */
    const personIn = (organizationId: OrganizationId, action: string) =>
      Effect.flatMap(CurrentCaller, (caller) =>
        Caller.$is("ApiKey")(caller)
          ? Effect.zipRight(roleIn(organizationId), person(action))
          : Effect.succeed(caller.user))

    const requireManager = (role: MemberRole) =>
      isManager(role) ? Effect.void : new Forbidden({ message: "Only an admin or owner of the organization may do this" })

    /** Only an owner may grant, change or take away the owner role. */
    const requireOwnerFor = (callerRole: MemberRole, ...roles: ReadonlyArray<MemberRole>) =>
      roles.includes("owner") && callerRole !== "owner"
        ? new Forbidden({ message: "Only an owner may grant, change or take away the owner role" })
        : Effect.void

    return { roleIn, teamAccess, person, personIn, requireManager, requireOwnerFor } as const
  }),
  dependencies: [AccessRepo.Default]
}) {}
