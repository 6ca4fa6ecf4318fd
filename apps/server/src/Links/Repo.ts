import { SqlClient } from "@effect/sql"
import type { PostId, PostLink, TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate } from "../Pagination/Keyset.js"
import { PlanDefaults } from "../Teams/PlanDefaults.js"
import { newCode } from "./Detection.js"
import { LinkSettings } from "./Settings.js"

// A code is 96 random bits: a clash is all but impossible, and is simply drawn again.
const codeRounds = 3

export class LinksRepo extends Effect.Service<LinksRepo>()("LinksRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const planDefaults = yield* PlanDefaults
    const { base } = yield* LinkSettings

    // The exact JSON form of PostLink: rows are sent as they come.
    const columns = selectFields<PostLink>(sql, {
      code: "l.code",
      url: "l.url",
      shortUrl: base === null ? "NULL::text" : sql`${`${base}/l/`} || l.code`,
      clicks: "l.clicks::float8",
      createdAt: isoUtc("l.created_at")
    })

    /** Whether a post of the team with this choice has its links tracked: its own choice, else the team's, else the plan's. */
    const tracked = (teamId: TeamId, linkTracking: boolean | null) =>
      sql<{ readonly tracked: boolean }>`SELECT coalesce(${linkTracking}::boolean, t.link_tracking_override,
          ${planDefaults.linkTracking}) AS tracked
        FROM teams t WHERE t.id = ${teamId}`.pipe(
        Effect.map(([row]) => row?.tracked ?? false),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /**
     * The post's code for each URL, made the first time the post is published with it and the same on every
     * publish after (a retry, or a scheduled run again after a crash).
     */
    const codesFor = (postId: PostId, urls: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const wanted = JSON.stringify(urls)
        for (let round = 0; round < codeRounds; round++) {
          const fresh = JSON.stringify(urls.map((url) => ({ url, code: newCode() })))
          yield* sql`INSERT INTO post_links (post_id, url, code)
            SELECT ${postId}, l.url, l.code FROM jsonb_to_recordset(${fresh}::jsonb) AS l (url text, code text)
            ON CONFLICT DO NOTHING`
          const rows = yield* sql<{ readonly url: string; readonly code: string }>`SELECT url, code FROM post_links
            WHERE post_id = ${postId} AND md5(url) IN (SELECT md5(value) FROM jsonb_array_elements_text(${wanted}::jsonb))`
          const codes = new Map(rows.map((row) => [row.url, row.code]))
          if (urls.every((url) => codes.has(url))) return codes as ReadonlyMap<string, string>
        }
        return yield* Effect.dieMessage(`No unique link codes for post ${postId} after ${codeRounds} rounds`)
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** Counts a click on the code and answers where it leads; none for an unknown code. One statement. */
    const follow = (code: string) =>
      sql<{ readonly url: string }>`UPDATE post_links SET clicks = clicks + 1 WHERE code = ${code} RETURNING url`.pipe(
        Effect.map(([row]) => Option.fromNullable(row?.url)),
        Effect.orDie,
        policyRequire("Link", "follow")
      )

    const postExists = (teamId: TeamId, postId: PostId) =>
      sql`SELECT 1 FROM posts WHERE team_id = ${teamId} AND id = ${postId}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        policyRequire("Post", "read")
      )

    // The tie-breaking id is not part of the contract's PostLink: it comes out beside it, and is dropped.
    const list = (postId: PostId, request: PageRequest<"createdAt">) =>
      paginate<PostLink & { readonly id: string }, "createdAt">({
        sql,
        request,
        columns: { createdAt: "l.created_at", id: "l.id" },
        idOf: (link) => link.id,
        select: sql`${columns}, l.id AS id`,
        rowsFrom: sql`FROM post_links l WHERE l.post_id = ${postId}`
      }).pipe(
        Effect.map((page) => ({ ...page, data: page.data.map(({ id: _id, ...link }): PostLink => link) })),
        Effect.orDie,
        policyRequire("Post", "read")
      )

    return { tracked, codesFor, follow, postExists, list } as const
  }),
  dependencies: [PlanDefaults.Default, LinkSettings.Default]
}) {}
