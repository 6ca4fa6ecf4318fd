import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "./Errors.js"
import { integer } from "./Fields.js"

export const SchedulerStatus = Schema.Struct({
  registered: Schema.Boolean.annotations({ description: "Whether this process takes part in running scheduled work" }),
  shards: integer("How many of the 300 shards of scheduled work this process holds"),
  messagesWaiting: integer("Scheduled steps and wake-ups not yet done, in all processes, future ones included"),
  oldestDueSeconds: Schema.NullOr(Schema.Number).annotations({
    description: "How long the oldest step that is due has waited for a process to take it; null when none waits. " +
      "Normally under a second or two: growing means scheduled work has stopped"
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
          "scheduler. Needs no authentication."
      )
  )
  .annotate(OpenApi.Description, "Service health")
{}
