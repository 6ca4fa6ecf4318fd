import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A post's body beyond its first text and media: the further parts of a thread, a first comment, and versions
 * for single accounts; what each part became on each account; and taking a published post down again.
 *
 * - `post_parts`: `version` is '' for the post's own body, else the id of the account whose version it is.
 *   Position 0 is the first comment (the post's own only), 1 a version's first part (the post's own first part
 *   is `posts.content` with `post_media`), 2 and on the thread's further parts; `post_part_media` holds their media.
 * - `post_versions`: which of the post's text, media and thread a version replaces; what it leaves is the post's.
 * - `post_target_parts`: each part sent to an account, recorded as soon as the provider took it, so that a
 *   send taken up again (a retry, the recovery after a crash) goes on after the last part that went out. What
 *   was published before threads is its first part.
 * - A target can be deleting (its delete under way) and deleted; a post whose published targets are all taken
 *   down is deleted, and its organization's event webhook told (post.deleted). An attempt is a publish or a delete.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE post_parts (
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      version text NOT NULL DEFAULT '',
      position smallint NOT NULL CHECK (position >= 0),
      content text NOT NULL,
      PRIMARY KEY (post_id, version, position)
    )`
  yield* sql`
    CREATE TABLE post_part_media (
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      version text NOT NULL DEFAULT '',
      part smallint NOT NULL,
      position smallint NOT NULL,
      team_id uuid NOT NULL,
      asset_id uuid NOT NULL,
      alt_text text,
      PRIMARY KEY (post_id, version, part, position),
      FOREIGN KEY (team_id, asset_id) REFERENCES assets (team_id, id) ON DELETE CASCADE
    )`
  yield* sql`CREATE INDEX post_part_media_asset ON post_part_media (asset_id)`
  yield* sql`
    CREATE TABLE post_versions (
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      social_account_id uuid NOT NULL,
      replaces_content boolean NOT NULL,
      replaces_media boolean NOT NULL,
      replaces_thread boolean NOT NULL,
      PRIMARY KEY (post_id, social_account_id)
    )`
  yield* sql`
    CREATE TABLE post_target_parts (
      post_id uuid NOT NULL,
      social_account_id uuid NOT NULL,
      position smallint NOT NULL CHECK (position >= 0),
      status text NOT NULL CHECK (status IN ('published', 'failed')),
      external_id text,
      url text,
      reference text,
      error_message text,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      PRIMARY KEY (post_id, social_account_id, position),
      FOREIGN KEY (post_id, social_account_id) REFERENCES post_targets ON DELETE CASCADE
    )`
  yield* sql`INSERT INTO post_target_parts (post_id, social_account_id, position, status, external_id, url, created_at)
    SELECT post_id, social_account_id, 1, 'published', external_id, url, coalesce(published_at, updated_at)
    FROM post_targets WHERE status = 'published'`
  yield* sql`ALTER TABLE post_targets DROP CONSTRAINT post_targets_status_check`
  yield* sql`ALTER TABLE post_targets ADD CONSTRAINT post_targets_status_check
    CHECK (status IN ('pending', 'published', 'failed', 'deleting', 'deleted'))`
  yield* sql`ALTER TABLE post_targets ADD COLUMN deleted_at timestamptz(3)`
  yield* sql`ALTER TABLE posts DROP CONSTRAINT posts_status_check`
  yield* sql`ALTER TABLE posts ADD CONSTRAINT posts_status_check
    CHECK (status IN ('draft', 'scheduled', 'publishing', 'published', 'partially_published', 'failed', 'deleted'))`
  yield* sql`ALTER TABLE publish_attempts ADD COLUMN kind text NOT NULL DEFAULT 'publish'
    CHECK (kind IN ('publish', 'delete'))`
  yield* sql`ALTER TABLE event_deliveries DROP CONSTRAINT event_deliveries_type_check`
  yield* sql`ALTER TABLE event_deliveries ADD CONSTRAINT event_deliveries_type_check
    CHECK (type IN ('post.published', 'post.failed', 'post.deleted'))`
  yield* sql`ALTER TABLE publish_attempts DROP CONSTRAINT publish_attempts_result_check`
  yield* sql`ALTER TABLE publish_attempts ADD CONSTRAINT publish_attempts_result_check
    CHECK (result IN ('published', 'failed', 'unknown', 'deleted'))`
})
