import type { PostId, SocialAccountId, TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Links } from "../Links/Service.js"
import { type AccountBody, type BodyPart, PostBodyRepo } from "../Posts/BodyRepo.js"

/** A post as its bodies are read: its first text and whether its links are tracked. */
export interface PostOfBodies {
  readonly id: PostId
  readonly teamId: TeamId
  readonly content: string
  readonly linkTracking: boolean | null
}

/** What each account gets of a post, with its texts as providers check and receive them. */
export class PublishBodies extends Effect.Service<PublishBodies>()("PublishBodies", {
  effect: Effect.gen(function*() {
    const repo = yield* PostBodyRepo
    const links = yield* Links

    /** The body with each text given its links by `track` (tracked, or as written). */
    const withLinks = <E, R>(body: AccountBody, track: (text: string) => Effect.Effect<string, E, R>) =>
      Effect.gen(function*() {
        const tracked = (part: BodyPart) => Effect.map(track(part.content), (content): BodyPart => ({ ...part, content }))
        return {
          parts: yield* Effect.forEach(body.parts, tracked),
          firstComment: body.firstComment === null ? null : yield* tracked(body.firstComment)
        } satisfies AccountBody
      })

    /**
     * What each account gets, its links tracked with the post's codes where they are: what is sent. With `lock`,
     * its assets are kept from being deleted until the transaction ends.
     */
    const bodiesOf = (post: PostOfBodies, accountIds: ReadonlyArray<SocialAccountId>, options: { readonly lock: boolean }) =>
      Effect.flatMap(repo.bodiesFor(post.id, post.content, accountIds, options), (found) =>
        Effect.forEach(accountIds, (accountId) =>
          Effect.map(
            withLinks(found.get(accountId)!, (content) => links.linksFor({ ...post, content })),
            (body) => [accountId, body] as const
          )).pipe(Effect.map((entries) => new Map(entries))))

    /** What each account would get, its links counted as tracked ones would be (`tracked`), without making codes. */
    const previewOf = (post: PostOfBodies, accountIds: ReadonlyArray<SocialAccountId>, tracked: boolean) =>
      Effect.flatMap(repo.bodiesFor(post.id, post.content, accountIds, { lock: false }), (found) =>
        Effect.forEach(accountIds, (accountId) =>
          Effect.map(
            withLinks(found.get(accountId)!, (content) => Effect.succeed(links.preview(content, tracked))),
            (body) => [accountId, body] as const
          )).pipe(Effect.map((entries) => new Map(entries))))

    return { bodiesOf, previewOf } as const
  }),
  dependencies: [PostBodyRepo.Default, Links.Default]
}) {}
