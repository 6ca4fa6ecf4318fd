import { AccountConnect, ConnectId, ConnectStarted, OAuthProvider, optional, StartBlueskyConnect, StartMastodonConnect } from "@postline/domain"
import { Schema } from "effect"
import { apiTool, reads, teamFields } from "./ApiTool.js"

export const ConnectAccount = apiTool("connect_account", {
  title: "Connect a social account",
  description: "Starts connecting a team's account on Bluesky (give handle), Mastodon (give instanceUrl) or X, by " +
    "the user signing in at the network: answers a link (authorizationUrl), a connectId and when the link expires. " +
    "You cannot approve it yourself: show the user the link and ask them to open it and approve, then call " +
    "check_account_connect. Connecting the same network user again updates the team's account. A Conflict with " +
    "reason provider_not_configured names the settings this server's operator must set first.",
  parameters: {
    ...teamFields,
    provider: OAuthProvider,
    instanceUrl: optional(StartMastodonConnect.fields.instanceUrl.annotations({
      description: "With provider mastodon, and only then: the instance the account is on, e.g. https://mastodon.social"
    })),
    handle: optional(StartBlueskyConnect.fields.handle.annotations({
      description: "With provider bluesky, and only then: the account's handle (alice.bsky.social) or DID"
    }))
  },
  success: Schema.Struct({
    ...ConnectStarted.fields,
    instructions: Schema.String.annotations({ description: "What to do next" })
  }).annotations({ identifier: "ConnectAccountStarted" }),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})

export const CheckAccountConnect = apiTool("check_account_connect", {
  title: "Check a social account connect",
  description: "Whether the user approved a connect started by connect_account. pending: not yet; ask the user " +
    "whether they approved, and check again a few seconds later. connected: account is the team's account (use its " +
    "id in create_post). failed: error says why. expired: nobody approved in time. After failed or expired, start " +
    "again with connect_account if the user wants to. Changes nothing.",
  parameters: { ...teamFields, connectId: ConnectId },
  success: AccountConnect,
  hints: reads
})
