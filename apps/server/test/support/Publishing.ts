import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Webhook as StandardWebhook } from "standardwebhooks"
import { makeLocalReceiver } from "./LocalServer.js"
import { raw, signUp } from "./TestServer.js"
import { inSeconds } from "./Waiting.js"

/** An admin's organization with `credits`, a team of it, and calls on its posts and accounts. */
/** The server's answer to a schedule whose time came too near before the request arrived. */
const tooSoon = (answer: { readonly status: number; readonly body: any }) =>
  answer.status === 400 && String(answer.body.message).startsWith("scheduledAt must be at least")

export const publishingTeam = (credits = 0) =>
  Effect.gen(function*() {
    const admin = yield* signUp("Ada Admin")
    const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
    const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social" } })
    const sql = yield* SqlClient.SqlClient
    if (credits > 0) {
      yield* sql`UPDATE organizations SET credits_balance = ${credits} WHERE id = ${organization.id}`
    }
    const teamPath = (suffix = "") => `/v1/teams/${team.id}${suffix}`
    const call = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, json?: unknown, headers?: Record<string, string>) =>
      raw({ method, path: teamPath(path), token: admin.token, ...(json !== undefined ? { json } : {}), ...(headers ? { headers } : {}) })
    const connect = (json: unknown) =>
      Effect.map(call("POST", "/social-accounts", json), (response) => {
        if (response.status !== 201) throw new Error(`connect failed: ${JSON.stringify(response.body)}`)
        return response.body as { id: string; signingSecret: string | null }
      })
    /**
     * Schedules a post `seconds` ahead. The server's clock decides what is too soon: when a busy machine makes
     * the request arrive after that, it is asked again for later, rather than the test failing.
     */
    const scheduleSoon = (postId: string, socialAccountIds: ReadonlyArray<string>, seconds: number) =>
      Effect.gen(function*() {
        for (let tries = 1;; tries++) {
          const scheduledAt = inSeconds(seconds)
          const answer = yield* call("POST", `/posts/${postId}/schedule`, { socialAccountIds, scheduledAt })
          const refused = tooSoon(answer)
          // Ten refusals are not a busy machine: the last answer goes to the test's assertions.
          if (!refused || tries === 10) return { answer, scheduledAt }
        }
      })
    /**
     * Schedules posts for one instant `seconds` ahead. When a busy machine makes a request arrive too late for it,
     * all are asked again for an instant twice as far ahead, those already scheduled moved there.
     */
    const scheduleTogether = (schedules: ReadonlyArray<{ readonly postId: string; readonly socialAccountIds: ReadonlyArray<string> }>, seconds: number) =>
      Effect.gen(function*() {
        for (let lead = seconds;; lead *= 2) {
          const scheduledAt = inSeconds(lead)
          const answers = []
          for (const { postId, socialAccountIds } of schedules) {
            const answer = yield* call("POST", `/posts/${postId}/schedule`, { socialAccountIds, scheduledAt })
            answers.push(answer)
            if (tooSoon(answer)) break
          }
          if (!answers.some(tooSoon) || lead >= seconds * 16) return { answers, scheduledAt }
        }
      })
    const draft = (content: string, socialAccountIds?: ReadonlyArray<string>) =>
      Effect.map(call("POST", "/posts", { content, ...(socialAccountIds ? { socialAccountIds } : {}) }), (response) => {
        if (response.status !== 201) throw new Error(`draft failed: ${JSON.stringify(response.body)}`)
        return response.body as { id: string }
      })
    const postNow = (postId: string, socialAccountIds: ReadonlyArray<string>, key?: string) =>
      call("POST", `/posts/${postId}/post-now`, { socialAccountIds }, key === undefined ? undefined : { "idempotency-key": key })
    const credit = Effect.map(
      raw({ method: "GET", path: `/v1/organizations/${organization.id}/credits`, token: admin.token }),
      (response) => response.body as { balance: number; reserved: number; available: number }
    )
    return { admin, organization, team, call, connect, draft, postNow, credit, scheduleSoon, scheduleTogether }
  })

export interface ReceivedEvent {
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

/**
 * A webhook receiver on this machine: it records each call and answers what `answer` says (204 by default).
 * `verify` checks a received call's Standard Webhooks signature with the secret shown at connect.
 */
export const makeWebhookReceiver = Effect.gen(function*() {
  const received: Array<ReceivedEvent> = []
  let answer: (event: ReceivedEvent, response: ServerResponse) => void = (_event, response) => response.writeHead(204).end()
  const url = yield* makeLocalReceiver((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const event = { headers: request.headers, body: Buffer.concat(chunks).toString("utf8") }
      received.push(event)
      answer(event, response)
    })
  })
  return {
    url,
    received,
    answerWith: (next: typeof answer) => void (answer = next),
    verify: (event: ReceivedEvent, secret: string) =>
      new StandardWebhook(secret).verify(event.body, {
        "webhook-id": String(event.headers["webhook-id"]),
        "webhook-timestamp": String(event.headers["webhook-timestamp"]),
        "webhook-signature": String(event.headers["webhook-signature"])
      })
  }
})
