import { Command, Options, Prompt } from "@effect/cli"
import type { Terminal } from "@effect/platform"
import {
  ConnectBluesky,
  ConnectedSocialAccount,
  ConnectMastodon,
  ConnectWebhook,
  Name,
  SocialAccount,
  SocialAccountId,
  SocialAccountList,
  type TeamId,
  WebsiteUrl
} from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option, ParseResult, Redacted, Schema } from "effect"
import { firstLineOfInput } from "../BoundedInput.js"
import { decodedArg, decodedOption, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { commandGroup } from "../Group.js"
import { Output } from "../Output.js"
import { pageOptions, pageParams, pageText } from "../Pages.js"
import { online } from "../Session.js"
import { fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"
import { connectBySigningIn, signInOptions, signInPayload } from "./AccountSignIn.js"

const accountFields = (account: SocialAccount) =>
  fields([
    ["Id", account.id],
    ["Provider", account.provider],
    ["Handle", account.handle],
    ["Name", orDash(account.displayName)],
    ["Status", account.status],
    ["Last error", account.lastError === null ? "-" : `${account.lastError.category}: ${account.lastError.message} (${account.lastError.at})`]
  ])

const list = Command.make("list", { ...serverOptions, ...pageOptions, team }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const teamId = yield* teamOf(options.team)
    const accounts = yield* postline.client.socialAccounts.listSocialAccounts({ path: { teamId }, urlParams: pageParams(options) })
    yield* (yield* Output).answer(SocialAccountList, accounts, (page) =>
      pageText(
        table([
          { header: "id", value: (account) => account.id },
          { header: "provider", value: (account) => account.provider },
          { header: "handle", value: (account) => account.handle },
          { header: "status", value: (account) => account.status },
          { header: "last error", value: (account) => orDash(account.lastError?.category) }
        ], page.data),
        page
      ))
  }).pipe(online(options))).pipe(Command.withDescription("The team's social accounts"))

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

/** Which account to connect: one provider's option, with its address or handle. */
const provider = decodedOption("webhook", WebsiteUrl, "address").pipe(
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
  ))
)

type Chosen = typeof provider extends Options.Options<infer A> ? A : never

/** The paste-credentials connect: `--webhook`, or `--bluesky` or `--mastodon` with a secret read next. */
const withCredentials = (
  teamId: TeamId,
  chosen: Chosen,
  options: { readonly serviceUrl: Option.Option<string>; readonly name: Option.Option<string>; readonly yes: boolean }
) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    if (Option.isSome(options.name) && chosen.provider !== "webhook") {
      return yield* new UsageError({ message: "--name names a webhook: Bluesky and Mastodon accounts have their own" })
    }
    const what = chosen.provider === "webhook"
      ? `a webhook at ${chosen.url}${Option.match(options.name, { onNone: () => "", onSome: (name) => ` named ${name}` })} (each publish is POSTed to it as a signed event)`
      : chosen.provider === "bluesky"
      ? `the Bluesky account ${chosen.handle} (its app password is read next)`
      : `an account on the Mastodon instance ${chosen.instanceUrl} (its access token is read next)`
    yield* confirmed({
      yes: options.yes,
      action: "connecting the account",
      preview: Effect.succeed(costsNothing(`Connect ${what} to team ${teamId}: the provider checks the credentials first`))
    })
    const connected = yield* (chosen.provider === "webhook"
      ? Effect.flatMap(credentials(ConnectWebhook, { ...chosen, ...Option.match(options.name, { onNone: () => ({}), onSome: (name) => ({ name }) }) }), (payload) =>
        client.socialAccounts.connectSocialAccount({ path: { teamId }, payload }))
      : chosen.provider === "bluesky"
      ? secretInput("App password (xxxx-xxxx-xxxx-xxxx)").pipe(
        Effect.flatMap((appPassword) =>
          credentials(ConnectBluesky, {
            ...chosen,
            appPassword: Redacted.value(appPassword),
            ...Option.match(options.serviceUrl, { onNone: () => ({}), onSome: (serviceUrl) => ({ serviceUrl }) })
          })),
        Effect.flatMap((payload) => client.socialAccounts.connectSocialAccount({ path: { teamId }, payload }))
      )
      : secretInput("Access token").pipe(
        Effect.flatMap((accessToken) => credentials(ConnectMastodon, { ...chosen, accessToken: Redacted.value(accessToken) })),
        Effect.flatMap((payload) => client.socialAccounts.connectSocialAccount({ path: { teamId }, payload }))
      ))
    yield* (yield* Output).answer(ConnectedSocialAccount, connected, (account) =>
      account.signingSecret === null
        ? accountFields(account)
        : `${accountFields(account)}\n\nSigning secret (shown this once: keep it to verify the webhook's calls): ${account.signingSecret}`)
  })

