import { HttpServerRequest } from "@effect/platform"
import { AddressRateLimit, CallerRateLimit, CurrentCaller } from "@postline/domain"
import { Effect, Layer, Option } from "effect"
import { hashSecret } from "../Users/Secrets.js"
import { ClientAddress } from "./ClientAddress.js"
import { RequestLimits } from "./RequestLimits.js"

/**
 * An API key counts under its id; a user's token under its hash, as it is stored. Authentication has run
 * (it provides the caller) and checked the header's form.
 */
const callerKey = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(Effect.serviceOption(CurrentCaller), (caller) =>
    Option.isSome(caller) && caller.value._tag === "ApiKey"
      ? `key:${caller.value.apiKeyId}`
      : `token:${hashSecret((request.headers.authorization ?? "").slice(7).trim())}`)

export const CallerRateLimitLive = Layer.effect(
  CallerRateLimit,
  Effect.map(RequestLimits, (limits) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.flatMap(callerKey(request), (key) => limits.count("caller", key))))
)

export const AddressRateLimitLive = Layer.effect(
  AddressRateLimit,
  Effect.gen(function*() {
    const limits = yield* RequestLimits
    const address = yield* ClientAddress
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => limits.count("address", address.of(request)))
  })
)

export const RateLimitMiddlewareLive = Layer.mergeAll(CallerRateLimitLive, AddressRateLimitLive).pipe(
  Layer.provide([RequestLimits.Default, ClientAddress.Default])
)
