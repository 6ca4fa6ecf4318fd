import { Schema } from "effect"
import { invalidUnless } from "./Fields.js"

const uuidShape = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/**
 * A UUID: any case on input, lower case once decoded, as
 * PostgreSQL writes it, so that ids compare equal however a client spelt them.
 */
export const Uuid = Schema.transform(
  Schema.String.pipe(Schema.pattern(uuidShape)),
  Schema.String.pipe(Schema.lowercased()),
  { strict: true, decode: (id) => id.toLowerCase(), encode: (id) => id }
).annotations({
  ...invalidUnless("must be a UUID (8-4-4-4-12 hexadecimal digits)"),
  // Property tests generate UUIDs, not lower-case strings that a UUID's pattern would refuse.
  arbitrary: () => (fc) => fc.uuid()
})

const id = <const Brand extends string>(brand: Brand, description: string) =>
  Uuid.pipe(Schema.brand(brand)).annotations({ identifier: brand, description })

export const UserId = id("UserId", "User UUID")
export type UserId = typeof UserId.Type

export const OrganizationId = id("OrganizationId", "Organization UUID")
export type OrganizationId = typeof OrganizationId.Type

export const TeamId = id("TeamId", "Team (workspace) UUID")
export type TeamId = typeof TeamId.Type

export const ApiKeyId = id("ApiKeyId", "API key UUID")
export type ApiKeyId = typeof ApiKeyId.Type

export const SocialAccountId = id("SocialAccountId", "Social account UUID")
export type SocialAccountId = typeof SocialAccountId.Type

export const ConnectId = id("ConnectId", "Account connect UUID")
export type ConnectId = typeof ConnectId.Type

export const PostId = id("PostId", "Post UUID")
export type PostId = typeof PostId.Type

export const FolderId = id("FolderId", "Folder UUID")
export type FolderId = typeof FolderId.Type

export const AssetId = id("AssetId", "Asset UUID")
export type AssetId = typeof AssetId.Type
