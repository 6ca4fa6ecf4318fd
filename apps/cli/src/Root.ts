import { HelpDoc } from "@effect/cli"
import { exitCodeLines } from "./ExitCodes.js"
import { commandGroup } from "./Group.js"
import { accountsCommand } from "./commands/Accounts.js"
import { contextCommands } from "./commands/Context.js"
import { loginCommands } from "./commands/Login.js"
import { mcpCommand } from "./commands/Mcp.js"
import { mediaCommand } from "./commands/Media.js"
import { organizationCommands } from "./commands/Organization.js"
import { postsCommand } from "./commands/Posts.js"
import { publishingCommands } from "./commands/Publishing.js"

export const postlineCommand = commandGroup(
  "postline",
  "The command line of Postline: log in, then draft, price, publish and schedule posts",
  [
    ...loginCommands,
    ...contextCommands,
    accountsCommand,
    postsCommand,
    ...publishingCommands,
    ...organizationCommands,
    mediaCommand,
    mcpCommand
  ],
  "postline"
)

/** The end of `postline --help`: what the exit status of every command means. */
export const helpFooter = HelpDoc.blocks([
  HelpDoc.h1("EXIT CODES"),
  ...exitCodeLines.map((line) => HelpDoc.p(line)),
  HelpDoc.h1("CONFIRMATION"),
  HelpDoc.p(
    "post-now and schedule (which spend credits), unschedule and posts delete show what they would do and ask " +
      "Proceed? [y/N] on the terminal; --yes skips the question, and without a terminal they refuse unless --yes is given."
  )
])
