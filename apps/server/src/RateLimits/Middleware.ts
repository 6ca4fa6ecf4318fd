import { HttpServerRequest } from "@effect/platform"
import { AddressRateLimit, CallerRateLimit, CurrentCaller, TransferRateLimit } from "@postline/domain"
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

/** A middleware that counts each request under `policy`, keyed by its client address. */
const perAddress = (policy: "address" | "transfer") =>
  Effect.gen(function*() {
    const limits = yield* RequestLimits
    const address = yield* ClientAddress
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => limits.count(policy, address.of(request)))
  })

export const AddressRateLimitLive = Layer.effect(AddressRateLimit, perAddress("address"))

export const TransferRateLimitLive = Layer.effect(TransferRateLimit, perAddress("transfer"))

export const RateLimitMiddlewareLive = Layer.mergeAll(CallerRateLimitLive, AddressRateLimitLive, TransferRateLimitLive).pipe(
  Layer.provide([RequestLimits.Default, ClientAddress.Default])
)
