// The reference for S8 (bench/README.md): what sending a burst of due webhooks costs with `pg` and node:crypto
// alone, no Effect. Rows of `sends` due by now are claimed in batches (SELECT … FOR UPDATE SKIP LOCKED, marked
// claimed in the same transaction), each is POSTed to WEBHOOK_URL with a Standard Webhooks signature as the
// server's webhook provider sends it (apps/server/src/Providers/Webhook.ts), and marked sent. Several processes
// may share one database; each keeps SEND_CONCURRENCY sends under way and looks again every POLL_MS when
// nothing is due. The runner makes the table (createSends) and its rows (addSends).
//
// Env: DATABASE_URL, WEBHOOK_URL, WEBHOOK_SECRET (whsec_…), SEND_CONCURRENCY, POLL_MS, and PORT (and HOST) for
// the runner's GET /health.
import { createHash, createHmac, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { setTimeout as sleep } from "node:timers/promises"
import { pathToFileURL } from "node:url"
import pg from "pg"

/** `query(text, values)` runs a statement on the database. */
export const createSends = (query) =>
  query(`CREATE TABLE sends (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    post_id uuid NOT NULL,
    social_account_id uuid NOT NULL,
    text text NOT NULL,
    due_at timestamptz NOT NULL,
    claimed_at timestamptz,
    sent_at timestamptz
  );
  CREATE INDEX sends_due ON sends (due_at) WHERE claimed_at IS NULL`)

/** `n` sends to one account, each of a post of its own, all due at `dueAt` (ms since the epoch). */
export const addSends = (query, n, dueAt) =>
  query(
    `INSERT INTO sends (post_id, social_account_id, text, due_at)
     SELECT gen_random_uuid(), $3, 'Scheduled ' || g, to_timestamp($2::float8 / 1000) FROM generate_series(1, $1::int) g`,
    [n, dueAt, randomUUID()]
  )

const run = () => {
  const concurrency = Number(process.env.SEND_CONCURRENCY)
  const pollMs = Number(process.env.POLL_MS)
  const url = process.env.WEBHOOK_URL
  const secret = Buffer.from(process.env.WEBHOOK_SECRET.replace(/^whsec_/, ""), "base64")
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: concurrency + 1 })

  /** Up to `concurrency` due rows, marked claimed, so that no other process takes them. */
  const claim = async () => {
    const client = await pool.connect()
    try {
      await client.query("BEGIN")
      const { rows } = await client.query(
        `SELECT id, post_id, social_account_id, text FROM sends WHERE claimed_at IS NULL AND due_at <= now()
         ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [concurrency]
      )
      if (rows.length) await client.query("UPDATE sends SET claimed_at = now() WHERE id = ANY($1)", [rows.map((row) => row.id)])
      await client.query("COMMIT")
      return rows
    } catch (error) {
      await client.query("ROLLBACK")
      throw error
    } finally {
      client.release()
    }
  }

  /** The server's webhook call: the same body, message id and signature scheme. */
  const send = async (row) => {
    const now = new Date()
    const id = `msg_${createHash("sha256").update(row.id).digest("base64url").slice(0, 27)}`
    const timestamp = String(Math.floor(now.getTime() / 1000))
    const body = JSON.stringify({
      type: "post.published",
      timestamp: now.toISOString(),
      data: { postId: row.post_id, socialAccountId: row.social_account_id, text: row.text, idempotencyKey: row.id }
    })
    const signature = `v1,${createHmac("sha256", secret).update(`${id}.${timestamp}.${body}`).digest("base64")}`
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signature },
      body
    })
    await response.arrayBuffer()
    if (!response.ok) throw new Error(`the receiver answered ${response.status}`)
    await pool.query("UPDATE sends SET sent_at = now() WHERE id = $1", [row.id])
  }

  // One claim at a time fills the queue that every sender takes from; when nothing was due, they wait pollMs.
  const queue = []
  let claiming
  const next = async () => {
    while (queue.length === 0) {
      claiming ??= claim().then((rows) => {
        queue.push(...rows)
        return rows.length
      }).finally(() => (claiming = undefined))
      if ((await claiming) === 0) await sleep(pollMs)
    }
    return queue.shift()
  }
  for (let i = 0; i < concurrency; i++) {
    void (async () => {
      for (;;) {
        const row = await next()
        // A failed send stays claimed: the runner counts it as not published.
        await send(row).catch((error) => console.error(`send ${row.id}: ${error.message}`))
      }
    })()
  }
  createServer((request, response) => response.writeHead(request.url === "/health" ? 200 : 404).end())
    .listen(Number(process.env.PORT), process.env.HOST ?? "127.0.0.1")
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) run()
