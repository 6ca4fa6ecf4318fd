import { HttpApiBuilder } from "@effect/platform"
import { ConnectedSocialAccount, PostlineApi, SocialAccount, SocialAccountList } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { SocialAccounts } from "./Service.js"

export const SocialAccountsHttpLive = HttpApiBuilder.group(PostlineApi, "socialAccounts", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* SocialAccounts
    return handlers
      .handle("listSocialAccounts", ({ path, urlParams }) =>
        Effect.map(accounts.list(path.teamId, urlParams), asEncoded(SocialAccountList)))
      .handle("connectSocialAccount", ({ path, payload }) =>
        Effect.map(accounts.connect(path.teamId, payload), asEncoded(ConnectedSocialAccount, { status: 201 })))
      .handle("getSocialAccount", ({ path }) =>
        Effect.map(accounts.get(path.teamId, path.socialAccountId), asEncoded(SocialAccount)))
      .handle("updateSocialAccount", ({ path, payload }) =>
        Effect.map(accounts.update(path.teamId, path.socialAccountId, payload), asEncoded(SocialAccount)))
      .handle("removeSocialAccount", ({ path }) =>
        Effect.map(accounts.remove(path.teamId, path.socialAccountId), asEncoded(SocialAccount)))
      .handle("verifySocialAccount", ({ path }) =>
        Effect.map(accounts.verify(path.teamId, path.socialAccountId), asEncoded(SocialAccount)))
  })).pipe(Layer.provide(SocialAccounts.Default))
