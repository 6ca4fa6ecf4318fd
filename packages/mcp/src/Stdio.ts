import { McpServer } from "@effect/ai"
import { NodeSink, NodeStream } from "@effect/platform-node"
import { RpcSerialization } from "@effect/rpc"
import { Layer, Logger } from "effect"
import { PostlineToolsLive } from "./Registration.js"
import { serverInfo } from "./ServerInfo.js"
import { layerDrainingStdio } from "./StdioProtocol.js"
import type { ToolCaller } from "./ToolCaller.js"

/**
 * Postline's MCP server over this process's stdin and stdout (newline-delimited JSON-RPC), every call acting
 * through the ToolCaller given: McpServer.layerStdio, but with a protocol that answers the calls still running
 * when stdin closes. Stdout carries the protocol alone: the loggers that write there are dropped, and this one
 * writes to stderr.
 */
export const layerStdio: Layer.Layer<never, never, ToolCaller> = PostlineToolsLive.pipe(
  Layer.provide(McpServer.layer(serverInfo)),
  Layer.provide(layerDrainingStdio({ stdin: NodeStream.stdin, stdout: NodeSink.stdout })),
  Layer.provide(RpcSerialization.layerNdJsonRpc()),
  Layer.provide(Logger.add(Logger.prettyLogger({ stderr: true, colors: false }))),
  Layer.provide(Logger.remove(Logger.defaultLogger)),
  Layer.provide(Logger.remove(Logger.prettyLoggerDefault))
)
