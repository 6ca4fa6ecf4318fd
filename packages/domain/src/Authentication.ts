import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { Unauthorized } from "./Errors.js"
import { Uuid } from "./Fields.js"

export const UserId = Uuid.pipe(Schema.brand("UserId")).annotations({ identifier: "UserId" })
export type UserId = typeof UserId.Type

export const User = Schema.Struct({
  id: UserId,
  email: Schema.String,
  name: Schema.String
}).annotations({ identifier: "User" })
export type User = typeof User.Type

/** The authenticated user a request acts for. */
export class CurrentUser extends Context.Tag("CurrentUser")<CurrentUser, User>() {}

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentUser,
  security: {
    bearerAuth: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "A personal access token: `Authorization: Bearer <token>`")
    )
  }
}) {}
