import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { codePoints, httpUrlShape, invalidUnless, maxUrlLength, oneOf, optional, strict, Text, Timestamp, WebsiteUrl } from "./Fields.js"
import { ConnectId, TeamId } from "./Ids.js"
import { SocialAccount } from "./SocialAccounts.js"

/** The networks a person connects by signing in there and approving Postline (OAuth). */
export const OAuthProvider = oneOf("bluesky", "mastodon", "x").annotations({
  identifier: "OAuthProvider",
  description: "A network whose accounts are connected by signing in there (OAuth)"
})
export type OAuthProvider = typeof OAuthProvider.Type

/** How long a person has to sign in and approve before the connect expires. */
export const connectLifetimeSeconds = 10 * 60

// No user name or password in an address: the URL parser would take them, and the browser would not go there.
const addressShape = httpUrlShape({ userInfo: false })
const address = WebsiteUrl.pipe(Schema.pattern(addressShape))

const returnTo = optional(
  address.annotations({
    description: "Where the person's browser is sent when the network has answered, with `connectId` and `status` " +
      "added to its query: an address of this server, or a loopback one (http://127.0.0.1:<port>/…, " +
      "http://[::1]:<port>/…, http://localhost:<port>/…) of a program on the person's machine. Without it, this " +
      "server answers a page saying what was connected",
    jsonSchema: { pattern: addressShape.source, maxLength: maxUrlLength },
    ...invalidUnless("must be an absolute http or https URL without a user name or password")
  })
)

export const StartMastodonConnect = Schema.Struct({
  provider: Schema.Literal("mastodon"),
  instanceUrl: address.annotations({
    description: "The instance the account is on, e.g. `https://mastodon.social`. No user name or password in it",
    jsonSchema: { pattern: addressShape.source, maxLength: maxUrlLength },
    ...invalidUnless("must be an absolute http or https URL without a user name or password")
  }),
  returnTo
}).annotations({ ...strict, identifier: "StartMastodonConnect" })

export const StartBlueskyConnect = Schema.Struct({
  provider: Schema.Literal("bluesky"),
  handle: Text.pipe(
    Schema.filter((handle) => codePoints(handle) >= 1 && codePoints(handle) <= 253, {
      jsonSchema: { minLength: 1, maxLength: 253 }
    })
  ).annotations({
    description: "The account's handle (`alice.bsky.social`) or DID: where its sign-in page is found",
    ...invalidUnless("must be 1 to 253 characters")
  }),
  returnTo
}).annotations({ ...strict, identifier: "StartBlueskyConnect" })

export const StartXConnect = Schema.Struct({
  provider: Schema.Literal("x"),
  returnTo
}).annotations({ ...strict, identifier: "StartXConnect" })

export const StartConnect = Schema.Union(StartMastodonConnect, StartBlueskyConnect, StartXConnect).annotations({
  identifier: "StartConnect",
  description: "The network, and what it takes to find the account's sign-in page"
})
export type StartConnect = typeof StartConnect.Type

export const ConnectStarted = Schema.Struct({
  connectId: ConnectId,
  authorizationUrl: Schema.String.annotations({
    description: "The network's page where the person signs in and approves: open it in their browser"
  }),
  expiresAt: Timestamp.annotations({ description: "Until when the person may approve (10 minutes)" })
}).annotations({ identifier: "ConnectStarted" })

export const ConnectStatus = oneOf("pending", "connected", "failed", "expired").annotations({
  identifier: "ConnectStatus",
  description: "pending: waiting for the person to approve; connected: `account` is the account connected (or " +
    "reconnected: the same network user keeps one account); failed: `error` says why; expired: nobody approved in time"
})
export type ConnectStatus = typeof ConnectStatus.Type

export const AccountConnect = Schema.Struct({
  connectId: ConnectId,
  teamId: TeamId,
  provider: OAuthProvider,
  status: ConnectStatus,
  account: Schema.NullOr(SocialAccount),
  error: Schema.NullOr(Schema.String).annotations({ description: "Why it failed; null unless failed" }),
  createdAt: Timestamp,
  expiresAt: Timestamp
}).annotations({ identifier: "AccountConnect", description: "A connect started for a team, as it stands" })
export type AccountConnect = typeof AccountConnect.Type

const teamPath = Schema.Struct({ teamId: TeamId })

export class AccountConnectsGroup extends HttpApiGroup.make("accountConnects")
  .add(
    HttpApiEndpoint.post("startAccountConnect", "/v1/teams/:teamId/social-accounts/connect")
      .setPath(teamPath)
      .setPayload(StartConnect)
      .addSuccess(ConnectStarted, { status: 201 })
      .annotate(OpenApi.Summary, "Start connecting an account by signing in")
      .annotate(
        OpenApi.Description,
        "Answers the network's page where a person signs in and approves; send them there (a program opens it in " +
          "their browser, an agent shows it to its user). The network sends them back to " +
          "`/v1/oauth/callback/{provider}` on this server, which keeps the account's tokens encrypted and connects " +
          "it, or reconnects it when the team has it already. Then `GET …/connect/{connectId}` answers the account. " +
          "409 `provider_not_configured` names the settings a network needs on this server; 400 " +
          "`return_to_not_allowed` refuses a returnTo elsewhere than this server or a loopback address, and 400 " +
          "`credentials_not_verified` says why the network's sign-in could not be started (an instance that cannot " +
          "be reached). Admins, owners and the organization's API keys may."
      )
  )
  .add(
    HttpApiEndpoint.get("getAccountConnect", "/v1/teams/:teamId/social-accounts/connect/:connectId")
      .setPath(Schema.Struct({ teamId: TeamId, connectId: ConnectId }))
      .addSuccess(AccountConnect)
      .annotate(OpenApi.Summary, "Get a connect's status")
      .annotate(
        OpenApi.Description,
        "Whether the person approved: pending, connected (with the account), failed (with why) or expired. Poll it " +
          "every few seconds while pending. Whoever may connect the team's accounts may."
      )
  )
  .annotate(OpenApi.Title, "accountConnects")
  .annotate(OpenApi.Description, "Connecting accounts by signing in at the network (OAuth)")
{}
