import { HttpApi, OpenApi } from "@effect/platform"
import { AgentGroup } from "./AgentContext.js"
import { AnalyticsGroup } from "./Analytics.js"
import { AssetContentGroup } from "./AssetContent.js"
import { AssetsGroup, AssetUploadsGroup } from "./Assets.js"
import { ApiKeysGroup } from "./ApiKeys.js"
import { AuthGroup } from "./Auth.js"
import { BillingGroup, BillingWebhooksGroup } from "./Billing.js"
import {
  BadRequest,
  Conflict,
  Forbidden,
  HttpApiDecodeError,
  InternalError,
  NotFound,
  PaymentRequired,
  RequestHeaderFieldsTooLarge,
  RequestTimeout,
  TooManyRequests,
  Unauthorized
} from "./Errors.js"
import { Authentication } from "./Authentication.js"
import { EventWebhooksGroup } from "./EventWebhooks.js"
import { HealthGroup } from "./Health.js"
import { JsonBody } from "./JsonBody.js"
import { LinksGroup } from "./Links.js"
import { MembersGroup } from "./Members.js"
import { CreditsGroup } from "./Credits.js"
import { FoldersGroup } from "./Folders.js"
import { OrganizationsGroup } from "./Organizations.js"
import { PostingSlotsGroup } from "./PostingSlots.js"
import { PostsGroup } from "./Posts.js"
import { AccountConnectsGroup } from "./AccountConnects.js"
import { ProvidersGroup } from "./Providers.js"
import { CallerRateLimit } from "./RateLimits.js"
import { SocialAccountsGroup } from "./SocialAccounts.js"
import { TeamsGroup } from "./Teams.js"

const builtinDecodeError = "#/components/schemas/HttpApiDecodeError"
const contractDecodeError = "#/components/schemas/DecodeError"

/**
 * HttpApi always declares its own HttpApiDecodeError, whose body differs from
 * the contract's. The server replaces it at run time (see the server's error
 * middleware); here the document drops it and gives the contract's body its name.
 */
const describeContractDecodeError = (spec: Record<string, unknown>): Record<string, unknown> => {
  const json = JSON.stringify(spec, (_key, value) =>
    value !== null && typeof value === "object" && Array.isArray(value.anyOf)
      ? dropBuiltinFromUnion(value)
      : value)
  const result = JSON.parse(json.replaceAll(contractDecodeError, builtinDecodeError))
  const schemas = result.components.schemas
  schemas.HttpApiDecodeError = schemas.DecodeError
  delete schemas.DecodeError
  delete schemas.Issue
  delete schemas.PropertyKey
  return result
}

const dropBuiltinFromUnion = (value: { anyOf: Array<{ $ref?: string }> }) => {
  const anyOf = value.anyOf.filter((member) => member.$ref !== builtinDecodeError)
  if (anyOf.length === value.anyOf.length) return value
  return anyOf.length === 1 ? { ...value, anyOf: undefined, ...anyOf[0] } : { ...value, anyOf }
}

// Opens /docs: a first post in a few calls, then what applies to every request.
const apiDescription = [
  "Draft, schedule and publish social posts for organizations and their teams.",
  "## Getting started",
  "1. On the server, `pnpm admin users create --email you@example.com --name You` prints your token, once. Send " +
  "it as `Authorization: Bearer <token>` (here: Authentication, then every Test Request carries it).",
  "2. `POST /v1/organizations` `{\"name\":\"Acme\"}`, then `POST /v1/teams` " +
  "`{\"organizationId\":\"…\",\"name\":\"Social\"}`.",
  "3. Connect an account: `POST /v1/teams/{teamId}/social-accounts` with Bluesky, Mastodon, Telegram, Discord, or " +
  "`{\"provider\":\"webhook\",\"url\":\"https://…\"}`, which receives each post as a signed JSON event.",
  "4. `POST /v1/teams/{teamId}/posts` `{\"content\":\"Hello\"}`, then `POST /v1/teams/{teamId}/posts/{postId}/post-now` " +
  "`{\"socialAccountIds\":[\"…\"]}` (or `/schedule` with a `scheduledAt`). Publishing spends the organization's " +
  "credits: with billing off, the operator grants them (`pnpm admin credits grant`).",
  "## Every request",
  "Errors are `{ _tag, message }` with their status. A 409 `Conflict`, 402 `PaymentRequired` or 400 `BadRequest` " +
  "adds `reason`, a stable code to act on (ConflictReason, PaymentRequiredReason and BadRequestReason list them; " +
  "each operation names those it can give). A request's body may get 400 `invalid_json`, `wrong_content_type`, " +
  "`body_too_large`, `body_not_utf8` or `body_unreadable`, and a list's `cursor` 400 `invalid_cursor` or " +
  "`cursor_sort_mismatch`, whatever the operation. A path asked with a method it does not have answers 405 " +
  "`MethodNotAllowed` with an `Allow` header. Any request may get, and every operation lists, 408 `RequestTimeout` " +
  "(its headers or body arrived slower than the server's timeouts) or 431 `RequestHeaderFieldsTooLarge` (its " +
  "request line and headers exceed 16384 bytes), with a `{ _tag, message }` body; the server then closes the " +
  "connection."
].join("\n\n")

/**
 * Everything that acts for a caller: authenticated first (added last, it runs
 * first, so an anonymous caller learns nothing about its request), then counted
 * against the caller's rate limit, then bodies checked as JSON. A new resource's
 * group is added here.
 */
export class AuthenticatedApi extends HttpApi.make("authenticated")
  .add(OrganizationsGroup)
  .add(TeamsGroup)
  .add(MembersGroup)
  .add(ApiKeysGroup)
  .add(AgentGroup)
  .add(SocialAccountsGroup)
  .add(AccountConnectsGroup)
  .add(ProvidersGroup)
  .add(PostsGroup)
  .add(AnalyticsGroup)
  .add(CreditsGroup)
  .add(PostingSlotsGroup)
  .add(LinksGroup)
  .add(FoldersGroup)
  .add(AssetsGroup)
  .add(EventWebhooksGroup)
  .add(BillingGroup)
  .middleware(JsonBody)
  .middleware(CallerRateLimit)
  .middleware(Authentication)
{}

/** What acts for a caller with a body that is not JSON (a multipart upload): the same, but for the JSON check. */
export class AuthenticatedUploadsApi extends HttpApi.make("authenticatedUploads")
  .add(AssetUploadsGroup)
  .middleware(CallerRateLimit)
  .middleware(Authentication)
{}

export class PostlineApi extends HttpApi.make("postline")
  .addHttpApi(AuthenticatedApi)
  .addHttpApi(AuthenticatedUploadsApi)
  .add(AssetContentGroup)
  .add(AuthGroup)
  .add(BillingWebhooksGroup)
  .add(HealthGroup)
  .addError(HttpApiDecodeError)
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(PaymentRequired)
  .addError(Forbidden)
  .addError(NotFound)
  .addError(Conflict)
  .addError(RequestTimeout)
  .addError(TooManyRequests)
  .addError(RequestHeaderFieldsTooLarge)
  .addError(InternalError)
  .annotate(OpenApi.Title, "Postline")
  .annotate(OpenApi.Version, "0.1.0")
  .annotate(OpenApi.Description, apiDescription)
  .annotate(OpenApi.Servers, [{ url: "/", description: "The Postline server that serves this document" }])
  .annotate(OpenApi.Transform, describeContractDecodeError)
{}
