import { HttpApiMiddleware } from "@effect/platform"
import { BadRequest } from "./Errors.js"

/** Requests that carry a body must declare it as JSON. */
export class JsonBody extends HttpApiMiddleware.Tag<JsonBody>()("JsonBody", { failure: BadRequest }) {}
