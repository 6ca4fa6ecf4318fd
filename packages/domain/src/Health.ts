import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "./Errors.js"

export const HealthStatus = Schema.Struct({
  status: Schema.Literal("ok"),
  database: Schema.Literal("up")
}).annotations({ identifier: "HealthStatus" })

export class HealthGroup extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthStatus)
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Health")
      .annotate(OpenApi.Description, "Whether the service and its database answer. Needs no authentication.")
  )
  .annotate(OpenApi.Description, "Service health")
{}
