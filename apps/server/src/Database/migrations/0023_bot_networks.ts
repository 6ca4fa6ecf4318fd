import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Telegram and Discord are providers: a Telegram bot's token and the chat it posts to, a Discord channel's
 * webhook. Neither is connected by signing in, so `account_connects` is as it was.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE social_accounts DROP CONSTRAINT social_accounts_provider_check`
  yield* sql`ALTER TABLE social_accounts ADD CONSTRAINT social_accounts_provider_check
    CHECK (provider IN ('bluesky', 'mastodon', 'x', 'telegram', 'discord', 'webhook'))`
})
