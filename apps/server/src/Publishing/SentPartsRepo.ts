import { SqlClient } from "@effect/sql"
import type { PostId, SocialAccountId } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import type { PartReference, Published } from "../Providers/SocialProvider.js"

/** A part recorded as sent to an account: published (with what replying to it needs), or a first comment that failed. */
export interface SentPart {
  readonly position: number
  readonly status: "published" | "failed"
  readonly externalId: string | null
  readonly url: string | null
  readonly reference: string | null
}

/** The reference of a part that was published. */
export const referenceOf = (part: SentPart): PartReference => ({ externalId: part.externalId!, reference: part.reference })

/**
 * Each part of a post that went out to an account, written as soon as its provider took it (outside any
 * transaction), so that a send taken up again goes on after the last part that went out. The first record of a
 * part stands: a part is sent under one provider key, which makes any repeat the same post.
 */
export class SentPartsRepo extends Effect.Service<SentPartsRepo>()("SentPartsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const sentParts = (postId: PostId, socialAccountId: SocialAccountId) =>
      sql<SentPart>`SELECT position, status, external_id AS "externalId", url, reference FROM post_target_parts
        WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} ORDER BY position`.pipe(
        Effect.map((rows) => new Map(rows.map((row) => [row.position, row]))),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    const recordPublished = (postId: PostId, socialAccountId: SocialAccountId, position: number, published: Published) =>
      sql`INSERT INTO post_target_parts (post_id, social_account_id, position, status, external_id, url, reference)
        VALUES (${postId}, ${socialAccountId}, ${position}, 'published', ${published.externalId}, ${published.url},
          ${published.reference ?? null})
        ON CONFLICT DO NOTHING`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    /** A first comment the provider refused: the post stands, and says so. */
    const recordFailedComment = (postId: PostId, socialAccountId: SocialAccountId, message: string) =>
      sql`INSERT INTO post_target_parts (post_id, social_account_id, position, status, error_message)
        VALUES (${postId}, ${socialAccountId}, 0, 'failed', ${message})
        ON CONFLICT DO NOTHING`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    return { sentParts, recordPublished, recordFailedComment } as const
  })
}) {}
