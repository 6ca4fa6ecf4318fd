import { McpSchema } from "@effect/ai"

/**
 * JSON-RPC 2.0 at the edge of `/mcp`. @effect/rpc, under McpServer, takes every id for a BigInt (a string id is a
 * defect answered with the id and the code swapped), answers an unknown method or unreadable params with internals
 * and code 0: so each message is checked here, and its request reaches McpServer under an id of our own, the
 * caller's id put back on the answer as it came (a string, or any number).
 */

/** A JSON-RPC request id: MCP allows strings and numbers, not null. */
export type RequestId = string | number

export const errorCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603
} as const

/** A JSON-RPC error answer; `id` null where the request's id could not be read. */
export const errorAnswer = (id: RequestId | null, code: number, message: string) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code, message }
})

const requestMethods: ReadonlySet<string> = new Set(McpSchema.ClientRequestRpcs.requests.keys())
const notificationMethods: ReadonlySet<string> = new Set(McpSchema.ClientNotificationRpcs.requests.keys())

/** What one message of a POST is, once checked. */
export type Checked =
  /** A request of a method McpServer serves, to pass on. */
  | { readonly _tag: "Request"; readonly id: RequestId; readonly message: Record<string, unknown> }
  /** A notification (no id), passed on when McpServer knows it, or a response from the client: nothing to answer. */
  | { readonly _tag: "NoAnswer"; readonly message: Record<string, unknown> | null }
  /** Refused here: its error answer. */
  | { readonly _tag: "Refused"; readonly invalidRequest: boolean; readonly answer: ReturnType<typeof errorAnswer> }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isId = (value: unknown): value is RequestId =>
  typeof value === "string" || (typeof value === "number" && Number.isFinite(value))

const invalid = (id: RequestId | null, message: string): Checked => ({
  _tag: "Refused",
  invalidRequest: true,
  answer: errorAnswer(id, errorCodes.invalidRequest, `Invalid Request: ${message}`)
})

/** Checks one message as JSON-RPC 2.0 and MCP have it. */
export const check = (message: unknown): Checked => {
  if (!isObject(message)) return invalid(null, "a message is a JSON object")
  const hasId = Object.hasOwn(message, "id")
  if (hasId && !isId(message.id)) return invalid(null, "an id is a string or a number")
  const id = hasId ? message.id as RequestId : null
  if (message.jsonrpc !== "2.0") return invalid(id, `"jsonrpc" must be "2.0"`)
  if (!Object.hasOwn(message, "method")) {
    // A response to a request of the server's: this server sends none, so it is acknowledged and dropped.
    return hasId && (Object.hasOwn(message, "result") || Object.hasOwn(message, "error"))
      ? { _tag: "NoAnswer", message: null }
      : invalid(id, `a request has a "method"`)
  }
  if (typeof message.method !== "string") return invalid(id, `"method" must be a string`)
  // A notification McpServer does not know is dropped here: @effect/rpc would take it for a defect.
  if (!hasId) return { _tag: "NoAnswer", message: notificationMethods.has(message.method) ? message : null }
  if (!requestMethods.has(message.method)) {
    return {
      _tag: "Refused",
      invalidRequest: false,
      answer: errorAnswer(id, errorCodes.methodNotFound, `Method not found: ${message.method}`)
    }
  }
  if (Object.hasOwn(message, "params") && !isObject(message.params)) {
    return {
      _tag: "Refused",
      invalidRequest: false,
      answer: errorAnswer(id, errorCodes.invalidParams, `Invalid params: the params of ${message.method} are an object`)
    }
  }
  return { _tag: "Request", id: id!, message }
}

/** The request as McpServer gets it: under `internalId`, a whole number it can take. */
export const withInternalId = (message: Record<string, unknown>, internalId: number) => ({ ...message, id: internalId })

/**
 * McpServer's answer to a request, for the caller: its id put back, its error a JSON-RPC error object without
 * the internals @effect/rpc adds (a failure's cause, a defect's stack). A failure without a code is a payload
 * its schema refused: invalid params.
 */
export const answerFor = (id: RequestId, answer: unknown) => {
  if (!isObject(answer)) return errorAnswer(id, errorCodes.internalError, "Internal error")
  if (!isObject(answer.error)) return { jsonrpc: "2.0" as const, id, result: answer.result ?? null }
  const { _tag, code, message } = answer.error
  if (_tag === "Defect") return errorAnswer(id, errorCodes.internalError, "Internal error")
  if (code === 0 || typeof code !== "number") {
    return errorAnswer(id, errorCodes.invalidParams, "Invalid params: the params do not match the method's schema")
  }
  return errorAnswer(id, code, typeof message === "string" ? message : "Error")
}
