import {
  BadRequest,
  Caller,
  Conflict,
  type CreatePost,
  CurrentCaller,
  NotFound,
  type Post,
  type PostId,
  type PostListQuery,
  type PostPart,
  type PostPartInput,
  type PublishAttemptListQuery,
  type SocialAccountId,
  type TeamId,
  type UpdatePost
} from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { assetNotFound } from "../Assets/Service.js"
import { PostsPolicy } from "./Policy.js"
import { PostBodyRepo } from "./BodyRepo.js"
import { type Author, PostsRepo } from "./Repo.js"

export const postNotFound = (id: PostId) => new NotFound({ message: `Post ${id} not found` })

export const accountNotFound = (id: SocialAccountId) => new NotFound({ message: `Social account ${id} not found` })

const notADraft = (id: PostId) =>
  new Conflict({ message: `Post ${id} has been sent: only a draft can be changed or deleted`, reason: "post_not_draft" })

type PostMedia = NonNullable<CreatePost["media"]>

const mediaOf = (media: PostMedia) => media.map((medium) => ({ assetId: medium.assetId, altText: medium.altText ?? null }))

const partOf = (part: PostPartInput): PostPart => ({ content: part.content, media: mediaOf(part.media ?? []) })

const authorOf = Caller.$match({
  User: ({ user }): Author => ({ userId: user.id }),
  ApiKey: ({ apiKeyId }): Author => ({ apiKeyId })
})

