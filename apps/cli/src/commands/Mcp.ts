import { Command } from "@effect/cli"
import { layerStdio, ToolCaller } from "@postline/mcp"
import { Postline } from "@postline/sdk"
import { Effect, Layer } from "effect"
import { serverOptions } from "../CommonOptions.js"
import { Output } from "../Output.js"
import { reported, serverAt } from "../Session.js"

/**
 * Postline's MCP tools over standard input and output, acting with the CLI's stored login, POSTLINE_API_KEY or
 * POSTLINE_TOKEN. Standard output carries the protocol alone: a failure to start (no credentials) is reported on
 * standard error, and logs go there too.
 */
export const mcpCommand = Command.make("mcp", { url: serverOptions.url }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    return yield* Layer.launch(layerStdio.pipe(Layer.provide(ToolCaller.layerFromClient(postline.client))))
  }).pipe(
    Effect.provide(Postline.layerNode(serverAt(options.url))),
    reported,
    Effect.provide(Output.Default(false))
  )).pipe(
    Command.withDescription(
      "Serves Postline's MCP tools over standard input and output, for an agent to start, acting with your login (postline login) or POSTLINE_API_KEY"
    )
  )
