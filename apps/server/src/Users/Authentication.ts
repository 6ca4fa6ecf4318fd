import { HttpServerRequest } from "@effect/platform"
import { type ApiKeyId, Authentication, Caller, Unauthorized } from "@postline/domain"
import { Effect, FiberSet, Layer, Option, Redacted } from "effect"
import { ApiKeysRepo } from "../ApiKeys/Repo.js"
import { UsersRepo } from "./Repo.js"
import { secretPrefixes } from "./Secrets.js"

// RFC 6750: the scheme word is case-insensitive, the token a b64token.
const bearerScheme = /^bearer $/i
const b64token = /^ *([A-Za-z0-9\-._~+/]+=*) *$/

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
      // The security decoder drops the header's first seven characters whatever they are: they must say Bearer.
      bearerAuth: (credential: Redacted.Redacted) =>
        Effect.gen(function*() {
          const header = (yield* HttpServerRequest.HttpServerRequest).headers.authorization
          if (header === undefined) {
            return yield* unauthorized("Missing Authorization header: send `Authorization: Bearer <token>`")
          }
          const token = b64token.exec(Redacted.value(credential))?.[1]
          if (!bearerScheme.test(header.slice(0, 7)) || token === undefined) {
            return yield* unauthorized("Malformed Authorization header: expected `Bearer <token>`")
          }
          return yield* token.startsWith(secretPrefixes.apiKey)
            ? asApiKey(Redacted.make(token))
            : asUser(Redacted.make(token))
        })
    }
  })
).pipe(Layer.provide([UsersRepo.Default, ApiKeysRepo.Default]))
