import type { RpcMessage } from "@effect/rpc"
import { RpcServer } from "@effect/rpc"
import { Cause, Duration, Effect, Layer, Schema, type Sink, Stream } from "effect"

/** How long the calls still running when the agent closes standard input may take to be answered. */
const drainTimeout = Duration.seconds(30)

type CauseEncoded = Schema.CauseEncoded<unknown, unknown>

const decodeCause = Schema.decodeSync(Schema.Cause({ error: Schema.Unknown, defect: Schema.Unknown }))

// JSON-RPC's "Internal error", with a message that the serialization takes as the error's.
const interruptedCall: CauseEncoded = {
  _tag: "Fail",
  error: { code: -32603, message: "The call was stopped before it finished: the MCP server is stopping, or the call was cancelled" }
}

/**
 * An interrupted call's answer says so in a sentence, where JSON-RPC's serialization would put the whole
 * serialized Cause in the error's message.
 */
const shortened = (response: RpcMessage.FromServerEncoded): RpcMessage.FromServerEncoded =>
  response._tag === "Exit" && response.exit._tag === "Failure" && Cause.isInterruptedOnly(decodeCause(response.exit.cause))
    ? { ...response, exit: { _tag: "Failure", cause: interruptedCall } }
    : response

/**
 * @effect/rpc's stdio protocol, which ends the server as soon as standard input ends, made to answer first: an
 * agent may write its last call and close its end of the pipe, and that call is then finished and answered (for
 * at most `drainTimeout`) before the server stops; a call stopped all the same is answered in a sentence.
 */
export const layerDrainingStdio = <EIn, RIn, EOut, ROut>(options: {
  readonly stdin: Stream.Stream<Uint8Array, EIn, RIn>
  readonly stdout: Sink.Sink<void, Uint8Array | string, unknown, EOut, ROut>
}) =>
  Layer.scoped(
    RpcServer.Protocol,
    Effect.gen(function*() {
      // The ids of the requests read and not answered yet (a notification's id is empty: it is never answered).
      const running = new Set<string>()
      const idle = yield* Effect.makeLatch(true)
      const answered = Effect.timeout(idle.await, drainTimeout).pipe(Effect.ignore)
      const stdio = yield* RpcServer.makeProtocolStdio({
        stdin: Stream.concat(options.stdin, Stream.drain(Stream.fromEffect(answered))),
        stdout: options.stdout
      })
      return yield* RpcServer.Protocol.make((write) =>
        Effect.gen(function*() {
          // Requests are counted as they are read, before the server runs (until then they wait in a buffer),
          // so that input that ends at once still waits for its answers.
          yield* stdio.run((clientId, message) => {
            if (message._tag === "Request" && message.id !== "") {
              running.add(message.id)
              idle.unsafeClose()
            }
            return write(clientId, message)
          }).pipe(Effect.interruptible, Effect.forkScoped)
          return {
            ...stdio,
            send: (clientId, response, transferables) =>
              Effect.ensuring(
                stdio.send(clientId, shortened(response), transferables),
                Effect.sync(() => {
                  if (response._tag !== "Exit") return
                  running.delete(response.requestId)
                  if (running.size === 0) idle.unsafeOpen()
                })
              )
          }
        })
      )
    })
  )
