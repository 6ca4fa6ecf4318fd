import { HelpDoc, Options, ValidationError } from "@effect/cli"
import {
  CreatePost,
  maxPostLength,
  maxThreadParts,
  PostContent,
  type PostPartInput,
  type PostVersionInput,
  SocialAccountId,
  strict,
  ThreadInput,
  VersionsInput
} from "@postline/domain"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { readTextAtMost } from "../BoundedInput.js"
import { decodeAs, decodedOption, decodedRepeatedOption } from "../CommonOptions.js"
import { UsageError } from "../Errors.js"
import { excerpt } from "../Table.js"

/**
 * A post's body on the command line: its text (`--text` or `--file`), and what the API adds to it (a thread, a
 * first comment, versions for single accounts) as options a person types, or as one JSON file a script writes.
 */

/**
 * The most bytes a file of the longest post can hold: each character up to 4 bytes of UTF-8, and the line break
 * (CRLF at most) that ends its last line. A longer file is refused unread.
 */
export const maxFileBytes = maxPostLength * 4 + 2

/** The server takes no request body over 1 MiB (README: Request bodies): a longer JSON file could never be sent. */
const maxPartsFileBytes = 1024 * 1024

const fileRefused = (option: string, bound: string) => (error: { readonly _tag: string; readonly message: string }) =>
  ValidationError.invalidValue(HelpDoc.p(error._tag === "UsageError" ? `${option}: ${error.message} (${bound})` : error.message))

/** The text of a file, without the line break that ends its last line. */
const fileText = (path: string) =>
  readTextAtMost(path, maxFileBytes).pipe(
    Effect.map((text) => text.replace(/\r?\n$/, "")),
    Effect.mapError(fileRefused("--file", `a post's text is at most ${maxPostLength} characters`))
  )

/** The post's text, from `--text` or `--file`: required by `posts create`, optional for `posts update`. */
export const content = Options.text("text").pipe(
  Options.withDescription("The post's text (the thread's first part)"),
  Options.orElseEither(Options.file("file", { exists: "yes" }).pipe(
    Options.withDescription(`Read the post's text from this file (at most ${maxFileBytes} bytes)`)
  )),
  Options.mapEffect(Either.match({ onLeft: Effect.succeed, onRight: fileText })),
  Options.mapEffect((text) => Effect.mapError(decodeAs("The post's text", PostContent)(text), ValidationError.invalidValue))
)

/** What `--parts-file` holds: the API's own fields for the rest of the body, each optional. */
const PartsFile = Schema.parseJson(
  Schema.Struct({
    thread: CreatePost.fields.thread,
    firstComment: CreatePost.fields.firstComment,
    versions: CreatePost.fields.versions
  }).annotations(strict)
)

/** Every issue of a refused value, `path message`, in one line. */
const issuesOf = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => [issue.path.length === 0 ? "" : `${issue.path.join(".")} `, issue.message].join(""))
    .join("; ")

const partsFile = (path: string) =>
  readTextAtMost(path, maxPartsFileBytes).pipe(
    Effect.mapError(fileRefused("--parts-file", "a request body is at most 1 MiB")),
    Effect.flatMap((text) =>
      Effect.mapError(
        Schema.decodeUnknown(PartsFile)(text),
        (error) => ValidationError.invalidValue(HelpDoc.p(`--parts-file ${issuesOf(error)}`))
      )
    )
  )

/** `<accountId>=<text>`: the id before the first `=`, the text after it. */
const accountVersion = (value: string) => {
  const at = value.indexOf("=")
  if (at === -1) return Effect.fail(HelpDoc.p("--account-version must be <accountId>=<text>"))
  return Effect.all({
    socialAccountId: decodeAs("--account-version's account", SocialAccountId)(value.slice(0, at)),
    content: decodeAs("--account-version's text", PostContent)(value.slice(at + 1))
  })
}

/** The options of the body beyond its text, for `posts create` and `posts update`. */
export const bodyOptions = {
  parts: decodedRepeatedOption(
    "part",
    PostContent,
    "text",
    `A further part of a thread, after the post's text, in order; repeat it for each (at most ${maxThreadParts - 1}). ` +
      "Each is published as a reply to the one before and costs one publish"
  ),
  firstComment: decodedOption("first-comment", PostContent, "text").pipe(
    Options.optional,
    Options.withDescription(
      "A comment posted as a reply right after the post (after its last part, on a thread), where the network takes one; " +
        "it costs one publish, and its failure does not fail the post"
    )
  ),
  accountVersions: Options.text("account-version").pipe(
    Options.withPseudoName("id=text"),
    Options.withDescription(
      "The text one account gets instead of the post's, as <accountId>=<text>; repeat it for other accounts (one each). " +
        "The account keeps the post's media and thread"
    ),
    Options.repeated,
    Options.mapEffect((values) => Effect.mapError(Effect.forEach(values, accountVersion), ValidationError.invalidValue)),
    Options.optional,
    Options.map(Option.getOrElse((): ReadonlyArray<{ socialAccountId: SocialAccountId; content: string }> => []))
  ),
  partsFile: Options.file("parts-file", { exists: "yes" }).pipe(
    Options.withDescription(
      `Read the thread, first comment and versions as one JSON object, the API's own fields (at most ${maxPartsFileBytes} ` +
        'bytes): {"thread": [{"content", "media"?}], "firstComment": {"content", "media"?} or null, "versions": ' +
        '[{"socialAccountId", "content"?, "media"?, "thread"?}]}, each optional; media are [{"assetId", "altText"?}]. ' +
        "A field given by an option too is refused"
    ),
    Options.mapEffect(partsFile),
    Options.optional
  )
}

