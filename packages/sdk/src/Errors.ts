import { OAuthErrorCode } from "@postline/domain"
import { Schema } from "effect"

/**
 * The stored device login can no longer be used: its refresh token was refused (used twice, which ends the login
 * on the server; revoked; expired; issued to another client), or there is no login to use. Log in again.
 */
export class LoginRequired extends Schema.TaggedError<LoginRequired>()("LoginRequired", {
  message: Schema.String
}) {}

/** No credentials anywhere: no API key or access token given or in the environment, and no stored login. */
export class NotConfigured extends Schema.TaggedError<NotConfigured>()("NotConfigured", {
  message: Schema.String
}) {}

/** The device login ended without tokens: denied by the user, expired, or refused by the server. */
export class DeviceLoginFailed extends Schema.TaggedError<DeviceLoginFailed>()("DeviceLoginFailed", {
  error: OAuthErrorCode,
  message: Schema.String
}) {}

/**
 * A publish or schedule whose first try is still running on the server when the client stops waiting for it
 * (`retry.inDoubtFor`): it may still complete. Send the same request with the same `idempotencyKey` later to
 * learn its answer; a new key could publish twice.
 */
export class PublishInDoubt extends Schema.TaggedError<PublishInDoubt>()("PublishInDoubt", {
  idempotencyKey: Schema.String,
  message: Schema.String
}) {}

/** What to tell someone whose login has ended, after the server's reason. */
export const loginAgain = "run `postline login` to log in again"
