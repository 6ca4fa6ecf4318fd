import { Command, Options } from "@effect/cli"
import { AssetId, Post, PostList, PostStatus } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { accounts, decodedOption, decodedRepeatedOption, postId, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { commandGroup } from "../Group.js"
import { Output } from "../Output.js"
import { pageOptions, pageParams, pageText } from "../Pages.js"
import { online } from "../Session.js"
import { excerpt, fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"
import { bodyFields, bodyOptions, bodyPreview, clearingOptions, content } from "./PostBodies.js"
import { postText } from "./PostText.js"
import { unpublish } from "./Unpublish.js"

const media = (description: string) => decodedRepeatedOption("media", AssetId, "id", description)

const mediaPayload = (assetIds: ReadonlyArray<AssetId>) => assetIds.map((assetId) => ({ assetId }))

const create = Command.make("create", {
  ...serverOptions,
  team,
  content,
  ...bodyOptions,
  accounts: accounts("An account the post is meant for (post-now and schedule default to them); repeat it for several"),
  media: media("An asset of the team's media library to send with it, in order (postline media list); repeat it for several"),
  yes
}, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    // The command line's own mistakes first, before the server is asked anything.
    const body = yield* bodyFields(options)
    const teamId = yield* teamOf(options.team)
    yield* confirmed({
      yes: options.yes,
      action: "creating the draft",
      preview: Effect.succeed(costsNothing(
        [
          `Create a draft in team ${teamId}: ${excerpt(options.content, 60)}`,
          fields([
            ["Accounts", options.accounts.length === 0 ? "-" : options.accounts.join(", ")],
            ["Media", options.media.length === 0 ? "-" : options.media.join(", ")],
            ...bodyPreview(body)
          ])
        ].join("\n")
      ))
    })
    const post = yield* postline.client.posts.createPost({
      path: { teamId },
      payload: {
        content: options.content,
        ...(options.accounts.length > 0 ? { socialAccountIds: options.accounts } : {}),
        ...(options.media.length > 0 ? { media: mediaPayload(options.media) } : {}),
        ...body
      }
    })
    yield* (yield* Output).answer(Post, post, postText)
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "Creates a draft from --text or --file, with a thread (--part), a --first-comment and --account-version texts, or " +
        "all three from a --parts-file (asks first)"
    )
  )

const update = Command.make("update", {
  ...serverOptions,
  team,
  postId,
  content: content.pipe(Options.optional),
  ...bodyOptions,
  ...clearingOptions,
  accounts: accounts("The accounts the post is meant for, replacing its own; repeat it for several"),
  media: media("The post's media, replacing its own, in order; repeat it for several"),
  yes
}, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const body = yield* bodyFields(options)
    const payload = {
      ...Option.match(options.content, { onNone: () => ({}), onSome: (text) => ({ content: text }) }),
      ...(options.accounts.length > 0 ? { socialAccountIds: options.accounts } : {}),
      ...(options.media.length > 0 ? { media: mediaPayload(options.media) } : {}),
      ...body
    }
    if (Object.keys(payload).length === 0) {
      return yield* new UsageError({
        message: "Nothing to change: give --text or --file, --account, --media, --part, --first-comment, --account-version, " +
          "--parts-file or a --no- option (postline posts update --help)"
      })
    }
    const path = { teamId: yield* teamOf(options.team), postId: options.postId }
    yield* confirmed({
      yes: options.yes,
      action: "changing the draft",
      preview: Effect.map(postline.client.posts.getPost({ path }), (post) =>
        costsNothing([
          `Change the draft ${post.id}: ${excerpt(post.content, 60)}`,
          fields([
            ...(payload.content === undefined ? [] : [["Text", excerpt(payload.content, 60)] as const]),
            ...(payload.socialAccountIds === undefined ? [] : [["Accounts", payload.socialAccountIds.join(", ")] as const]),
            ...(payload.media === undefined ? [] : [["Media", options.media.join(", ")] as const]),
            ...bodyPreview(body)
          ])
        ].join("\n")))
    })
    const post = yield* postline.client.posts.updatePost({ path, payload })
    yield* (yield* Output).answer(Post, post, postText)
  }).pipe(online(options))).pipe(
    Command.withDescription("Changes a draft: only what is given changes, a --part, --account or --media list replacing the post's (asks first)")
  )

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

export const postsCommand = commandGroup(
  "posts",
  "The team's posts: create, update, list, show, delete, and unpublish from the networks",
  [create, update, list, show, remove, unpublish]
)
