import { HttpServerRequest } from "@effect/platform"
import { type ApiKeyId, Authentication, Caller, Unauthorized } from "@postline/domain"
import { Effect, FiberSet, Layer, Option, Redacted } from "effect"
import { ApiKeysRepo } from "../ApiKeys/Repo.js"
import { UsersRepo } from "./Repo.js"
import { secretPrefixes } from "./Secrets.js"

// RFC 6750: the scheme word is case-insensitive, the token a b64token.
const bearerCredentials = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/** The token of an Authorization header that says `Bearer <token>`; none for any other scheme or shape. */
export const bearerTokenOf = (header: string): Option.Option<Redacted.Redacted> => {
  const token = bearerCredentials.exec(header)?.[1]
  return token === undefined ? Option.none() : Option.some(Redacted.make(token))
}

const unauthorized = (message: string) => new Unauthorized({ message })

export const AuthenticationLive = Layer.scoped(
  Authentication,
  Effect.gen(function*() {
    const users = yield* UsersRepo
    const apiKeys = yield* ApiKeysRepo
    // Recording a key's use runs beside the request, not in its way; the server's shutdown ends it.
    const background = yield* FiberSet.make()
    const recordUse = (id: ApiKeyId) =>
      FiberSet.run(
        background,
        apiKeys.recordUse(id).pipe(Effect.catchAll((error) => Effect.logWarning("Could not record an API key's use", error)))
      )

    const asApiKey = (key: Redacted.Redacted) =>
      Effect.gen(function*() {
        const found = yield* apiKeys.findActive(key)
        if (Option.isNone(found)) return yield* unauthorized("Invalid, revoked or expired API key")
        const { id, organizationId, useIsStale } = found.value
        if (useIsStale) yield* recordUse(id)
        return Caller.ApiKey({ apiKeyId: id, organizationId })
      })

    const asUser = (token: Redacted.Redacted) =>
      Effect.gen(function*() {
        const found = yield* users.findByToken(token)
        if (Option.isNone(found)) return yield* unauthorized("Invalid or revoked access token")
        if (found.value.expired) return yield* unauthorized("The access token has expired: refresh it or log in again")
        return Caller.User({ user: found.value.user })
      })

    return {
      // The security decoder's credential is the header less its first seven characters, whatever they are:
      // the header itself is read, and must say Bearer.
      bearerAuth: () =>
        Effect.gen(function*() {
          const header = (yield* HttpServerRequest.HttpServerRequest).headers.authorization
          if (header === undefined) {
            return yield* unauthorized("Missing Authorization header: send `Authorization: Bearer <token>`")
          }
          const token = bearerTokenOf(header)
          if (Option.isNone(token)) {
            return yield* unauthorized("Malformed Authorization header: expected `Bearer <token>`")
          }
          return yield* Redacted.value(token.value).startsWith(secretPrefixes.apiKey)
            ? asApiKey(token.value)
            : asUser(token.value)
        })
    }
  })
).pipe(Layer.provide([UsersRepo.Default, ApiKeysRepo.Default]))
