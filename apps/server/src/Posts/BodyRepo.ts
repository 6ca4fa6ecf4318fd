import { SqlClient } from "@effect/sql"
import type { PostId, PostMediumInput, PostPartInput, PostVersionInput, SocialAccountId, TeamId } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import type { PostMediumFacts } from "./Repo.js"

/** The post's own body; a version's parts are under its account's id. */
const ownBody = ""

/** Position 0 holds the first comment, 1 a version's first part, 2 and on a thread's further parts. */
const firstCommentPosition = 0

/** One part of what an account gets: its position (1 for the first part, 0 for the first comment), text and media. */
export interface BodyPart {
  readonly position: number
  readonly content: string
  readonly media: ReadonlyArray<PostMediumFacts>
}

/** What one account gets of a post: its parts in order, the first being the post, and its first comment. */
export interface AccountBody {
  readonly parts: ReadonlyArray<BodyPart>
  readonly firstComment: BodyPart | null
}

/** A post's thread, first comment and versions: what it is made of beyond its first text and media. */
export class PostBodyRepo extends Effect.Service<PostBodyRepo>()("PostBodyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertPart = (
      teamId: TeamId,
      postId: PostId,
      version: string,
      position: number,
      part: { readonly content?: string | undefined; readonly media?: ReadonlyArray<PostMediumInput> | undefined }
    ) =>
      Effect.gen(function*() {
        if (part.content !== undefined) {
          yield* sql`INSERT INTO post_parts (post_id, version, position, content)
            VALUES (${postId}, ${version}, ${position}, ${part.content})`
        }
        const media = part.media ?? []
        if (media.length === 0) return
        const rows = JSON.stringify(media.map((medium, index) => ({
          position: index + 1,
          asset_id: medium.assetId,
          alt_text: medium.altText ?? null
        })))
        yield* sql`INSERT INTO post_part_media (post_id, version, part, position, team_id, asset_id, alt_text)
          SELECT ${postId}, ${version}, ${position}, m.position, ${teamId}, m.asset_id, m.alt_text
          FROM jsonb_to_recordset(${rows}::jsonb) AS m (position smallint, asset_id uuid, alt_text text)`
      })

    const deleteParts = (postId: PostId, version: string, positions: "thread" | "firstComment" | "all") => {
      const which = positions === "thread"
        ? sql`position >= 2`
        : positions === "firstComment"
        ? sql`position = ${firstCommentPosition}`
        : sql`TRUE`
      const whichMedia = positions === "thread"
        ? sql`part >= 2`
        : positions === "firstComment"
        ? sql`part = ${firstCommentPosition}`
        : sql`TRUE`
      return Effect.zipRight(
        sql`DELETE FROM post_parts WHERE post_id = ${postId} AND version = ${version} AND ${which}`,
        sql`DELETE FROM post_part_media WHERE post_id = ${postId} AND version = ${version} AND ${whichMedia}`
      )
    }

    const insertThread = (teamId: TeamId, postId: PostId, version: string, thread: ReadonlyArray<PostPartInput>) =>
      Effect.forEach(thread, (part, index) => insertPart(teamId, postId, version, index + 2, part), { discard: true })

    /** Replaces the post's own thread with these parts (after its first). */
    const setThread = (teamId: TeamId, postId: PostId, thread: ReadonlyArray<PostPartInput>) =>
      Effect.zipRight(deleteParts(postId, ownBody, "thread"), insertThread(teamId, postId, ownBody, thread)).pipe(
        Effect.orDie,
        policyRequire("Post", "write")
      )

    const setFirstComment = (teamId: TeamId, postId: PostId, comment: PostPartInput | null) =>
      Effect.zipRight(
        deleteParts(postId, ownBody, "firstComment"),
        comment === null ? Effect.void : insertPart(teamId, postId, ownBody, firstCommentPosition, comment)
      ).pipe(Effect.orDie, policyRequire("Post", "write"))

    /** Replaces the post's versions, all of them, with these. */
    const setVersions = (teamId: TeamId, postId: PostId, versions: ReadonlyArray<PostVersionInput>) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM post_versions WHERE post_id = ${postId}`
        yield* sql`DELETE FROM post_parts WHERE post_id = ${postId} AND version <> ${ownBody}`
        yield* sql`DELETE FROM post_part_media WHERE post_id = ${postId} AND version <> ${ownBody}`
        for (const version of versions) {
          yield* sql`INSERT INTO post_versions (post_id, social_account_id, replaces_content, replaces_media, replaces_thread)
            VALUES (${postId}, ${version.socialAccountId}, ${version.content !== undefined}, ${version.media !== undefined},
              ${version.thread !== undefined})`
          yield* insertPart(teamId, postId, version.socialAccountId, 1, version)
          yield* insertThread(teamId, postId, version.socialAccountId, version.thread ?? [])
        }
      }).pipe(Effect.orDie, policyRequire("Post", "write"))

    /**
     * What each of these accounts gets of the post whose first text is `content`: its version where it has one,
     * else the post's own body. With `lock`, each asset is kept from being deleted until the transaction ends.
     */
    const bodiesFor = (
      postId: PostId,
      content: string,
      accountIds: ReadonlyArray<SocialAccountId>,
      options: { readonly lock: boolean }
    ) =>
      Effect.gen(function*() {
        const parts = yield* sql<{ readonly version: string; readonly position: number; readonly content: string }>`
          SELECT version, position, content FROM post_parts WHERE post_id = ${postId} ORDER BY position`
        const media = yield* sql<PostMediumFacts & { readonly version: string; readonly part: number }>`
          SELECT m.version, m.part, a.id AS "assetId", a.team_id AS "teamId", a.kind, a.content_type AS "contentType",
            a.size::float8 AS size, a.width, a.height, coalesce(m.alt_text, a.alt_text) AS "altText",
            a.stored_sha256 AS sha256, a.storage_key AS "storageKey"
          FROM (SELECT '' AS version, 1 AS part, position, asset_id, alt_text FROM post_media WHERE post_id = ${postId}
            UNION ALL SELECT version, part, position, asset_id, alt_text FROM post_part_media WHERE post_id = ${postId}) m
            JOIN assets a ON a.id = m.asset_id
          ORDER BY m.position ${sql.literal(options.lock ? "FOR KEY SHARE OF a" : "")}`
        const versions = yield* sql<{
          readonly socialAccountId: SocialAccountId
          readonly replacesContent: boolean
          readonly replacesMedia: boolean
          readonly replacesThread: boolean
        }>`SELECT social_account_id AS "socialAccountId", replaces_content AS "replacesContent",
            replaces_media AS "replacesMedia", replaces_thread AS "replacesThread"
          FROM post_versions WHERE post_id = ${postId}`
        const mediaOf = (version: string, part: number) =>
          media.filter((medium) => medium.version === version && medium.part === part)
            .map(({ part: _part, version: _version, ...facts }) => facts)
        const partsOf = (version: string) =>
          parts.filter((part) => part.version === version && part.position >= 2)
            .map((part) => ({ position: part.position, content: part.content, media: mediaOf(version, part.position) }))
        const comment = parts.find((part) => part.version === ownBody && part.position === firstCommentPosition)
        const firstComment = comment === undefined ? null : { ...comment, media: mediaOf(ownBody, firstCommentPosition) }
        return new Map(accountIds.map((accountId): [SocialAccountId, AccountBody] => {
          const version = versions.find((candidate) => candidate.socialAccountId === accountId)
          const own = version === undefined ? undefined : (accountId as string)
          const first: BodyPart = {
            position: 1,
            content: version?.replacesContent
              ? parts.find((part) => part.version === own && part.position === 1)!.content
              : content,
            media: mediaOf(version?.replacesMedia ? own! : ownBody, 1)
          }
          return [accountId, { parts: [first, ...partsOf(version?.replacesThread ? own! : ownBody)], firstComment }]
        }))
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    return { setThread, setFirstComment, setVersions, bodiesFor } as const
  })
}) {}
