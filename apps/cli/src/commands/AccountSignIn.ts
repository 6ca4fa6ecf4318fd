import { Args, Options } from "@effect/cli"
import {
  AccountConnect,
  OAuthProvider,
  type PostlineClient,
  type SocialAccount,
  StartBlueskyConnect,
  type StartConnect,
  StartMastodonConnect,
  type TeamId
} from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { openInBrowser } from "../Browser.js"
import { decodedArg, decodedOption } from "../CommonOptions.js"
import { AccountConnectExpired, AccountConnectFailed, UsageError } from "../Errors.js"
import { Output } from "../Output.js"
import { withSpinner } from "../Spinner.js"

// `postline accounts connect <provider>`: the person signs in at the network and approves there, while the CLI waits.

/** A request to start a connect, of any network, answered without the response. */
type StartRequest = Extract<Parameters<PostlineClient["accountConnects"]["startAccountConnect"]>[0], { readonly withResponse?: false }>

const networkNames: Record<OAuthProvider, string> = { bluesky: "Bluesky", mastodon: "Mastodon", x: "X" }

/** How often the connect's status is asked while the person approves (the API asks for every few seconds). */
const pollInterval = "2 seconds"

export const signInOptions = {
  network: decodedArg(
    "provider",
    OAuthProvider,
    "Connect by signing in at this network and approving Postline there, in a browser: mastodon (with --instance), " +
      "bluesky (with --handle) or x. No secret is typed here"
  ).pipe(Args.optional),
  instance: decodedOption("instance", StartMastodonConnect.fields.instanceUrl, "url").pipe(
    Options.optional,
    Options.withDescription("With mastodon: the instance the account is on, e.g. https://mastodon.social")
  ),
  handle: decodedOption("handle", StartBlueskyConnect.fields.handle, "handle").pipe(
    Options.optional,
    Options.withDescription("With bluesky: the account's handle (alice.bsky.social) or DID")
  ),
  noBrowser: Options.boolean("no-browser").pipe(
    Options.withDescription(
      "With a provider: print the link only, and open no browser (none is opened when standard output is not a terminal)"
    )
  )
}

/** What the connect takes: the network and the option it needs, refused when that option is missing or another's given. */
export const signInPayload = (
  network: OAuthProvider,
  options: { readonly instance: Option.Option<string>; readonly handle: Option.Option<string> }
): Effect.Effect<StartConnect, UsageError> => {
  if (network !== "mastodon" && Option.isSome(options.instance)) {
    return new UsageError({ message: "--instance goes with mastodon: postline accounts connect mastodon --instance <url>" })
  }
  if (network !== "bluesky" && Option.isSome(options.handle)) {
    return new UsageError({ message: "--handle goes with bluesky: postline accounts connect bluesky --handle <handle>" })
  }
  if (network === "x") return Effect.succeed({ provider: "x" })
  if (network === "mastodon") {
    return Option.match(options.instance, {
      onNone: () =>
        new UsageError({ message: "Which instance is the account on? postline accounts connect mastodon --instance <url>" }),
      onSome: (instanceUrl) => Effect.succeed({ provider: "mastodon", instanceUrl })
    })
  }
  return Option.match(options.handle, {
    onNone: () => new UsageError({ message: "Which account? postline accounts connect bluesky --handle <handle>" }),
    onSome: (handle) => Effect.succeed({ provider: "bluesky", handle })
  })
}

const minutesUntil = (timestamp: string) => Math.max(1, Math.round((Date.parse(timestamp) - Date.now()) / 60_000))

/** The connect's status, asked again every `pollInterval` while the person has not answered. */
const settled = (teamId: TeamId, connectId: AccountConnect["connectId"]) =>
  Effect.flatMap(Postline, ({ client }) => {
    const check = client.accountConnects.getAccountConnect({ path: { teamId, connectId } })
    return Effect.flatMap(check, (first) =>
      Effect.iterate(first, {
        while: (connect) => connect.status === "pending",
        body: () => Effect.zipRight(Effect.sleep(pollInterval), check)
      }))
  })

/**
 * Starts the connect, hands the person its link (opened in their browser when `browser` and standard output is a
 * terminal), waits for their answer, and answers the account connected; a denied, failed or expired connect fails.
 */
export const connectBySigningIn = (
  teamId: TeamId,
  payload: StartConnect,
  browser: boolean,
  accountText: (account: SocialAccount) => string
) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const output = yield* Output
    const network = networkNames[payload.provider]
    // The typed client takes each kind of payload as a request of its own: this one is one of them.
    const started = yield* client.accountConnects.startAccountConnect({ path: { teamId }, payload } as StartRequest)
    const opened = browser && process.stdout.isTTY === true ? yield* openInBrowser(started.authorizationUrl) : false
    // The link on a line of its own, so that a terminal makes all of it one link to click.
    yield* output.note(
      [
        `To connect the ${network} account to team ${teamId}, open this link${opened ? " (opened in your browser)" : ""}, ` +
        `sign in at ${network} and approve Postline:`,
        started.authorizationUrl,
        `Any browser will do, on any device. The link expires in ${minutesUntil(started.expiresAt)} minutes.`
      ].join("\n")
    )
    const connect = yield* settled(teamId, started.connectId).pipe(withSpinner(`Waiting for your approval at ${network}…`))
    switch (connect.status) {
      case "connected":
        return yield* output.answer(AccountConnect, connect, ({ account }) => account === null ? "Connected" : accountText(account))
      case "expired":
        return yield* new AccountConnectExpired({
          message: `Nobody approved at ${network} before the link expired (connect ${connect.connectId}): run the command again`
        })
      default:
        return yield* new AccountConnectFailed({
          message: `Connecting the ${network} account failed (connect ${connect.connectId}): ${connect.error ?? "no reason given"}`
        })
    }
  })
