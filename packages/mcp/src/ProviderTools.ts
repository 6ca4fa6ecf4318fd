import { ProviderRulesList } from "@postline/domain"
import { apiTool, reads } from "./ApiTool.js"

export const ListProviders = apiTool("list_providers", {
  title: "List providers' rules",
  description: "Each provider's rules (Bluesky, Mastodon, X, Telegram, Discord, webhook): how an account is connected (where " +
    "connect.oauth.configured is true, connect_account connects one on this server), the longest text and how it is " +
    "counted (graphemes; weighted on X; UTF-16 units on Telegram; code points on Discord; urlLength: what every URL " +
    "counts as, 23 on Mastodon; maxBytes: Bluesky's 3000 bytes), the media " +
    "it takes (count, types, sizes, alt text), whether it takes threads (and how many parts), a first comment and " +
    "deleting, the credits one publish costs and the calls an account may make. Read this before writing a post, " +
    "and write each account's text within its provider's limits: a text or medium over them is refused before " +
    "sending. Where media.perAccount is true (Mastodon), each instance sets its own limits; the values are the " +
    "defaults. Changes nothing and costs nothing.",
  parameters: {},
  success: ProviderRulesList,
  hints: reads
})
