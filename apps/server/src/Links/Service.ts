import { NotFound, type PostId, type PostLinkListQuery, type TeamId } from "@postline/domain"
import { Effect } from "effect"
import { authorize } from "../Access/Authorization.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { postNotFound } from "../Posts/Service.js"
import { codeLength, findLinks, replaceLinks } from "./Detection.js"
import { LinksPolicy } from "./Policy.js"
import { LinksRepo } from "./Repo.js"
import { LinkSettings } from "./Settings.js"

/** A post as link tracking needs it: its own choice, null to follow its team's linkTrackingDefault. */
export interface TrackedPost {
  readonly id: PostId
  readonly teamId: TeamId
  readonly content: string
  readonly linkTracking: boolean | null
}

export const linkNotFound = new NotFound({ message: "No link has this code" })

/**
 * Link tracking: each http(s) link of a post whose tracking is on is sent as
 * `<PUBLIC_URL>/l/<code>`, which redirects to it and counts the click.
 */
export class Links extends Effect.Service<Links>()("Links", {
  effect: Effect.gen(function*() {
    const repo = yield* LinksRepo
    const { base } = yield* LinkSettings
    const postsPolicy = yield* PostsPolicy
    const policy = yield* LinksPolicy
    const cursors = yield* Cursors

    /**
     * The text to send for the post: its links replaced by their short links when its tracking is on (and
     * PUBLIC_URL is set), else its content as written. The codes are made the first time and reused on
     * every publish after. Runs inside the caller's publish: it needs `Authorized<"Post", "publish">`.
     */
    const linksFor = (post: TrackedPost) =>
      Effect.gen(function*() {
        const found = findLinks(post.content)
        if (base === null || found.length === 0) return post.content
        if (!(yield* repo.tracked(post.teamId, post.linkTracking))) return post.content
        const codes = yield* repo.codesFor(post.id, [...new Set(found.map((link) => link.url))])
        return replaceLinks(post.content, found, (url) => `${base}/l/${codes.get(url)}`)
      })

    /**
     * The text `linksFor` would give, for counting its length without making codes: every code has the same
     * length. `tracked`: the post's effective link tracking (its own, else its team's linkTrackingDefault).
     */
    const preview = (content: string, tracked: boolean) =>
      base === null || !tracked ? content : replaceLinks(content, findLinks(content), () => `${base}/l/${"x".repeat(codeLength)}`)

    const list = (teamId: TeamId, postId: PostId, query: PostLinkListQuery) =>
      authorize(postsPolicy.canRead(teamId))(() =>
        Effect.gen(function*() {
          if (!(yield* repo.postExists(teamId, postId))) return yield* postNotFound(postId)
          const request = yield* pageRequest({ resource: "post links", filters: { teamId, postId } }, query)
          return yield* repo.list(postId, request)
        })
      ).pipe(Effect.provideService(Cursors, cursors))

    /** Where the code leads, its click counted; none for an unknown code. */
    const follow = (code: string) => authorize(policy.canFollow)(() => repo.follow(code))

    return { linksFor, preview, list, follow } as const
  }),
  dependencies: [LinksRepo.Default, LinkSettings.Default, PostsPolicy.Default, LinksPolicy.Default, Cursors.Default]
}) {}
