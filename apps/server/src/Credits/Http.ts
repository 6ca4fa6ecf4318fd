import { HttpApiBuilder } from "@effect/platform"
import { CreditBalance, CreditTransactionList, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Credits } from "./Service.js"

export const CreditsHttpLive = HttpApiBuilder.group(PostlineApi, "credits", (handlers) =>
  Effect.gen(function*() {
    const credits = yield* Credits
    return handlers
      .handle("getCredits", ({ path }) => Effect.map(credits.balance(path.organizationId), asEncoded(CreditBalance)))
      .handle("listCreditTransactions", ({ path, urlParams }) =>
        Effect.map(credits.transactions(path.organizationId, urlParams), asEncoded(CreditTransactionList)))
  })).pipe(Layer.provide(Credits.Default))