/** A team's posts and their drafts, for the current caller. */
export class Posts extends Effect.Service<Posts>()("Posts", {
  effect: Effect.gen(function*() {
    const repo = yield* PostsRepo
    const bodies = yield* PostBodyRepo
    const accounts = yield* SocialAccountsRepo
    const policy = yield* PostsPolicy
    const cursors = yield* Cursors

    const list = (teamId: TeamId, { socialAccountId, status, ...query }: PostListQuery) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.flatMap(
          pageRequest({
            resource: "posts",
            filters: { teamId, ...(status ? { status } : {}), ...(socialAccountId ? { socialAccountId } : {}) }
          }, query),
          (request) =>
            repo.list(teamId, { ...(status ? { status } : {}), ...(socialAccountId ? { socialAccountId } : {}) }, request)
        )).pipe(Effect.provideService(Cursors, cursors))

    const get = (teamId: TeamId, id: PostId) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.flatMap(repo.find(teamId, id), Option.match({ onNone: () => postNotFound(id), onSome: Effect.succeed })))

    /** Every id must be an account of the team: 404 naming the first that is not. */
    const requireAccounts = (teamId: TeamId, ids: ReadonlyArray<SocialAccountId>) =>
      Effect.flatMap(accounts.idsOfTeam(teamId, ids), (found) => {
        const missing = ids.find((id) => !found.has(id))
        return missing === undefined ? Effect.void : accountNotFound(missing)
      })

    /** Every asset must be the team's (404 naming the first that is not), and each given once (400). */
    const requireAssets = (teamId: TeamId, media: PostMedia) =>
      Effect.gen(function*() {
        const ids = media.map((medium) => medium.assetId)
        const repeated = ids.find((id, index) => ids.indexOf(id) !== index)
        if (repeated !== undefined) {
          return yield* new BadRequest({ message: `Asset ${repeated} is given more than once in media`, reason: "duplicate_media" })
        }
        const found = yield* repo.holdAssets(teamId, ids)
        const missing = ids.find((id) => !found.has(id))
        if (missing !== undefined) return yield* assetNotFound(missing)
      })

    /** Every medium of the body, its parts and versions included: each part's own list is checked by `requireAssets`. */
    const mediaLists = (body: UpdatePost): ReadonlyArray<PostMedia> => [
      ...(body.media ? [body.media] : []),
      ...(body.thread ?? []).flatMap((part) => part.media ? [part.media] : []),
      ...(body.firstComment?.media ? [body.firstComment.media] : []),
      ...(body.versions ?? []).flatMap((version) => [
        ...(version.media ? [version.media] : []),
        ...(version.thread ?? []).flatMap((part) => part.media ? [part.media] : [])
      ])
    ]

    /** The accounts and assets a body names must be the team's. */
    const requireBody = (teamId: TeamId, body: UpdatePost) =>
      Effect.gen(function*() {
        const accountIds = [...(body.socialAccountIds ?? []), ...(body.versions ?? []).map((version) => version.socialAccountId)]
        if (accountIds.length > 0) yield* requireAccounts(teamId, [...new Set(accountIds)])
        for (const media of mediaLists(body)) yield* requireAssets(teamId, media)
      })

    /** Saves what the body gives beyond the post's row, and answers the post as saved. */
    const withBody = (teamId: TeamId, post: Post, body: UpdatePost) =>
      Effect.gen(function*() {
        if (body.media !== undefined) yield* repo.setMedia(teamId, post.id, body.media)
        if (body.thread !== undefined) yield* bodies.setThread(teamId, post.id, body.thread)
        if (body.firstComment !== undefined) yield* bodies.setFirstComment(teamId, post.id, body.firstComment)
        if (body.versions !== undefined) yield* bodies.setVersions(teamId, post.id, body.versions)
        // The row's own answer was read before the rest was saved: the rest is as given.
        return {
          ...post,
          ...(body.media !== undefined ? { media: mediaOf(body.media) } : {}),
          ...(body.thread !== undefined ? { thread: body.thread.map(partOf) } : {}),
          ...(body.firstComment !== undefined ? { firstComment: body.firstComment && partOf(body.firstComment) } : {}),
          ...(body.versions !== undefined
            ? {
              versions: [...body.versions].sort((a, b) => a.socialAccountId < b.socialAccountId ? -1 : 1).map((version) => ({
                socialAccountId: version.socialAccountId,
                content: version.content ?? null,
                media: version.media ? mediaOf(version.media) : null,
                thread: version.thread ? version.thread.map(partOf) : null
              }))
            }
            : {})
        } satisfies Post
      })

    const create = (teamId: TeamId, draft: CreatePost) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          const { content, linkTracking = null, socialAccountIds = [] } = draft
          yield* requireBody(teamId, draft)
          const post = yield* repo.insert(teamId, authorOf(yield* CurrentCaller), { content, socialAccountIds, linkTracking })
          return yield* withBody(teamId, post, draft)
        })).pipe(transactionally)

    /** A change of a draft; `change` answers none when the post is missing or no longer a draft. */
    const ofDraft = <A, E, R>(teamId: TeamId, id: PostId, change: Effect.Effect<Option.Option<A>, E, R>) =>
      Effect.flatMap(change, Option.match({
        onSome: Effect.succeed,
        // Only on refusal: whether the post is missing or sent.
        onNone: () =>
          authorize(policy.canRead(teamId))(() =>
            Effect.flatMap(repo.find(teamId, id), (post) => Effect.fail(Option.isNone(post) ? postNotFound(id) : notADraft(id))))
      }))

    const update = (teamId: TeamId, id: PostId, changes: UpdatePost) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          yield* requireBody(teamId, changes)
          const post = yield* ofDraft(teamId, id, repo.updateDraft(teamId, id, changes))
          return yield* withBody(teamId, post, changes)
        })).pipe(transactionally)

    const remove = (teamId: TeamId, id: PostId) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() => ofDraft(teamId, id, repo.deleteDraft(teamId, id)))
        .pipe(transactionally)

    /** A post's publish attempts, for whoever may read the post: 404 for a post the team does not have. */
    const attempts = (teamId: TeamId, postId: PostId, { socialAccountId, ...query }: PublishAttemptListQuery) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.gen(function*() {
          if (!(yield* repo.exists(teamId, postId))) return yield* postNotFound(postId)
          const request = yield* pageRequest({
            resource: "publish attempts",
            filters: { teamId, postId, ...(socialAccountId ? { socialAccountId } : {}) }
          }, query)
          return yield* repo.attempts(postId, socialAccountId, request)
        })).pipe(Effect.provideService(Cursors, cursors))

    return { list, get, create, update, remove, attempts } as const
  }),
  dependencies: [PostsRepo.Default, PostBodyRepo.Default, SocialAccountsRepo.Default, PostsPolicy.Default, Cursors.Default]
}) {}
