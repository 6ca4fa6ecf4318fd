import { Effect } from "effect"

declare const AuthorizedTypeId: unique symbol
declare const PolicyTypeId: unique symbol

/**
 * In an effect's requirements: the effect may run only once the caller has
 * been allowed `Action` on `Entity`. Repositories mark what they do with it,
 * policies grant it and `authorize` discharges it, so that a service or
 * handler that skips the check does not type-check.
 */
export interface Authorized<Entity extends string, Action extends string> {
  readonly [AuthorizedTypeId]: { readonly entity: Entity; readonly action: Action }
}

/** A check that allows `Action` on `Entity`, succeeding with what it learnt on the way (a role, a row). */
export interface Policy<Entity extends string, Action extends string, A, E, R> extends Effect.Effect<A, E, R> {
  readonly [PolicyTypeId]: Authorized<Entity, Action>
}

/** Names the check as the policy for `action` on `entity`. */
export const policy = <Entity extends string, Action extends string>(_entity: Entity, _action: Action) =>
<A, E, R>(check: Effect.Effect<A, E, R>): Policy<Entity, Action, A, E, R> => check as Policy<Entity, Action, A, E, R>

/** Marks an effect as one that needs `action` on `entity` allowed first. */
export const policyRequire = <Entity extends string, Action extends string>(_entity: Entity, _action: Action) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Authorized<Entity, Action>> => self

/** Runs `use` with what the policy learnt, once it has allowed the action. */
export const authorize = <Entity extends string, Action extends string, G, E, R>(
  check: Policy<Entity, Action, G, E, R>
) =>
<A, E2, R2>(
  use: (granted: G) => Effect.Effect<A, E2, R2>
): Effect.Effect<A, E | E2, R | Exclude<R2, Authorized<Entity, Action>>> =>
  Effect.flatMap(check, use) as Effect.Effect<A, E | E2, R | Exclude<R2, Authorized<Entity, Action>>>

/** For the server's own work, which no caller asked for (the operator's command line, a background job). */
export const withSystemActor = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, Authorized<any, any>>> => self as Effect.Effect<A, E, Exclude<R, Authorized<any, any>>>
