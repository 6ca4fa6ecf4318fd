import { ClusterWorkflowEngine, RunnerAddress, SingleRunner } from "@effect/cluster"
import type { ShardingConfig } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { Config, Context, Duration, Effect, Layer, Option } from "effect"

const milliseconds = (name: string, fallback: number) =>
  Config.integer(name).pipe(Config.withDefault(fallback), Config.map(Duration.millis))

/**
 * How often due wake-ups are looked for: they are found only by polling, so
 * this bounds how late a scheduled post can be (`SCHEDULER_POLL_MS`).
 */
const pollInterval = milliseconds("SCHEDULER_POLL_MS", 1000)

/**
 * The cluster reads plain environment names of its own (PORT and HOST among
 * them, which are the API's), so every address is given here. A single runner
 * is reached by nobody: its address only names it.
 */
const singleRunnerAddresses: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  runnerAddress: Option.some(RunnerAddress.make("localhost", 0)),
  runnerListenAddress: Option.none()
}

/**
 * Whether this process is the only one on its database (the embedded one opens it alone): what an earlier
 * process left unfinished is then a dead process's, to be finished at once.
 */
export class SoleProcess extends Context.Reference<SoleProcess>()("SoleProcess", { defaultValue: () => false }) {}

/**
 * One process: the workflows run here, and their messages are kept in the
 * database, so that what was due while the server was down runs at start.
 * (The cluster's own runner registry cannot use the embedded database, which
 * has one session: it would hold it for good.)
 */
export const layerSingleProcess = Layer.unwrapEffect(
  Effect.map(pollInterval, (entityMessagePollInterval) =>
    ClusterWorkflowEngine.layer.pipe(
      Layer.provideMerge(SingleRunner.layer({
        runnerStorage: "memory",
        shardingConfig: { ...singleRunnerAddresses, entityMessagePollInterval }
      })),
      Layer.merge(Layer.succeed(SoleProcess, true))
    ))
)

/**
 * Several processes on one PostgreSQL database: each is a runner that the
 * others reach at `CLUSTER_HOST:CLUSTER_PORT` (distinct per process), and the
 * work is spread over them. A runner that stops heartbeating for
 * `CLUSTER_LOCK_EXPIRATION_MS` loses its share to the others.
 */
export const layerCluster = Layer.unwrapEffect(
  Effect.gen(function*() {
    const host = yield* Config.string("CLUSTER_HOST").pipe(Config.withDefault("localhost"))
    const port = yield* Config.port("CLUSTER_PORT").pipe(Config.withDefault(34431))
    const listenHost = yield* Config.string("CLUSTER_LISTEN_HOST").pipe(Config.withDefault("0.0.0.0"))
    const expiration = yield* milliseconds("CLUSTER_LOCK_EXPIRATION_MS", 6000)
    return ClusterWorkflowEngine.layer.pipe(
      Layer.provideMerge(NodeClusterSocket.layer({
        storage: "sql",
        shardingConfig: {
          runnerAddress: Option.some(RunnerAddress.make(host, port)),
          runnerListenAddress: Option.some(RunnerAddress.make(listenHost, port)),
          entityMessagePollInterval: yield* pollInterval,
          shardLockExpiration: expiration,
          shardLockRefreshInterval: Duration.divide(expiration, 3).pipe(Option.getOrElse(() => Duration.seconds(2))),
          refreshAssignmentsInterval: Duration.seconds(1),
          runnerHealthCheckInterval: Duration.seconds(5)
        }
      }))
    )
  })
)
