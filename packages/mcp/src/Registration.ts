import { AiError, McpSchema, McpServer, Tool } from "@effect/ai"
import { Cause, Context, Effect, Layer, Option, ParseResult, Schema, SchemaAST } from "effect"
import { PostlineToolHandlers } from "./Handlers.js"
import { invalidArguments, ToolError } from "./ToolError.js"
import { PostlineToolkit } from "./Tools.js"

type AnyTool = (typeof PostlineToolkit.tools)[keyof typeof PostlineToolkit.tools]

// JSON Schema has no form of its own for "an object with no properties"; MCP wants an object schema.
const noArguments = { type: "object", properties: {}, required: [], additionalProperties: false }

const inputSchemaOf = (tool: AnyTool) =>
  SchemaAST.getPropertySignatures(tool.parametersSchema.ast).length === 0
    ? noArguments
    : Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast)

const describe = (tool: AnyTool) =>
  new McpSchema.Tool({
    name: tool.name,
    title: Option.getOrUndefined(Context.getOption(tool.annotations, Tool.Title)),
    description: tool.description,
    inputSchema: inputSchemaOf(tool),
    annotations: new McpSchema.ToolAnnotations({
      title: Option.getOrUndefined(Context.getOption(tool.annotations, Tool.Title)),
      readOnlyHint: Context.get(tool.annotations, Tool.Readonly),
      destructiveHint: Context.get(tool.annotations, Tool.Destructive),
      idempotentHint: Context.get(tool.annotations, Tool.Idempotent),
      openWorldHint: Context.get(tool.annotations, Tool.OpenWorld)
    })
  })

/** The result as JSON text, which every client reads, and as structured content. */
const result = (value: unknown, isError: boolean) =>
  new McpSchema.CallToolResult({
    isError,
    structuredContent: value,
    content: [McpSchema.TextContent.make({ text: JSON.stringify(value) })]
  })

const encodeToolError = Schema.encodeSync(ToolError)

/**
 * A failed call as the agent reads it: the handler's ToolError; arguments that did not decode, each field named;
 * anything else logged and said as an InternalError, without its details.
 */
const failure = (name: string, cause: Cause.Cause<unknown>) => {
  const error = Cause.failureOption(cause)
  if (Option.isSome(error) && error.value instanceof ToolError) return Effect.succeed(error.value)
  if (
    Option.isSome(error) && error.value instanceof AiError.MalformedOutput && ParseResult.isParseError(error.value.cause)
  ) {
    return Effect.succeed(invalidArguments(error.value.cause))
  }
  return Effect.as(
    Effect.logError(`The MCP tool ${name} failed unexpectedly`, cause),
    new ToolError({ _tag: "InternalError", message: `The tool ${name} failed unexpectedly` })
  )
}

/**
 * Registers the toolkit with the MCP server: as `McpServer.toolkit` does, but every failure is a tool error
 * (`isError: true`) carrying a ToolError, arguments the schemas refuse included, where the stock registration
 * would answer the decoder's own error object.
 */
const registerTools = Effect.gen(function*() {
  const server = yield* McpServer.McpServer
  const toolkit = yield* PostlineToolkit
  const context = yield* Effect.context<never>()
  for (const tool of Object.values(toolkit.tools)) {
    yield* server.addTool({
      tool: describe(tool),
      handle: (payload) =>
        toolkit.handle(tool.name, payload).pipe(
          Effect.provide(context),
          Effect.matchCauseEffect({
            onSuccess: ({ encodedResult }) => Effect.succeed(result(encodedResult, false)),
            onFailure: (cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.interrupt
                : Effect.map(failure(tool.name, cause), (error) => result(encodeToolError(error), true))
          })
        )
    })
  }
})

/** Postline's tools on the MCP server that this layer is given, acting through the ToolCaller. */
export const PostlineToolsLive = Layer.effectDiscard(registerTools).pipe(Layer.provide(PostlineToolHandlers))
