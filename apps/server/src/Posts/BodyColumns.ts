// The post's body beyond its first text and media, as PostsRepo reads it (BodyRepo.ts writes it), and what its
// parts became on each account.

/** The JSON of one part's media, in order. */
const partMedia = (version: string, part: string) =>
  `coalesce((SELECT json_agg(json_build_object('assetId', m.asset_id, 'altText', m.alt_text) ORDER BY m.position)
    FROM post_part_media m WHERE m.post_id = p.id AND m.version = ${version} AND m.part = ${part}), '[]'::json)`

/** The JSON of a post's thread, first comment and versions, for `PostsRepo`'s columns (`p` is the post). */
export const bodyColumns = {
  thread: `coalesce((SELECT json_agg(json_build_object('content', pp.content, 'media', ${partMedia("''", "pp.position")})
      ORDER BY pp.position) FROM post_parts pp WHERE pp.post_id = p.id AND pp.version = '' AND pp.position >= 2), '[]'::json)`,
  firstComment: `(SELECT json_build_object('content', pp.content, 'media', ${partMedia("''", "0")})
      FROM post_parts pp WHERE pp.post_id = p.id AND pp.version = '' AND pp.position = 0)`,
  versions: `coalesce((SELECT json_agg(json_build_object(
      'socialAccountId', v.social_account_id,
      'content', CASE WHEN v.replaces_content THEN (SELECT vp.content FROM post_parts vp
        WHERE vp.post_id = p.id AND vp.version = v.social_account_id::text AND vp.position = 1) END,
      'media', CASE WHEN v.replaces_media THEN ${partMedia("v.social_account_id::text", "1")} END,
      'thread', CASE WHEN v.replaces_thread THEN coalesce((SELECT json_agg(json_build_object('content', vp.content,
          'media', ${partMedia("v.social_account_id::text", "vp.position")}) ORDER BY vp.position)
        FROM post_parts vp WHERE vp.post_id = p.id AND vp.version = v.social_account_id::text AND vp.position >= 2),
        '[]'::json) END
    ) ORDER BY v.social_account_id) FROM post_versions v WHERE v.post_id = p.id), '[]'::json)`
}

/** The JSON of what each part became on one account: the parts of the target aliased `target`, in order. */
export const targetPartsJson = (target: string) =>
  `coalesce((SELECT json_agg(json_build_object('position', tp.position, 'externalId', tp.external_id, 'url', tp.url)
      ORDER BY tp.position) FROM post_target_parts tp
    WHERE tp.post_id = ${target}.post_id AND tp.social_account_id = ${target}.social_account_id AND tp.position >= 1),
    '[]'::json)`

/** The JSON of what the first comment became on the target aliased `target`; null until it was sent. */
export const targetFirstCommentJson = (target: string) =>
  `(SELECT json_build_object('status', tp.status, 'externalId', tp.external_id, 'url', tp.url, 'error', tp.error_message)
    FROM post_target_parts tp
    WHERE tp.post_id = ${target}.post_id AND tp.social_account_id = ${target}.social_account_id AND tp.position = 0)`
