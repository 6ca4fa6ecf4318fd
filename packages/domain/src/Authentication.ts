import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Data, Schema } from "effect"
import { Unauthorized } from "./Errors.js"
import { type ApiKeyId, type OrganizationId, UserId } from "./Ids.js"

export const User = Schema.Struct({
  id: UserId,
  email: Schema.String,
  name: Schema.String
}).annotations({ identifier: "User" })
export type User = typeof User.Type

/** Who a request acts for: a user (by access token), or an organization's API key, which acts for that organization alone. */
export type Caller = Data.TaggedEnum<{
  User: { readonly user: User }
  ApiKey: { readonly apiKeyId: ApiKeyId; readonly organizationId: OrganizationId }
}>
export const Caller = Data.taggedEnum<Caller>()

export class CurrentCaller extends Context.Tag("CurrentCaller")<CurrentCaller, Caller>() {}

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentCaller,
  security: {
    bearerAuth: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "A user's access token (`plt_…`, from the device login) or an organization API key (`plk_…`): " +
          "`Authorization: Bearer <token>`"
      )
    )
  }
}) {}
