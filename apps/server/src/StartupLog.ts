import { HttpServer } from "@effect/platform"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import * as Path from "node:path"
import { CurrentDeployment, type Deployment } from "./Deployment.js"

// Replaced with package.json's version by the build (scripts/build.mjs); undefined when running from the sources.
declare const POSTLINE_VERSION: string | undefined

const versionFromSources = (): string => {
  try {
    return JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version
  } catch {
    return "unknown"
  }
}

/** This server's version, as package.json gives it. */
export const serverVersion: string = typeof POSTLINE_VERSION === "string" ? POSTLINE_VERSION : versionFromSources()

/** The database, for operators: where it is, never how to log in to it. */
export const databaseOf = (deployment: Deployment) =>
  deployment._tag === "Postgres"
    ? {
      words: `the PostgreSQL database "${deployment.target.database}" on ${deployment.target.server}`,
      fields: { database: "postgres", databaseServer: deployment.target.server, databaseName: deployment.target.database }
    }
    : {
      words: `the embedded database in ${Path.resolve(deployment.dataDir)}`,
      fields: { database: "embedded", dataDir: Path.resolve(deployment.dataDir) }
    }

/**
 * One INFO line once the API answers (its address, database and version, in the message and as annotations),
 * and one when the server begins to stop: built last, this layer is the first closed.
 */
const StartStopLogLive = Layer.scopedDiscard(Effect.gen(function*() {
  const { address } = yield* HttpServer.HttpServer
  const database = databaseOf(yield* CurrentDeployment)
  // An IPv6 address is written in brackets before its port, as in a URL.
  const host = address._tag === "TcpAddress" && address.hostname.includes(":") ? `[${address.hostname}]` : undefined
  const listening = address._tag === "TcpAddress" ? `${host ?? address.hostname}:${address.port}` : address.path
  yield* Effect.logInfo(`Postline ${serverVersion} is listening on http://${listening}, with ${database.words}`).pipe(
    Effect.annotateLogs({ address: listening, version: serverVersion, ...database.fields })
  )
  yield* Effect.addFinalizer(() => Effect.logInfo("Postline is stopping: finishing the requests in flight"))
}))

/** `layer` (the API, which needs the listener and the deployment), followed by the start line. */
export const withStartStopLog = <A, E, R>(layer: Layer.Layer<A, E, R>) => StartStopLogLive.pipe(Layer.provideMerge(layer))

/** The last line of a stop signal, once everything has closed. */
export const logStopped = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.onInterrupt(self, () => Effect.logInfo("Postline has stopped"))