/** What `posts update` takes besides: removing what the post has. */
export const clearingOptions = {
  noThread: Options.boolean("no-thread").pipe(Options.withDescription("Make it a single post again: remove its thread's further parts")),
  noFirstComment: Options.boolean("no-first-comment").pipe(Options.withDescription("Remove its first comment")),
  noVersions: Options.boolean("no-versions").pipe(Options.withDescription("Remove its versions: every account gets the post's body"))
}

type BodyOptions = {
  readonly parts: ReadonlyArray<string>
  readonly firstComment: Option.Option<string>
  readonly accountVersions: ReadonlyArray<PostVersionInput>
  readonly partsFile: Option.Option<typeof PartsFile.Type>
  readonly noThread?: boolean
  readonly noFirstComment?: boolean
  readonly noVersions?: boolean
}

/** The body's further fields that the options give: each from one place, checked as the API will check it. */
export interface BodyFields {
  thread?: ReadonlyArray<PostPartInput>
  firstComment?: PostPartInput | null
  versions?: ReadonlyArray<PostVersionInput>
}

/**
 * One field from the option that gives it: typed options (`given`), the file's field, or the clearing flag;
 * two of them at once is a usage error, since neither would be sent as the user meant.
 */
const fromOnePlace = <A>(field: string, sources: ReadonlyArray<readonly [name: string, value: Option.Option<A>]>) => {
  const given = sources.filter(([, value]) => Option.isSome(value))
  if (given.length > 1) {
    return Effect.fail(new UsageError({ message: `The ${field} comes from one place: ${given.map(([name]) => name).join(" or ")}, not both` }))
  }
  return Effect.succeed(Option.flatMap(Option.fromNullable(given[0]), ([, value]) => value))
}

const whenNonEmpty = <A>(values: ReadonlyArray<A>) => values.length > 0 ? Option.some(values) : Option.none()
const when = <A>(flag: boolean | undefined, value: A) => flag === true ? Option.some(value) : Option.none<A>()

/** Checks what the options assembled as the API will (24 further parts at most, one version per account). */
const checked = <A, I>(option: string, schema: Schema.Schema<A, I>, value: I) =>
  Effect.mapError(Schema.decodeUnknown(schema)(value), (error) => new UsageError({ message: `${option} ${issuesOf(error)}` }))

export const bodyFields = (options: BodyOptions) =>
  Effect.gen(function*() {
    const file = Option.getOrElse(options.partsFile, (): typeof PartsFile.Type => ({}))
    const thread = yield* fromOnePlace("thread", [
      ["--part", Option.map(whenNonEmpty(options.parts), (parts) => parts.map((part) => ({ content: part })))],
      ["--parts-file's thread", Option.fromNullable(file.thread)],
      ["--no-thread", when(options.noThread, [])]
    ])
    const firstComment = yield* fromOnePlace<PostPartInput | null>("first comment", [
      ["--first-comment", Option.map(options.firstComment, (text) => ({ content: text }))],
      ["--parts-file's firstComment", file.firstComment === undefined ? Option.none() : Option.some(file.firstComment)],
      ["--no-first-comment", when(options.noFirstComment, null)]
    ])
    const versions = yield* fromOnePlace("versions", [
      ["--account-version", whenNonEmpty(options.accountVersions)],
      ["--parts-file's versions", Option.fromNullable(file.versions)],
      ["--no-versions", when(options.noVersions, [])]
    ])
    const fields: BodyFields = {}
    if (Option.isSome(thread)) fields.thread = yield* checked("--part", ThreadInput, thread.value)
    if (Option.isSome(firstComment)) fields.firstComment = firstComment.value
    if (Option.isSome(versions)) fields.versions = yield* checked("--account-version", VersionsInput, versions.value)
    return fields
  })

/** The preview's lines of the body's further fields: what the confirmation shows before creating or changing. */
export const bodyPreview = (fields: BodyFields): ReadonlyArray<readonly [string, string]> => [
  ...(fields.thread === undefined ? [] : [["Thread", fields.thread.length === 0 ? "none" : `${fields.thread.length + 1} parts`] as const]),
  ...(fields.firstComment === undefined
    ? []
    : [["First comment", fields.firstComment === null ? "none" : excerpt(fields.firstComment.content, 60)] as const]),
  ...(fields.versions === undefined
    ? []
    : [["Versions", fields.versions.length === 0 ? "none" : fields.versions.map((version) => version.socialAccountId).join(", ")] as const])
]
