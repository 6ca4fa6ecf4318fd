// S8, posts due at one instant: the webhook receiver the senders call, and the figures of a run.
import { createServer } from "node:http"
import { percentile } from "./load.mjs"

/**
 * A webhook receiver on loopback that answers 204 as soon as a request's body is in, and records each
 * delivery: its `webhook-id` header, the post (`data.postId` of the JSON body) and when its headers came.
 * `take()` hands over the deliveries so far and starts a new list.
 */
export const startReceiver = async () => {
  let deliveries = []
  const ids = new Set()
  const server = createServer((request, response) => {
    const at = Date.now()
    const chunks = []
    request.on("data", (chunk) => chunks.push(chunk))
    request.on("end", () => {
      response.writeHead(204).end()
      const id = request.headers["webhook-id"]
      deliveries.push({ id, postId: JSON.parse(Buffer.concat(chunks).toString("utf8")).data.postId, at })
      ids.add(id)
    })
  })
  await new Promise((listening) => server.listen(0, "127.0.0.1", listening))
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    /** How many distinct webhook-ids came since the last take(). */
    distinct: () => ids.size,
    take: () => {
      const taken = deliveries
      deliveries = []
      ids.clear()
      return taken
    },
    close: () => new Promise((closed) => server.close(closed))
  }
}

/**
 * A run's figures from its deliveries: `webhookIds` and `posts` (distinct), `deliveries` (all) and `duplicates`
 * (deliveries of a webhook-id already seen); lateness, each webhook-id's first arrival after `dueAt`; and
 * `sendsPerSec`, the distinct webhook-ids over the time from the first arrival to the last.
 */
export const summariseBurst = (deliveries, dueAt) => {
  const first = new Map()
  for (const delivery of deliveries) if (!first.has(delivery.id)) first.set(delivery.id, delivery.at)
  const arrivals = Float64Array.from(first.values()).sort()
  const lateness = arrivals.map((at) => at - dueAt)
  const spanSec = (arrivals.at(-1) - arrivals[0]) / 1000
  return {
    webhookIds: first.size,
    posts: new Set(deliveries.map((delivery) => delivery.postId)).size,
    deliveries: deliveries.length,
    duplicates: deliveries.length - first.size,
    latenessMs: { p50: percentile(lateness, 0.5), p99: percentile(lateness, 0.99), max: lateness.at(-1) ?? NaN },
    sendsPerSec: spanSec > 0 ? first.size / spanSec : NaN
  }
}
