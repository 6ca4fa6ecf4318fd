import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "./Errors.js"
import { integer } from "./Fields.js"
import { notRateLimited } from "./RateLimits.js"

export const SchedulerStatus = Schema.Struct({
  sending: integer("Sends of due posts this process has under way"),
  concurrency: integer("The most sends of due posts this process has under way at once (SCHEDULER_CONCURRENCY)"),
  dueWaiting: integer("Posts' accounts that are due and not yet taken by any process"),
  oldestDueSeconds: Schema.NullOr(Schema.Number).annotations({
    description: "How long the oldest of those has waited for a process to take it; null when none waits. " +
      "Normally under a second or two: growing means scheduled work has stopped, or more is due than the " +
      "processes send"
  })
}).annotations({ identifier: "SchedulerStatus" })

export const HealthStatus = Schema.Struct({
  status: Schema.Literal("ok"),
  database: Schema.Literal("up"),
  scheduler: SchedulerStatus
}).annotations({ identifier: "HealthStatus" })

export class HealthGroup extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthStatus)
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Health")
      .annotate(
        OpenApi.Description,
        "Whether the service and its database answer (503 when the database does not), and the state of the " +
          "scheduler. Needs no authentication, and is not rate limited."
      )
      .annotate(OpenApi.Transform, notRateLimited)
  )
  .annotate(OpenApi.Description, "Service health")
{}
