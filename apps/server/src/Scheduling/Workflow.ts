import { Activity, DurableClock, Workflow } from "@effect/workflow"
import { Clock, Duration, Effect, Schema } from "effect"
import { ScheduledPublishing } from "./Steps.js"

/**
 * Publishes one schedule of a post: waits, durably, until it is due, then
 * sends each target as an activity, retrying failures that may pass with
 * backoff. One execution per (post, schedule version): a new schedule, or
 * none, outdates it, and the steps check the version before they act.
 */
export const PublishScheduled = Workflow.make({
  name: "PublishScheduledPost",
  payload: { postId: Schema.String, version: Schema.Number, dueAt: Schema.Number },
  idempotencyKey: ({ postId, version }) => `${postId}:v${version}`
})

/** What one attempt came to: done with (published, or failed for good), or to try again after a delay. */
export const AttemptResult = Schema.Union(
  Schema.TaggedStruct("Done", {}),
  Schema.TaggedStruct("Retry", { delaySeconds: Schema.Number })
)
export type AttemptResult = typeof AttemptResult.Type

// A wait kept in memory could not be cancelled: every wait is kept in the database.
const durably = Duration.zero

export const PublishScheduledLive = PublishScheduled.toLayer(Effect.fn(function*({ dueAt, postId, version }) {
  const steps = yield* ScheduledPublishing
  const now = yield* Clock.currentTimeMillis
  yield* DurableClock.sleep({ name: "due", duration: Duration.millis(Math.max(0, dueAt - now)), inMemoryThreshold: durably })
  // Every step waits its turn before it is handed to the engine, so that a burst of due posts holds
  // waiting workflows, not hundreds of steps under way.
  const accountIds = yield* steps.inTurn(Activity.make({
    name: "begin",
    success: Schema.Array(Schema.String),
    execute: steps.begin(postId, version)
  }))
  yield* Effect.forEach(accountIds, (accountId) =>
    Effect.gen(function*() {
      for (let attempt = 1;; attempt++) {
        const result = yield* steps.inTurn(Activity.make({
          name: `send/${accountId}/${attempt}`,
          success: AttemptResult,
          execute: steps.attempt({ postId, version, accountId, attempt })
        }))
        if (result._tag === "Done") return
        yield* DurableClock.sleep({
          name: `backoff/${accountId}/${attempt}`,
          duration: Duration.seconds(result.delaySeconds),
          inMemoryThreshold: durably
        })
      }
    }), { concurrency: 8 })
  yield* steps.inTurn(Activity.make({ name: "finish", execute: steps.finish(postId) }))
}))
