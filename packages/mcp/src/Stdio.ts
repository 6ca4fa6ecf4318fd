import { McpServer } from "@effect/ai"
import { NodeSink, NodeStream } from "@effect/platform-node"
import { Layer, Logger } from "effect"
import { PostlineToolsLive } from "./Registration.js"
import { serverInfo } from "./ServerInfo.js"
import type { ToolCaller } from "./ToolCaller.js"

/**
 * Postline's MCP server over this process's stdin and stdout (newline-delimited JSON-RPC), every call acting
 * through the ToolCaller given. Stdout carries the protocol alone: McpServer drops the loggers that write
 * there, and this one writes to stderr.
 */
export const layerStdio: Layer.Layer<never, never, ToolCaller> = PostlineToolsLive.pipe(
  Layer.provide(McpServer.layerStdio({ ...serverInfo, stdin: NodeStream.stdin, stdout: NodeSink.stdout })),
  Layer.provide(Logger.add(Logger.prettyLogger({ stderr: true, colors: false })))
)
