import { Command, Options } from "@effect/cli"
import { Name, SocialAccount, SocialAccountId, SocialAccountList, WebsiteUrl } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { decodedArg, decodedOption, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { commandGroup } from "../Group.js"
import { Output } from "../Output.js"
import { pageOptions, pageParams, pageText } from "../Pages.js"
import { online } from "../Session.js"
import { fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"
import { type ChosenCredentials, connectWithCredentials, credentialsProvider, discordOption } from "./AccountCredentials.js"
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

const connect = Command.make("connect", {
  ...serverOptions,
  team,
  provider: Options.optional(credentialsProvider),
  discord: discordOption,
  serviceUrl: decodedOption("service-url", WebsiteUrl, "url").pipe(
    Options.optional,
    Options.withDescription("With --bluesky: its PDS (default https://bsky.social)")
  ),
  name: decodedOption("name", Name, "name").pipe(
    Options.optional,
    Options.withDescription(
      "With --webhook: its name, shown beside its host (which two webhooks may share) when publishing; with --telegram " +
        "or --discord: the account's name (default: the chat's title, the webhook's name)"
    )
  ),
  ...signInOptions,
  yes
}, (options) =>
  Effect.gen(function*() {
    const { network } = options
    if (options.discord && Option.isSome(options.provider)) {
      return yield* new UsageError({ message: `Give one account to connect: --discord or --${options.provider.value.provider}` })
    }
    const chosen: Option.Option<ChosenCredentials> = options.discord ? Option.some({ provider: "discord" }) : options.provider
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
          "<handle>), or give --webhook <address>, --bluesky <handle>, --mastodon <instance>, --telegram <chat> or " +
          "--discord with its credentials"
      })
    }
    if (Option.isSome(options.instance) || Option.isSome(options.handle) || options.noBrowser) {
      return yield* new UsageError({ message: "--instance, --handle and --no-browser go with signing in: postline accounts connect <provider>" })
    }
    return yield* connectWithCredentials(yield* teamOf(options.team), chosen.value, options, accountFields)
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "Connects an account to the team. By signing in: <provider> mastodon (--instance <url>), bluesky (--handle " +
        "<handle>) or x prints the network's link (and opens it in your browser), then waits while you sign in there " +
        "and approve Postline. Or with credentials (asks first): --webhook <address>, --bluesky <handle> (its app " +
        "password read from the terminal or the first line of standard input), --mastodon <instance> (an access " +
        "token with the scopes read:accounts, write:statuses and write:media), --telegram <chat> (its bot's token) or " +
        "--discord (its webhook's URL), each read alike; the provider checks them first"
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
