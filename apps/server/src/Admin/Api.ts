import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Conflict, CreditBalance, NotFound, OrganizationId, UserId } from "@postline/domain"
import { Schema } from "effect"
import { minPasswordLength } from "../Users/Passwords.js"

/**
 * The operator's commands, as an API that the admin command calls over a Unix socket: the running server's
 * (its data folder's `admin.sock`, reachable only by who may read that folder), or one of its own when no
 * server holds the database. It is never served on a network port.
 */

export const Email = Schema.Trim.pipe(
  Schema.pattern(/^[^\s@]+@[^\s@]+$/, { message: () => "must be an email address" }),
  Schema.maxLength(320)
)
export const PersonName = Schema.Trim.pipe(Schema.nonEmptyString({ message: () => "must not be empty" }), Schema.maxLength(200))
export const Password = Schema.String.pipe(
  Schema.filter((password) =>
    [...password].length >= minPasswordLength && !password.includes("\n") ||
    `The password must be one line of at least ${minPasswordLength} characters`
  ),
  Schema.maxLength(1024)
)
export const CreditAmount = Schema.Number.pipe(Schema.filter((amount) =>
  Number.isInteger(amount) && amount >= 1 && amount <= 1_000_000_000 || "must be a whole number of credits, 1 to 1000000000"
))
export const GrantNote = Schema.Trim.pipe(Schema.filter((note) =>
  note.length <= 500 && !note.includes("\0") || "must be at most 500 characters, without NUL"
))
/** How many rows a list prints at most. */
export const ListLimit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 10_000))

export const UserWithToken = Schema.Struct({ id: UserId, email: Schema.String, token: Schema.String })

export const UserSummary = Schema.Struct({
  id: UserId,
  email: Schema.String,
  name: Schema.String,
  createdAt: Schema.String,
  hasPassword: Schema.Boolean,
  organizations: Schema.Number
})

export const OrganizationSummary = Schema.Struct({
  id: OrganizationId,
  name: Schema.String,
  createdAt: Schema.String,
  members: Schema.Number,
  teams: Schema.Number,
  creditsAvailable: Schema.Number
})

/** A command that could not run as configured (e.g. no credentials key to rotate to). */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", { message: Schema.String },
  HttpApiSchema.annotations({ status: 422 })) {}

export const RotationCounts = Schema.Struct({ reencrypted: Schema.Number, alreadyCurrent: Schema.Number, unreadable: Schema.Number })

/** A credentials key's id, as ciphertexts and the server's refusal to start name it. */
export const CredentialsKeyId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_-]{8}$/, { message: () => "must be a key id: 8 characters, as the server names it" })
)

/** A key declared lost: how many accounts this marked, and how many use that key in all. */
export const ForgottenKey = Schema.Struct({ keyId: Schema.String, marked: Schema.Number, accounts: Schema.Number })

class UsersGroup extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.post("create", "/users")
      .setPayload(Schema.Struct({ email: Email, name: PersonName }))
      .addSuccess(UserWithToken, { status: 201 })
      .addError(Conflict)
  )
  .add(HttpApiEndpoint.get("list", "/users").setUrlParams(Schema.Struct({ limit: ListLimit })).addSuccess(Schema.Array(UserSummary)))
  .add(
    HttpApiEndpoint.post("token", "/users/token")
      .setPayload(Schema.Struct({ email: Email }))
      .addSuccess(UserWithToken, { status: 201 })
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.put("setPassword", "/users/password")
      .setPayload(Schema.Struct({ email: Email, password: Schema.Redacted(Password) }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
  )
{}

class OrganizationsGroup extends HttpApiGroup.make("organizations")
  .add(
    HttpApiEndpoint.get("list", "/organizations")
      .setUrlParams(Schema.Struct({ limit: ListLimit }))
      .addSuccess(Schema.Array(OrganizationSummary))
  )
{}

class CreditsGroup extends HttpApiGroup.make("credits")
  .add(
    HttpApiEndpoint.post("grant", "/credits/grants")
      .setPayload(Schema.Struct({ organizationId: OrganizationId, amount: CreditAmount, note: Schema.NullOr(GrantNote) }))
      .addSuccess(Schema.extend(Schema.Struct({ organizationId: OrganizationId }), CreditBalance))
      .addError(NotFound)
  )
{}

class CredentialsGroup extends HttpApiGroup.make("credentials")
  .add(HttpApiEndpoint.post("rotate", "/credentials/rotation").addSuccess(RotationCounts).addError(CommandFailed))
  .add(
    HttpApiEndpoint.post("forgetKey", "/credentials/lost-keys")
      .setPayload(Schema.Struct({ keyId: CredentialsKeyId }))
      .addSuccess(ForgottenKey)
      .addError(NotFound)
      .addError(CommandFailed)
  )
{}

export class AdminApi extends HttpApi.make("postline-admin")
  .add(UsersGroup)
  .add(OrganizationsGroup)
  .add(CreditsGroup)
  .add(CredentialsGroup)
{}
