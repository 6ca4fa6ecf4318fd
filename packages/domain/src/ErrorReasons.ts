import { Schema } from "effect"

/**
 * The `reason` of a 409, 402 or 400: a stable snake_case code saying what the request ran into, which an agent
 * or a script can act on where the message is for people. Each code is written here once, with what it means:
 * the schemas below, and so the OpenAPI document, list them. A new code is added, never renamed.
 */

const conflictReasons = {
  post_not_draft: "The post is not a draft (it is scheduled, publishing or sent): only a draft can be changed or deleted",
  post_scheduled: "The post is scheduled, nothing of it sent yet: unschedule it first, or schedule it again for another time",
  post_publishing: "A publish of the post is under way (to one of the accounts asked for): wait for it to end",
  post_not_scheduled: "The post is not scheduled: there is nothing to unschedule",
  already_published: "The post was already published to one of the accounts: publish again only to those that failed",
  idempotency_key_in_progress: "A request with this Idempotency-Key is still running: repeat it later, with the same key, for its answer",
  folder_name_taken: "The parent folder already has a folder of that name",
  folder_cycle: "A folder cannot be moved into itself or into one of its own folders",
  folder_not_empty: "The folder holds folders or assets: move or delete them first",
  asset_in_use: "The asset is carried by a post that is not a draft",
  too_many_open_uploads: "The team has as many uploads open as it may: complete them, or wait for them to expire",
  upload_already_sent: "The upload's bytes were already sent, or are arriving: complete it",
  upload_busy: "The upload is still receiving its bytes, or is being completed",
  upload_bytes_missing: "Nothing was sent to the upload's URL yet: send the bytes, then complete it",
  analytics_read_refused: "The account's provider refused the read, for a reason that does not pass by itself (e.g. the account needs reconnecting)",
  credentials_unreadable: "This server cannot read the account's stored credentials: connect the account again",
  email_taken: "A user with this email already exists",
  already_member: "The user is already a member of the organization",
  last_admin_or_owner: "An organization keeps at least one admin or owner",
  already_subscribed: "The organization has a subscription that has not ended: change it in the billing portal",
  checkout_in_progress: "Another subscription checkout of the organization is being made: try again in a moment",
  subscription_pending: "The organization's previous subscription checkout was paid and its subscription is being set up",
  no_subscription_plan: "This server offers no subscription plan",
  no_payment_method: "The organization has no saved payment method: buy a credit pack first",
  post_deleted: "The post was taken down from one of the accounts (unpublish): it is not published there again",
  post_not_published: "The post is not published to one of the accounts asked for (not sent, failed, or taken down already): there is nothing to take down",
  post_deleting: "The post is being taken down from one of the accounts asked for: wait for it to end",
  provider_not_configured: "This server is not set up to connect accounts of that network: the message names the settings it needs"
} as const

const paymentRequiredReasons = {
  insufficient_credits: "The organization's available credits do not cover it: nothing was spent",
  spend_cap_reached: "It would take the organization's spending this month past its spend cap: nothing was spent"
} as const

const badRequestReasons = {
  invalid_json: "The request body is not valid JSON",
  wrong_content_type: "The request body's Content-Type is not the one the endpoint takes",
  body_too_large: "The request body is larger than the server takes",
  body_not_utf8: "The request body, or a form's percent-encoded bytes, are not valid UTF-8",
  body_unreadable: "The request body could not be read to its end",
  invalid_form: "The multipart/form-data form cannot be taken: its boundary, its parts or its fields",
  invalid_cursor: "The cursor is not one a page of this list handed out",
  cursor_sort_mismatch: "The cursor belongs to another sortBy or sortOrder: repeat those with it",
  idempotency_key_reused: "This Idempotency-Key was used with a different request: use a new key for a new request",
  team_not_in_organization: "The team is not a team of that organization",
  credentials_not_verified: "The provider did not accept the account's credentials, or could not be reached to check them",
  provider_mismatch: "The credentials are of another provider than the account's",
  duplicate_media: "An asset is given more than once in the post's media",
  no_posting_slots: "The team has no posting slots: set some, or give scheduledAt",
  scheduled_at_out_of_range: "scheduledAt is too soon or more than a year ahead",
  url_not_callable: "The server will not call this URL, or cannot: not https, not on the public internet, unresolvable, or a redirect",
  size_mismatch: "The bytes sent are not the size the upload declared",
  checksum_mismatch: "The bytes sent do not have the SHA-256 the upload declared",
  unknown_pack: "No credit pack of that many credits is on sale",
  auto_recharge_incomplete: "Auto-recharge needs a threshold and an amount",
  invalid_signature: "The Stripe-Signature header is missing or does not match the body",
  unreadable_event: "The Stripe event is signed but its content cannot be read",
  return_to_not_allowed: "returnTo is neither an address of this server nor a loopback address"
} as const

const reasonSchema = <Code extends string>(identifier: string, refused: string, meanings: Readonly<Record<Code, string>>) =>
  Schema.Literal(...Object.keys(meanings) as [Code, ...Array<Code>]).annotations({
    identifier,
    description: `Why the request was refused, as a stable code: ${refused}. One of:\n\n` +
      Object.entries<string>(meanings).map(([code, meaning]) => `- \`${code}\`: ${meaning}`).join("\n")
  })

export const ConflictReason = reasonSchema("ConflictReason", "it conflicts with the current state (409)", conflictReasons)
export type ConflictReason = typeof ConflictReason.Type

export const PaymentRequiredReason = reasonSchema(
  "PaymentRequiredReason",
  "the organization cannot pay for it (402)",
  paymentRequiredReasons
)
export type PaymentRequiredReason = typeof PaymentRequiredReason.Type

export const BadRequestReason = reasonSchema("BadRequestReason", "the request cannot be taken as sent (400)", badRequestReasons)
export type BadRequestReason = typeof BadRequestReason.Type