const connect = Command.make("connect", {
  ...serverOptions,
  team,
  provider: Options.optional(provider),
  serviceUrl: decodedOption("service-url", WebsiteUrl, "url").pipe(
    Options.optional,
    Options.withDescription("With --bluesky: its PDS (default https://bsky.social)")
  ),
  name: decodedOption("name", Name, "name").pipe(
    Options.optional,
    Options.withDescription("With --webhook: its name, shown beside its host (which two webhooks may share) when publishing")
  ),
  ...signInOptions,
  yes
}, (options) =>
  Effect.gen(function*() {
    const { network, provider: chosen } = options
    if (Option.isSome(network) && Option.isSome(chosen)) {
      return yield* new UsageError({
        message: `Either sign in (postline accounts connect ${network.value}) or give --${chosen.value.provider} with its credentials, not both`
      })
    }
    if (Option.isSome(network)) {
      const payload = yield* signInPayload(network.value, options)
      return yield* connectBySigningIn(yield* teamOf(options.team), payload, !options.noBrowser, accountFields)
    }
    if (Option.isNone(chosen)) {
      return yield* new UsageError({
        message: "Name a network to sign in at (postline accounts connect x, mastodon --instance <url> or bluesky --handle " +
          "<handle>), or give --webhook <address>, --bluesky <handle> or --mastodon <instance> with its credentials"
      })
    }
    if (Option.isSome(options.instance) || Option.isSome(options.handle) || options.noBrowser) {
      return yield* new UsageError({ message: "--instance, --handle and --no-browser go with signing in: postline accounts connect <provider>" })
    }
    return yield* withCredentials(yield* teamOf(options.team), chosen.value, options)
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "Connects an account to the team. By signing in: <provider> mastodon (--instance <url>), bluesky (--handle " +
        "<handle>) or x prints the network's link (and opens it in your browser), then waits while you sign in there " +
        "and approve Postline. Or with credentials (asks first): --webhook <address>, --bluesky <handle> (its app " +
        "password read from the terminal or the first line of standard input) or --mastodon <instance> (an access " +
        "token with the scopes read:accounts, write:statuses and write:media, read alike); the provider checks them first"
    )
  )

const verify = Command.make("verify", { ...serverOptions, team, account: decodedArg("accountId", SocialAccountId, "The account's id (postline accounts list shows them)"), yes }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const path = { teamId: yield* teamOf(options.team), socialAccountId: options.account }
    yield* confirmed({
      yes: options.yes,
      action: "verifying the account",
      preview: Effect.map(client.socialAccounts.getSocialAccount({ path }), (account) =>
        costsNothing(
          `Verify the ${account.provider} account ${account.handle} (${account.id}, ${account.status}) with its provider now: ` +
            "its status becomes what the provider answers"
        ))
    })
    const account = yield* client.socialAccounts.verifySocialAccount({ path })
    yield* (yield* Output).answer(SocialAccount, account, accountFields)
  }).pipe(online(options))).pipe(
    Command.withDescription("Checks an account's credentials with its provider now, which sets its status (asks first)")
  )

export const accountsCommand = commandGroup("accounts", "The team's social accounts: list, connect, verify", [list, connect, verify])
