import { Config, Context, Data, type Duration, Effect, Layer, Option, Redacted } from "effect"
import { type PostgresTimeouts, PostgresTimeoutsConfig } from "./Database/Postgres.js"
import { parsePostgresUrl, type PostgresTarget } from "./Database/PostgresTarget.js"
import { StartRetryConfig } from "./Database/StartRetry.js"

/**
 * Where the server keeps its data, read once at the edge: a PostgreSQL server that several processes may
 * share (`DATABASE_URL`, its timeouts and how long to wait for it at start), or the embedded database in a
 * data folder that one process opens alone. It picks the SQL layer, whether processes take turns at start,
 * where the credentials key may come from, and whether what an earlier process left is a dead one's. A
 * `DATABASE_URL` that is no PostgreSQL URL stops the start here (StartupError), before any connection.
 */
export type Deployment = Data.TaggedEnum<{
  Postgres: {
    readonly url: Redacted.Redacted
    readonly target: PostgresTarget
    readonly timeouts: PostgresTimeouts
    readonly startRetry: Duration.Duration
  }
  Embedded: { readonly dataDir: string; readonly fsync: boolean }
}>
const { Embedded, Postgres } = Data.taggedEnum<Deployment>()

export class CurrentDeployment extends Context.Tag("CurrentDeployment")<CurrentDeployment, Deployment>() {}

const readDeployment = Effect.gen(function*() {
  const url = yield* Config.option(Config.redacted("DATABASE_URL"))
  if (Option.isSome(url)) {
    const target = yield* parsePostgresUrl(Redacted.value(url.value))
    return Postgres({ url: url.value, target, timeouts: yield* PostgresTimeoutsConfig, startRetry: yield* StartRetryConfig })
  }
  return Embedded({
    dataDir: yield* Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
    fsync: yield* Config.boolean("EMBEDDED_FSYNC").pipe(Config.withDefault(true))
  })
})

export const DeploymentLive = Layer.effect(CurrentDeployment, readDeployment)
