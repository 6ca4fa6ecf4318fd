import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Each team's posting slots (weekly wall-clock times in its timezone), and
 * the tracked links of posts: one code per post and distinct URL, and the
 * clicks it has had.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE posting_slots (
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      weekday smallint NOT NULL CHECK (weekday BETWEEN 1 AND 7),
      time_of_day time(0) NOT NULL CHECK (extract(second FROM time_of_day) = 0),
      PRIMARY KEY (team_id, weekday, time_of_day)
    )`
  yield* sql`
    CREATE TABLE post_links (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      code text NOT NULL UNIQUE,
      url text NOT NULL,
      clicks bigint NOT NULL DEFAULT 0,
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  // A URL may be longer than an index entry can be: its digest keeps it one code per post.
  yield* sql`CREATE UNIQUE INDEX post_links_post_url ON post_links (post_id, md5(url))`
  yield* sql`CREATE INDEX post_links_post_created_at ON post_links (post_id, created_at, id)`
})
