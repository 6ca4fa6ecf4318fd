import { Args, type Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { OrganizationId, PostId, SocialAccountId, TeamId, WebsiteUrl } from "@postline/domain"
import { Effect, Option, ParseResult, Schema } from "effect"

/** A value decoded by a schema of the domain, refused in the schema's words: `--team must be a UUID …`. */
export const decodeAs = <A, I>(label: string, schema: Schema.Schema<A, I>) => (value: string) =>
  Schema.decodeUnknown(schema)(value).pipe(Effect.mapError((error) =>
    HelpDoc.p(`${label} ${ParseResult.ArrayFormatter.formatErrorSync(error)[0]?.message}`)
  ))

/** An option decoded by a schema of the domain; `pseudoName` names its value in the usage (`--team id`). */
export const decodedOption = <A, I>(name: string, schema: Schema.Schema<A, I>, pseudoName = "text") =>
  Options.text(name).pipe(Options.withPseudoName(pseudoName), Options.mapEffect((value) => Effect.mapError(decodeAs(`--${name}`, schema)(value), ValidationError.invalidValue)))

/**
 * An option that may be given any number of times, none included, each value decoded by a schema of the domain.
 * Optional in the usage too (`[--account id...]`): @effect/cli writes a repeated option alone as if required.
 */
export const decodedRepeatedOption = <A, I>(name: string, schema: Schema.Schema<A, I>, pseudoName: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.withDescription(description),
    Options.repeated,
    Options.mapEffect((values) => Effect.mapError(Effect.forEach(values, decodeAs(`--${name}`, schema)), ValidationError.invalidValue)),
    Options.optional,
    Options.map(Option.getOrElse((): ReadonlyArray<A> => []))
  )

/** A positional argument decoded by a schema of the domain. */
export const decodedArg = <A, I>(name: string, schema: Schema.Schema<A, I>, description: string) =>
  Args.text({ name }).pipe(Args.withDescription(description), Args.mapEffect(decodeAs(`<${name}>`, schema)))

/** The options every command that calls the server takes. */
export const serverOptions = {
  url: decodedOption("url", WebsiteUrl, "url").pipe(
    Options.optional,
    Options.withDescription("The Postline server, e.g. https://postline.example.com (default: POSTLINE_URL, else the stored login's)")
  ),
  json: Options.boolean("json").pipe(
    Options.withDescription("Print the answer as one JSON document on standard output (errors as {\"error\": {_tag, message}})")
  )
}

export type ServerOptions = Command.Command.ParseConfig<typeof serverOptions>

export const yes = Options.boolean("yes").pipe(
  Options.withAlias("y"),
  Options.withDescription("Do not ask for confirmation (needed when standard input is not a terminal)")
)

export const team = decodedOption("team", TeamId, "id").pipe(
  Options.optional,
  Options.withDescription("The team's id (default: your default team, or your only one; see `postline context`)")
)

export const organization = decodedOption("org", OrganizationId, "id").pipe(
  Options.optional,
  Options.withDescription("The organization's id (default: your default organization; see `postline context`)")
)

/** `--account <id>`, repeated: what the accounts are for is the command's to say. */
export const accounts = (description: string) => decodedRepeatedOption("account", SocialAccountId, "id", description)

export const postId = decodedArg("postId", PostId, "The post's id (postline posts list shows them)")
