import { HttpServerRequest } from "@effect/platform"
import { Authentication, Unauthorized } from "@postline/domain"
import { Effect, Layer, Option } from "effect"
import { UsersRepo } from "./Repo.js"

// RFC 6750: the scheme word is case-insensitive, the token a b64token.
const bearer = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

const unauthorized = (message: string) => new Unauthorized({ message })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const users = yield* UsersRepo
    return {
      // HttpApiSecurity.bearer only strips seven characters, whatever they are, so read the header here.
      bearerAuth: () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const header = request.headers.authorization
          if (header === undefined) {
            return yield* unauthorized("Missing Authorization header: send `Authorization: Bearer <token>`")
          }
          const token = bearer.exec(header)?.[1]
          if (token === undefined) {
            return yield* unauthorized("Malformed Authorization header: expected `Bearer <token>`")
          }
          const user = yield* users.findByToken(token)
          if (Option.isNone(user)) return yield* unauthorized("Invalid or revoked access token")
          return user.value
        })
    }
  })
)
