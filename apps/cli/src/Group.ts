import { Command } from "@effect/cli"
import { UsageError } from "./Errors.js"

/**
 * A command that only groups others (`postline posts`): alone it does nothing, so it refuses (exit 2) and
 * names its commands, rather than exiting 0 having done nothing.
 */
export const commandGroup = <const Name extends string, const Children extends readonly [Command.Command<any, any, any, any>, ...Array<Command.Command<any, any, any, any>>]>(
  name: Name,
  description: string,
  children: Children,
  commandLine = `postline ${name}`
) =>
  Command.make(name, {}, () =>
    new UsageError({
      message: `${commandLine} needs a command: ${children.map((child) => Array.from(Command.getNames(child))[0]).join(", ")} (${commandLine} --help)`
    })).pipe(Command.withDescription(description), Command.withSubcommands(children))
