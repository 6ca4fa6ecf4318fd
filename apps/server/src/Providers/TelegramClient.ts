import { Effect, Redacted, Schema } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import { decodeAnswer, fromOutbound } from "./Errors.js"
import { fromTelegramAnswer } from "./TelegramErrors.js"
import { TelegramSettings } from "./TelegramSettings.js"

/** A method's parameters: JSON, or a multipart form where files are uploaded (its JSON-serialized fields as strings). */
export type TelegramParameters = Readonly<Record<string, unknown>> | FormData

/**
 * Calls of Telegram's Bot API (core.telegram.org/bots/api#making-requests): `POST <api>/bot<token>/<method>`, its
 * answer `{ok: true, result}`, through the guarded outbound client, failures made provider errors. The token is in
 * the path: outbound errors name the host only, and it is taken out of any answer's words kept.
 */
export class TelegramClient extends Effect.Service<TelegramClient>()("TelegramClient", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const { apiUrl } = yield* TelegramSettings

    const call = <A, I>(botToken: Redacted.Redacted<string>, method: string, parameters: TelegramParameters, result: Schema.Schema<A, I>) =>
      Effect.gen(function*() {
        const token = Redacted.value(botToken)
        const form = parameters instanceof FormData
        const response = yield* outbound.request(`${apiUrl}/bot${token}/${method}`, {
          method: "POST",
          headers: { accept: "application/json", ...(form ? {} : { "content-type": "application/json" }) },
          body: form ? parameters : JSON.stringify(parameters)
        }).pipe(Effect.mapError((error) => fromOutbound("telegram", error)))
        const text = new TextDecoder().decode(response.body).replaceAll(token, "<token>")
        if (response.status < 200 || response.status > 299) return yield* fromTelegramAnswer(response.status, response.headers, text)
        const answer = yield* decodeAnswer("telegram", method, response.status, text, Schema.Struct({ ok: Schema.Literal(true), result }))
        return answer.result
      })

    return { call } as const
  }),
  dependencies: [TelegramSettings.Default]
}) {}
