import type { McpSchema } from "@effect/ai"
import type { PostlineClient } from "@postline/domain"
import { Context, Effect, Layer } from "effect"
import type { ToolError } from "./ToolError.js"

/**
 * Who a tool call acts for: the API client of the MCP client that called it. Over stdio, one client for
 * the whole session (the CLI's login or API key); over HTTP, each call's own caller, found by its
 * `McpServerClient`, so that one toolkit serves both transports.
 */
export class ToolCaller extends Context.Tag("@postline/mcp/ToolCaller")<ToolCaller, {
  readonly client: Effect.Effect<PostlineClient, ToolError, McpSchema.McpServerClient>
}>() {
  /** Every call acts with this client (the stdio server of the CLI). */
  static readonly layerFromClient = (client: PostlineClient): Layer.Layer<ToolCaller> =>
    Layer.succeed(ToolCaller, { client: Effect.succeed(client) })
}
