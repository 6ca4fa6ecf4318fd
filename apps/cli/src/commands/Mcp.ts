import { Command, Options } from "@effect/cli"
import { WebsiteUrl } from "@postline/domain"
import { layerStdio, ToolCaller } from "@postline/mcp"
import { Postline } from "@postline/sdk"
import { Effect, Layer, Option } from "effect"
import { decodedOption } from "../CommonOptions.js"
import { Output } from "../Output.js"
import { reported } from "../Session.js"

/**
 * Postline's MCP tools over standard input and output, acting with the CLI's stored login, POSTLINE_API_KEY or
 * POSTLINE_TOKEN. Standard output carries the protocol alone: a failure to start (no credentials) is reported on
 * standard error, and logs go there too.
 */
export const mcpCommand = Command.make("mcp", {
  url: decodedOption("url", WebsiteUrl, "url").pipe(
    Options.optional,
    Options.withDescription("The Postline server (default: POSTLINE_URL, else the stored login's)")
  )
}, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    return yield* Layer.launch(layerStdio.pipe(Layer.provide(ToolCaller.layerFromClient(postline.client))))
  }).pipe(
    Effect.provide(Postline.layerNode(Option.match(options.url, { onNone: () => ({}), onSome: (baseUrl) => ({ baseUrl }) }))),
    reported,
    Effect.provide(Output.layer(false))
  )).pipe(
    Command.withDescription(
      "Serves Postline's MCP tools over standard input and output, for an agent to start, acting with your login (postline login) or POSTLINE_API_KEY"
    )
  )
