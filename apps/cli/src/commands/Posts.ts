import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { AssetId, maxPostLength, Post, PostContent, PostList, PostStatus } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Either, Option } from "effect"
import { readTextAtMost } from "../BoundedInput.js"
import { accounts, decodeAs, decodedOption, decodedRepeatedOption, postId, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { commandGroup } from "../Group.js"
import { Output } from "../Output.js"
import { pageOptions, pageParams, pageText } from "../Pages.js"
import { online } from "../Session.js"
import { excerpt, fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"

/** A post for people: its fields, then one line per account it was sent to. */
export const postText = (post: Post) =>
  [
    fields([
      ["Id", post.id],
      ["Team", post.teamId],
      ["Status", post.status],
      ["Scheduled at", orDash(post.scheduledAt)],
      ["Accounts", post.socialAccountIds.length === 0 ? "-" : post.socialAccountIds.join(", ")],
      ["Media", post.media.length === 0 ? "-" : post.media.map((medium) => medium.assetId).join(", ")],
      ["Created", post.createdAt],
      ["Updated", post.updatedAt]
    ]),
    "",
    post.content,
    "",
    "Results per account:",
    table([
      { header: "account", value: (target) => target.socialAccountId },
      { header: "status", value: (target) => target.status },
      { header: "credits", value: (target) => String(target.creditsSpent) },
      { header: "url", value: (target) => orDash(target.url) },
      { header: "error", value: (target) => target.error === null ? "-" : `${target.error.category}: ${target.error.message}` }
    ], post.targets)
  ].join("\n")

/**
 * The most bytes a file of the longest post can hold: each character up to 4 bytes of UTF-8, and the line break
 * (CRLF at most) that ends its last line. A longer file is refused unread.
 */
const maxFileBytes = maxPostLength * 4 + 2

/** The text of a file, without the line break that ends its last line. */
const fileText = (path: string) =>
  readTextAtMost(path, maxFileBytes).pipe(
    Effect.map((text) => text.replace(/\r?\n$/, "")),
    Effect.mapError((error) =>
      ValidationError.invalidValue(HelpDoc.p(
        error._tag === "UsageError" ? `--file: ${error.message} (a post's text is at most ${maxPostLength} characters)` : error.message
      ))
    )
  )

const content = Options.text("text").pipe(
  Options.withDescription("The post's text"),
  Options.orElseEither(Options.file("file", { exists: "yes" }).pipe(
    Options.withDescription(`Read the post's text from this file (at most ${maxFileBytes} bytes)`)
  )),
  Options.mapEffect(Either.match({ onLeft: Effect.succeed, onRight: fileText })),
  Options.mapEffect((text) => Effect.mapError(decodeAs("The post's text", PostContent)(text), ValidationError.invalidValue))
)

const create = Command.make("create", {
  ...serverOptions,
  team,
  content,
  accounts: accounts("An account the post is meant for (post-now and schedule default to them); repeat it for several"),
  media: decodedRepeatedOption(
    "media",
    AssetId,
    "id",
    "An asset of the team's media library to send with it, in order (postline media list); repeat it for several"
  ),
  yes
}, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const teamId = yield* teamOf(options.team)
    yield* confirmed({
      yes: options.yes,
      action: "creating the draft",
      preview: Effect.succeed(costsNothing(
        [
          `Create a draft in team ${teamId}: ${excerpt(options.content, 60)}`,
          fields([
            ["Accounts", options.accounts.length === 0 ? "-" : options.accounts.join(", ")],
            ["Media", options.media.length === 0 ? "-" : options.media.join(", ")]
          ])
        ].join("\n")
      ))
    })
    const post = yield* postline.client.posts.createPost({
      path: { teamId },
      payload: {
        content: options.content,
        ...(options.accounts.length > 0 ? { socialAccountIds: options.accounts } : {}),
        ...(options.media.length > 0 ? { media: options.media.map((assetId) => ({ assetId })) } : {})
      }
    })
    yield* (yield* Output).answer(Post, post, postText)
  }).pipe(online(options))).pipe(Command.withDescription("Creates a draft from --text or --file (asks first)"))

const list = Command.make("list", {
  ...serverOptions,
  ...pageOptions,
  team,
  status: decodedOption("status", PostStatus, "status").pipe(Options.optional, Options.withDescription("Only posts with this status"))
}, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const teamId = yield* teamOf(options.team)
    const posts = yield* postline.client.posts.listPosts({
      path: { teamId },
      urlParams: {
        ...pageParams(options),
        ...Option.match(options.status, { onNone: () => ({}), onSome: (status) => ({ status }) })
      }
    })
    yield* (yield* Output).answer(PostList, posts, (page) =>
      pageText(
        table([
          { header: "id", value: (post) => post.id },
          { header: "status", value: (post) => post.status },
          { header: "scheduled at", value: (post) => orDash(post.scheduledAt) },
          { header: "text", value: (post) => excerpt(post.content) }
        ], page.data),
        page
      ))
  }).pipe(online(options))).pipe(Command.withDescription("The team's posts, newest first"))

const show = Command.make("show", { ...serverOptions, team, postId }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const teamId = yield* teamOf(options.team)
    const post = yield* postline.client.posts.getPost({ path: { teamId, postId: options.postId } })
    yield* (yield* Output).answer(Post, post, postText)
  }).pipe(online(options))).pipe(Command.withDescription("One post, with what became of it on each account"))

const remove = Command.make("delete", { ...serverOptions, team, postId, yes }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const path = { teamId: yield* teamOf(options.team), postId: options.postId }
    yield* confirmed({
      yes: options.yes,
      action: "deleting the draft",
      preview: Effect.map(postline.client.posts.getPost({ path }), (post) => costsNothing(`Delete the draft ${post.id}: ${excerpt(post.content, 60)}`))
    })
    const deleted = yield* postline.client.posts.deletePost({ path })
    yield* (yield* Output).answer(Post, deleted, (post) => `Deleted the draft ${post.id}`)
  }).pipe(online(options))).pipe(Command.withDescription("Deletes a draft (asks first)"))

export const postsCommand = commandGroup("posts", "The team's posts: create, list, show, delete", [create, list, show, remove])
