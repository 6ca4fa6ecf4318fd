import { Options, Prompt } from "@effect/cli"
import type { Terminal } from "@effect/platform"
import {
  ConnectBluesky,
  ConnectDiscord,
  ConnectedSocialAccount,
  ConnectMastodon,
  ConnectTelegram,
  ConnectWebhook,
  type SocialAccount,
  type TeamId,
  WebsiteUrl
} from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option, ParseResult, Redacted, Schema } from "effect"
import { firstLineOfInput } from "../BoundedInput.js"
import { decodedOption } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { Output } from "../Output.js"

/** More than any provider's secret (the schemas take up to 1024 characters); a longer first line is refused. */
const maxSecretBytes = 4096

/** A secret from the terminal (typed unseen) or, when standard input is not one, its first line. */
const secretInput = (label: string): Effect.Effect<Redacted.Redacted, UsageError | Terminal.QuitException, Terminal.Terminal> =>
  process.stdin.isTTY === true ? Prompt.password({ message: label }) : firstLineOfInput(label, maxSecretBytes)

/** Credentials checked by the domain's schema before they are sent, refused in its words. */
const credentials = <A, I>(schema: Schema.Schema<A, I>, input: unknown) =>
  Schema.decodeUnknown(schema)(input).pipe(
    Effect.mapError((error) =>
      new UsageError({
        message: ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => `${issue.path.join(".")} ${issue.message}`).join("; ")
      })
    )
  )

/** Which account to connect with credentials: one provider's option, with its address, handle or chat. */
export const credentialsProvider = decodedOption("webhook", WebsiteUrl, "address").pipe(
  Options.withDescription("A webhook of your own at this address: each publish is POSTed to it as a signed JSON event"),
  Options.map((url) => ({ provider: "webhook", url }) as const),
  Options.orElse(Options.text("bluesky").pipe(
    Options.withPseudoName("handle"),
    Options.withDescription("A Bluesky account by the handle (alice.bsky.social), email or DID it logs in with"),
    Options.map((handle) => ({ provider: "bluesky", handle }) as const)
  )),
  Options.orElse(decodedOption("mastodon", WebsiteUrl, "instance").pipe(
    Options.withDescription("A Mastodon account on this instance, e.g. https://mastodon.social"),
    Options.map((instanceUrl) => ({ provider: "mastodon", instanceUrl }) as const)
  )),
  Options.orElse(Options.text("telegram").pipe(
    Options.withPseudoName("chat"),
    Options.withDescription(
      "A Telegram channel (@username) or group (its numeric id) that your bot posts to; the bot's token (from " +
        "@BotFather) is read next"
    ),
    Options.map((chatId) => ({ provider: "telegram", chatId }) as const)
  ))
)

/** A Discord channel: its webhook's URL holds the webhook's token, so it is read like a secret, never an argument. */
export const discordOption = Options.boolean("discord").pipe(
  Options.withDescription("A Discord channel by its webhook (Server Settings → Integrations → Webhooks): its URL is read next")
)

export type ChosenCredentials =
  | (typeof credentialsProvider extends Options.Options<infer A> ? A : never)
  | { readonly provider: "discord" }

const describe = (chosen: ChosenCredentials, name: Option.Option<string>) => {
  const named = Option.match(name, { onNone: () => "", onSome: (name) => ` named ${name}` })
  switch (chosen.provider) {
    case "webhook":
      return `a webhook at ${chosen.url}${named} (each publish is POSTed to it as a signed event)`
    case "bluesky":
      return `the Bluesky account ${chosen.handle} (its app password is read next)`
    case "mastodon":
      return `an account on the Mastodon instance ${chosen.instanceUrl} (its access token is read next)`
    case "telegram":
      return `the Telegram chat ${chosen.chatId}${named} (its bot's token is read next)`
    case "discord":
      return `a Discord channel${named} (its webhook's URL is read next)`
  }
}

/** Connects the account: the secret read first where there is one, the payload checked by the domain's schema. */
const connectAccount = (teamId: TeamId, chosen: ChosenCredentials, serviceUrl: Option.Option<string>, name: Option.Option<string>) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const path = { teamId }
    const named = Option.match(name, { onNone: () => ({}), onSome: (name) => ({ name }) })
    // One call per provider: the client takes each payload type on its own, not their union.
    switch (chosen.provider) {
      case "webhook": {
        const payload = yield* credentials(ConnectWebhook, { ...chosen, ...named })
        return yield* client.socialAccounts.connectSocialAccount({ path, payload })
      }
      case "bluesky": {
        const appPassword = yield* secretInput("App password (xxxx-xxxx-xxxx-xxxx)")
        const payload = yield* credentials(ConnectBluesky, {
          ...chosen,
          appPassword: Redacted.value(appPassword),
          ...Option.match(serviceUrl, { onNone: () => ({}), onSome: (serviceUrl) => ({ serviceUrl }) })
        })
        return yield* client.socialAccounts.connectSocialAccount({ path, payload })
      }
      case "mastodon": {
        const accessToken = yield* secretInput("Access token")
        const payload = yield* credentials(ConnectMastodon, { ...chosen, accessToken: Redacted.value(accessToken) })
        return yield* client.socialAccounts.connectSocialAccount({ path, payload })
      }
      case "telegram": {
        const botToken = yield* secretInput("Bot token (from @BotFather)")
        const payload = yield* credentials(ConnectTelegram, { ...chosen, botToken: Redacted.value(botToken), ...named })
        return yield* client.socialAccounts.connectSocialAccount({ path, payload })
      }
      case "discord": {
        const webhookUrl = yield* secretInput("Webhook URL (https://discord.com/api/webhooks/…)")
        const payload = yield* credentials(ConnectDiscord, { provider: "discord", webhookUrl: Redacted.value(webhookUrl), ...named })
        return yield* client.socialAccounts.connectSocialAccount({ path, payload })
      }
    }
  })

/** The paste-credentials connect: `--webhook`, or a provider's option with a secret read next. */
export const connectWithCredentials = (
  teamId: TeamId,
  chosen: ChosenCredentials,
  options: { readonly serviceUrl: Option.Option<string>; readonly name: Option.Option<string>; readonly yes: boolean },
  accountFields: (account: SocialAccount) => string
) =>
  Effect.gen(function*() {
    if (Option.isSome(options.name) && (chosen.provider === "bluesky" || chosen.provider === "mastodon")) {
      return yield* new UsageError({ message: "--name names a webhook, a Telegram chat or a Discord channel: Bluesky and Mastodon accounts have their own" })
    }
    yield* confirmed({
      yes: options.yes,
      action: "connecting the account",
      preview: Effect.succeed(costsNothing(`Connect ${describe(chosen, options.name)} to team ${teamId}: the provider checks the credentials first`))
    })
    const connected = yield* connectAccount(teamId, chosen, options.serviceUrl, options.name)
    yield* (yield* Output).answer(ConnectedSocialAccount, connected, (account) =>
      account.signingSecret === null
        ? accountFields(account)
        : `${accountFields(account)}\n\nSigning secret (shown this once: keep it to verify the webhook's calls): ${account.signingSecret}`)
  })
