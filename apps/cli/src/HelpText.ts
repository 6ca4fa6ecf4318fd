import { Console, Effect } from "effect"

/** Select Graphic Rendition: the colour and weight codes @effect/cli writes into its help and its refusals. */
const colourCodes = /\u001b\[[0-9;]*m/g

/** The help's USAGE heading, coloured or not: the text is a help page. */
const helpPage = /^(?:\u001b\[[0-9;]*m)*USAGE(?:\u001b\[[0-9;]*m)*$/m

/**
 * The sentence @effect/cli writes for an option's or argument's value type before the description the CLI
 * gives it ("A user-defined piece of text." for every text option). Each has its own description instead.
 */
const valueTypeSentence = /^ {2}(?:A user-defined piece of text\.|A true or false value\.|An integer\.)\n\n/gm

/** A text as it goes to a stream: without colour codes unless the stream is a terminal and NO_COLOR is unset. */
const forStream = (stream: NodeJS.WriteStream) => {
  const colours = stream.isTTY === true && (process.env.NO_COLOR ?? "") === ""
  return (value: unknown) => {
    if (typeof value !== "string") return value
    const text = helpPage.test(value) ? value.replace(valueTypeSentence, "") : value
    return colours ? text : text.replace(colourCodes, "")
  }
}

/**
 * The console the CLI writes through (its own answers and @effect/cli's help and refusals): colour only on a
 * terminal, as pipes and files want plain text, and help pages with the descriptions the CLI gives alone.
 */
export const withHelpText = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.console, (console) => {
    const stdout = forStream(process.stdout)
    const stderr = forStream(process.stderr)
    return Effect.withConsole(effect, {
      ...console,
      log: (...args) => console.log(...args.map(stdout)),
      error: (...args) => console.error(...args.map(stderr))
    } satisfies Console.Console)
  })
