import { HttpApiBuilder } from "@effect/platform"
import { AccountAnalytics, Estimate, PostAnalytics, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Idempotency } from "../Idempotency/Service.js"
import { Analytics } from "./Service.js"

export const AnalyticsHttpLive = HttpApiBuilder.group(PostlineApi, "analytics", (handlers) =>
  Effect.gen(function*() {
    const analytics = yield* Analytics
    const idempotency = yield* Idempotency
    return handlers
      .handle("getPostAnalytics", ({ path, urlParams }) =>
        Effect.map(analytics.getPost(path.teamId, path.postId, urlParams), asEncoded(PostAnalytics)))
      .handle("estimatePostAnalyticsRefresh", ({ path }) =>
        Effect.map(analytics.estimatePost(path.teamId, path.postId), asEncoded(Estimate)))
      .handle("refreshPostAnalytics", ({ headers, path }) =>
        idempotency.respond(
          { operation: "analytics.refreshPostAnalytics", key: headers["idempotency-key"], request: { path } },
          PostAnalytics,
          analytics.refreshPost(path.teamId, path.postId)
        ))
      .handle("getAccountAnalytics", ({ path, urlParams }) =>
        Effect.map(analytics.getAccount(path.teamId, path.socialAccountId, urlParams), asEncoded(AccountAnalytics)))
      .handle("estimateAccountAnalyticsRefresh", ({ path }) =>
        Effect.map(analytics.estimateAccount(path.teamId, path.socialAccountId), asEncoded(Estimate)))
      .handle("refreshAccountAnalytics", ({ headers, path }) =>
        idempotency.respond(
          { operation: "analytics.refreshAccountAnalytics", key: headers["idempotency-key"], request: { path } },
          AccountAnalytics,
          analytics.refreshAccount(path.teamId, path.socialAccountId)
        ))
  })).pipe(Layer.provide([Analytics.Default, Idempotency.Default]))
