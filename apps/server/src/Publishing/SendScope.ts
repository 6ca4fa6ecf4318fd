import { Effect } from "effect"

/**
 * Where the sends of post-now requests run, apart from their requests: once credits are held, a client that goes
 * away stops nothing. main.ts builds it below the drain, so that it closes after the requests in flight have
 * finished: a send under way when the server is told to stop ends within the grace, recorded.
 */
export class SendScope extends Effect.Service<SendScope>()("SendScope", {
  scoped: Effect.map(Effect.scope, (scope) => ({ scope }))
}) {}
