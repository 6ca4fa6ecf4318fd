import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What became of publishing, visible from outside. Each attempt gets an id of its own (the attempts are listed,
 * and pages of them are cut by `(started_at, id)`), the provider it was made to (kept when the account is
 * removed) and a summary of the provider's answer, at most 500 characters. An organization may set one URL of
 * its own (`event_webhooks`, its signing secret encrypted like an account's credentials) that is told of each
 * target's end: the events wait in `event_deliveries`, written in the statement that ends the target, until a
 * server process delivers them (deleted then, or once given up on).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE publish_attempts ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid()`
  yield* sql`CREATE UNIQUE INDEX publish_attempts_id ON publish_attempts (id)`
  yield* sql`ALTER TABLE publish_attempts ADD COLUMN provider text`
  yield* sql`ALTER TABLE publish_attempts ADD COLUMN summary text CHECK (char_length(summary) <= 500)`
  yield* sql`CREATE INDEX publish_attempts_post_started ON publish_attempts (post_id, started_at, id)`
  // Attempts made before: their provider, while the account is there, and what was recorded of the answer.
  yield* sql`UPDATE publish_attempts a SET provider = sa.provider FROM social_accounts sa WHERE sa.id = a.social_account_id`
  yield* sql`UPDATE publish_attempts SET summary = left(CASE WHEN result = 'published'
      THEN 'Published' || coalesce(' as ' || external_id, '') ELSE error_message END, 500)
    WHERE finished_at IS NOT NULL`

  yield* sql`
    CREATE TABLE event_webhooks (
      organization_id uuid PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      url text NOT NULL,
      secret text NOT NULL,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now(),
      secret_created_at timestamptz(3) NOT NULL DEFAULT now(),
      last_delivered_at timestamptz(3),
      last_error text,
      last_error_at timestamptz(3)
    )`
  yield* sql`
    CREATE TABLE event_deliveries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES event_webhooks (organization_id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type IN ('post.published', 'post.failed')),
      data jsonb NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      due_at timestamptz(3) NOT NULL DEFAULT now(),
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX event_deliveries_due ON event_deliveries (due_at)`
  yield* sql`CREATE INDEX event_deliveries_organization ON event_deliveries (organization_id)`
})
