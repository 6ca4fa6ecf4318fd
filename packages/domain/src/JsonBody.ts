import { HttpApiMiddleware } from "@effect/platform"
import { Schema } from "effect"
import { BadRequest, HttpApiDecodeError } from "./Errors.js"

/** Requests that carry a body must declare it as JSON, of a bounded shape. */
export class JsonBody extends HttpApiMiddleware.Tag<JsonBody>()("JsonBody", {
  failure: Schema.Union(HttpApiDecodeError, BadRequest)
}) {}
