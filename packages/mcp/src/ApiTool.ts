import { McpSchema, Tool } from "@effect/ai"
import {
  DefaultPageSize,
  IdempotencyKey,
  integer,
  invalidUnless,
  MaxPageSize,
  optional,
  PostId,
  SocialAccountId,
  strict,
  TeamId
} from "@postline/domain"
import { Schema } from "effect"
import { ToolError } from "./ToolError.js"

// How the tools of Tools.ts, PostTools.ts, AnalyticsTools.ts, ProviderTools.ts and AccountConnectTools.ts are made, and the
// arguments they share: for them alone, not exported by the package.

/** What a tool does to the world, as MCP's annotations say it. */
export interface Hints {
  readonly readonly: boolean
  readonly destructive: boolean
  readonly idempotent: boolean
  /** Whether it reaches beyond Postline: a social network, or a URL on the internet. */
  readonly openWorld: boolean
}

export const reads: Hints = { readonly: true, destructive: false, idempotent: true, openWorld: false }

/**
 * A tool of the API: its arguments are checked with the API's own schemas, strictly (an unknown argument is
 * named, every wrong one reported), and it fails with a ToolError. It acts for the MCP client that calls it.
 */
export const apiTool = <const Name extends string, Fields extends Schema.Struct.Fields, Success extends Schema.Schema.Any>(
  name: Name,
  options: {
    readonly title: string
    readonly description: string
    readonly parameters: Fields
    readonly success: Success
    readonly hints: Hints
  }
) =>
  Tool.make(name, {
    description: options.description,
    success: options.success,
    failure: ToolError,
    dependencies: [McpSchema.McpServerClient]
  })
    .setParameters(Schema.Struct(options.parameters).annotations(strict))
    .annotate(Tool.Title, options.title)
    .annotate(Tool.Readonly, options.hints.readonly)
    .annotate(Tool.Destructive, options.hints.destructive)
    .annotate(Tool.Idempotent, options.hints.idempotent)
    .annotate(Tool.OpenWorld, options.hints.openWorld)

/**
 * Tool arguments are JSON, where a page size is a number; the API's query string carries the same number as
 * text (PageLimit), so lists take this in its place.
 */
const PageSize = integer(`Page size, a positive integer; default ${DefaultPageSize}, capped at ${MaxPageSize}`).pipe(
  Schema.filter((n) => n >= 1, { jsonSchema: { minimum: 1 } })
).annotations({ identifier: "PageSize", ...invalidUnless("must be a positive integer") })

export const paged = { limit: optional(PageSize) }

export const teamFields = { teamId: TeamId }
export const postFields = { teamId: TeamId, postId: PostId }
export const accountFields = { teamId: TeamId, socialAccountId: SocialAccountId }

export const idempotencyKey = optional(IdempotencyKey.annotations({
  description: "Any unique string of 1 to 255 printable ASCII characters, e.g. a UUID. To retry after a timeout or " +
    "an error, call again with the same key and arguments: the first answer is replayed (replayed: true) instead of " +
    "doing it twice (publishing, or paying for a refresh). Generated when absent, and returned in the result: keep it to retry"
}))

/** The answer of a publish or a refresh, with the key that makes retrying it safe and whether this answer is a replay. */
export const idempotentAnswer = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  Schema.Struct({
    ...fields,
    idempotencyKey: IdempotencyKey,
    replayed: Schema.Boolean.annotations({
      description: "true: this is the first answer to this idempotencyKey again, and nothing was done a second time"
    })
  }).annotations({ identifier })
