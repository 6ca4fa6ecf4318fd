import { SqlClient } from "@effect/sql"
import type {
  ApiKeyId,
  AssetId,
  CreatePost,
  Post,
  PostId,
  PostListQuery,
  PostStatus,
  PublishAttempt,
  SocialAccountId,
  TeamId,
  UpdatePost,
  UserId
} from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate } from "../Pagination/Keyset.js"
import type { MediaFacts } from "../Providers/SocialProvider.js"
import { bodyColumns, targetFirstCommentJson, targetPartsJson } from "./BodyColumns.js"

type PostSortField = NonNullable<PostListQuery["sortBy"]>

/** A medium of a post as a provider checks and receives it. */
export interface PostMediumFacts extends MediaFacts {
  readonly assetId: AssetId
  readonly teamId: TeamId
  /** Hex SHA-256 of the stored copy; null for an image stored before such hashes were recorded. */
  readonly sha256: string | null
  readonly storageKey: string
}

type PostMediumInput = NonNullable<CreatePost["media"]>[number]

/** Who writes a post: a user, or an API key. */
export type Author = { readonly userId: UserId } | { readonly apiKeyId: ApiKeyId }

export class PostsRepo extends Effect.Service<PostsRepo>()("PostsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const uuidArray = (ids: ReadonlyArray<string>) =>
      sql`ARRAY(SELECT id::uuid FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) WITH ORDINALITY AS ids (id, n)
        ORDER BY n)`

    // The exact JSON form of Post, targets included, oldest target first: rows are sent as they come.
    const columns = selectFields<Post>(sql, {
      id: "p.id",
      teamId: "p.team_id",
      content: "p.content",
      status: "p.status",
      socialAccountIds: "to_json(p.social_account_ids)",
      targets: `coalesce((SELECT json_agg(json_build_object(
          'socialAccountId', pt.social_account_id,
          'status', pt.status,
          'externalId', pt.external_id,
          'url', pt.url,
          'publishedAt', ${isoUtc("pt.published_at")},
          'error', CASE WHEN pt.error_category IS NULL THEN NULL ELSE json_build_object(
            'category', pt.error_category, 'message', pt.error_message, 'retryable', pt.error_retryable) END,
          'creditsSpent', pt.credits_spent,
          'parts', ${targetPartsJson("pt")},
          'firstComment', ${targetFirstCommentJson("pt")},
          'deletedAt', ${isoUtc("pt.deleted_at")}
        ) ORDER BY pt.created_at, pt.social_account_id) FROM post_targets pt WHERE pt.post_id = p.id), '[]'::json)`,
      scheduledAt: isoUtc("p.scheduled_at"),
      waitingUntil: isoUtc("CASE WHEN p.status IN ('scheduled', 'publishing') THEN p.waiting_until END"),
      linkTracking: "p.link_tracking",
      media: `coalesce((SELECT json_agg(json_build_object('assetId', pm.asset_id, 'altText', pm.alt_text) ORDER BY pm.position)
        FROM post_media pm WHERE pm.post_id = p.id), '[]'::json)`,
      ...bodyColumns,
      createdBy: "json_build_object('userId', p.created_by_user_id, 'apiKeyId', p.created_by_api_key_id)",
      createdAt: isoUtc("p.created_at"),
      updatedAt: isoUtc("p.updated_at")
    })

    const list = (teamId: TeamId, filters: Pick<PostListQuery, "status" | "socialAccountId">, request: PageRequest<PostSortField>) =>
      paginate<Post, PostSortField>({
        sql,
        request,
        columns: {
          createdAt: "p.created_at",
          updatedAt: "p.updated_at",
          scheduledAt: "coalesce(p.scheduled_at, 'infinity')",
          id: "p.id"
        },
        idOf: (post) => post.id,
        sortValueOf: (post, field) => field === "scheduledAt" ? post.scheduledAt ?? "infinity" : post[field],
        select: columns,
        rowsFrom: sql`FROM posts p WHERE p.team_id = ${teamId}
          ${filters.status === undefined ? sql`` : sql`AND p.status = ${filters.status}`}
          ${
          filters.socialAccountId === undefined ? sql`` : sql`AND (${filters.socialAccountId}::uuid = ANY (p.social_account_ids)
            OR EXISTS (SELECT 1 FROM post_targets pt WHERE pt.post_id = p.id AND pt.social_account_id = ${filters.socialAccountId}))`
        }`
      }).pipe(Effect.orDie, policyRequire("Post", "read"))

    const find = (teamId: TeamId, id: PostId) =>
      sql<Post>`SELECT ${columns} FROM posts p WHERE p.team_id = ${teamId} AND p.id = ${id}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("Post", "read")
      )

    /** The post's status, content and link tracking, its row locked until the transaction ends: one publish at a time. */
    const lockForPublishing = (teamId: TeamId, id: PostId) =>
      sql<{
        readonly status: PostStatus
        readonly content: string
        readonly linkTracking: boolean | null
      }>`SELECT status, content, link_tracking AS "linkTracking" FROM posts
        WHERE team_id = ${teamId} AND id = ${id} FOR UPDATE`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    const insert = (teamId: TeamId, author: Author, draft: {
      readonly content: string
      readonly socialAccountIds: ReadonlyArray<SocialAccountId>
      readonly linkTracking: boolean | null
    }) =>
      sql<Post>`INSERT INTO posts AS p
          (team_id, content, social_account_ids, link_tracking, created_by_user_id, created_by_api_key_id)
        VALUES (${teamId}, ${draft.content}, ${uuidArray(draft.socialAccountIds)}, ${draft.linkTracking},
          ${"userId" in author ? author.userId : null}, ${"apiKeyId" in author ? author.apiKeyId : null})
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row), Effect.orDie, policyRequire("Post", "write"))

    /** Changes a draft; none when the post is not (or no longer) a draft. */
    const updateDraft = (teamId: TeamId, id: PostId, changes: UpdatePost) => {
      const assignments = [
        changes.content !== undefined ? sql`content = ${changes.content}` : undefined,
        changes.socialAccountIds !== undefined
          ? sql`social_account_ids = ${uuidArray(changes.socialAccountIds)}`
          : undefined,
        changes.linkTracking !== undefined ? sql`link_tracking = ${changes.linkTracking}` : undefined
      ].filter((fragment) => fragment !== undefined)
      return sql<Post>`UPDATE posts p SET ${sql.csv([...assignments, sql`updated_at = now()`])}
        WHERE p.team_id = ${teamId} AND p.id = ${id} AND p.status = 'draft' RETURNING ${columns}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("Post", "write")
      )
    }

    /** Deletes a draft; none when the post is not (or no longer) a draft. */
    const deleteDraft = (teamId: TeamId, id: PostId) =>
      sql<Post>`DELETE FROM posts p WHERE p.team_id = ${teamId} AND p.id = ${id} AND p.status = 'draft'
        RETURNING ${columns}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("Post", "write")
      )

    /** The ids among these that are assets of the team, each kept from being deleted until the transaction ends. */
    const holdAssets = (teamId: TeamId, ids: ReadonlyArray<string>) =>
      sql<{ readonly id: string }>`SELECT id FROM assets WHERE team_id = ${teamId}
          AND id IN (SELECT value::uuid FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)) FOR KEY SHARE`.pipe(
        Effect.map((rows) => new Set(rows.map((row) => row.id))),
        Effect.orDie,
        policyRequire("Post", "write")
      )

    /** Replaces the post's media with these, in order. */
    const setMedia = (teamId: TeamId, id: PostId, media: ReadonlyArray<PostMediumInput>) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM post_media WHERE post_id = ${id}`
        if (media.length === 0) return
        const rows = JSON.stringify(
          media.map((medium, index) => ({ position: index + 1, asset_id: medium.assetId, alt_text: medium.altText ?? null }))
        )
        yield* sql`INSERT INTO post_media (post_id, position, team_id, asset_id, alt_text)
          SELECT ${id}, m.position, ${teamId}, m.asset_id, m.alt_text
          FROM jsonb_to_recordset(${rows}::jsonb) AS m (position smallint, asset_id uuid, alt_text text)`
      }).pipe(Effect.orDie, policyRequire("Post", "write"))

    /**
     * The post's media as they are sent, in order, with the post's alt text else the asset's; with `lock`, each
     * asset kept from being deleted until the transaction ends.
     */
    const mediaFor = (postId: PostId, options: { readonly lock: boolean }) =>
      sql<PostMediumFacts>`SELECT a.id AS "assetId", a.team_id AS "teamId", a.kind, a.content_type AS "contentType",
          a.size::float8 AS size, a.width, a.height, coalesce(pm.alt_text, a.alt_text) AS "altText",
          a.stored_sha256 AS sha256, a.storage_key AS "storageKey"
        FROM post_media pm JOIN assets a ON a.id = pm.asset_id WHERE pm.post_id = ${postId} ORDER BY pm.position
        ${sql.literal(options.lock ? "FOR KEY SHARE OF a" : "")}`.pipe(Effect.orDie, policyRequire("Post", "publish"))

    // The exact JSON form of PublishAttempt.
    const attemptColumns = selectFields<PublishAttempt>(sql, {
      id: "a.id",
      socialAccountId: "a.social_account_id",
      provider: "a.provider",
      attempt: "a.attempt",
      startedAt: isoUtc("a.started_at"),
      finishedAt: isoUtc("a.finished_at"),
      kind: "a.kind",
      outcome: `CASE WHEN a.finished_at IS NULL THEN 'pending' WHEN a.result = 'unknown' THEN 'in_doubt'
        ELSE a.result END`,
      category: "CASE WHEN a.result IN ('failed', 'unknown') THEN a.error_category END",
      externalId: "a.external_id",
      summary: "a.summary"
    })

    /** Whether the team has this post. */
    const exists = (teamId: TeamId, id: PostId) =>
      sql`SELECT 1 FROM posts WHERE team_id = ${teamId} AND id = ${id}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        policyRequire("Post", "read")
      )

    /** The post's publish attempts, of one account or all, by when they started. */
    const attempts = (
      postId: PostId,
      socialAccountId: SocialAccountId | undefined,
      request: PageRequest<"createdAt">
    ) =>
      paginate<PublishAttempt, "createdAt">({
        sql,
        request,
        columns: { createdAt: "a.started_at", id: "a.id" },
        idOf: (attempt) => attempt.id,
        sortValueOf: (attempt) => attempt.startedAt,
        select: attemptColumns,
        rowsFrom: sql`FROM publish_attempts a WHERE a.post_id = ${postId}
          ${socialAccountId === undefined ? sql`` : sql`AND a.social_account_id = ${socialAccountId}`}`
      }).pipe(Effect.orDie, policyRequire("Post", "read"))

    return { list, find, exists, attempts, lockForPublishing, insert, updateDraft, deleteDraft, holdAssets, setMedia, mediaFor, columns } as const
  })
}) {}
