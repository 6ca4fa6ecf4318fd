import { HelpDoc } from "@effect/cli"
import { exitCodeLines } from "./ExitCodes.js"
import { commandGroup } from "./Group.js"
import { accountsCommand } from "./commands/Accounts.js"
import { analyticsCommand } from "./commands/Analytics.js"
import { contextCommands } from "./commands/Context.js"
import { loginCommands } from "./commands/Login.js"
import { mcpCommand } from "./commands/Mcp.js"
import { mediaCommand } from "./commands/Media.js"
import { organizationCommands } from "./commands/Organization.js"
import { postsCommand } from "./commands/Posts.js"
import { providersCommand } from "./commands/Providers.js"
import { publishingCommands } from "./commands/Publishing.js"

export const postlineCommand = commandGroup(
  "postline",
  "The command line of Postline: log in, then draft, price, publish and schedule posts, and follow their analytics",
  [
    ...loginCommands,
    ...contextCommands,
    accountsCommand,
    providersCommand,
    postsCommand,
    ...publishingCommands,
    ...organizationCommands,
    analyticsCommand,
    mediaCommand,
    mcpCommand
  ],
  "postline"
)

/** The end of `postline --help`: what the exit status of every command means. */
export const helpFooter = HelpDoc.blocks([
  HelpDoc.h1("EXIT CODES"),
  ...exitCodeLines.map((line) => HelpDoc.p(line)),
  HelpDoc.p(
    "A refusal of the server's (409, 402, 400) may carry a reason, a stable code to branch on: it follows the _tag, " +
      "as in Error (Conflict: post_not_draft): …, and --json prints it as error.reason. A Tag: reason entry above " +
      "takes that refusal out of its _tag's code; any other reason exits with its _tag's. The API's document lists " +
      "every reason (ConflictReason, PaymentRequiredReason, BadRequestReason)."
  ),
  HelpDoc.h1("CONFIRMATION"),
  HelpDoc.p(
    "Every command that changes something or spends credits (posts create, update, delete and unpublish, post-now, schedule, unschedule, " +
      "analytics refresh, billing spend-cap, accounts connect and verify, media upload, context use, logout) shows what it would do and what " +
      "it costs (for a publish or an analytics refresh, each account's credits and the organization's available credits; " +
      "Cost: none otherwise) and asks Proceed? [y/N] on the " +
      "terminal; --yes skips the question, and without a terminal it refuses (exit 2) unless --yes is given. login, and " +
      "accounts connect <provider> (signing in at the network), are approved in a browser instead, and mcp leaves " +
      "asking to the agent."
  )
])
