import { RateLimiter } from "@effect/experimental"
import { Config, ConfigError, Duration, Effect, Either, Layer, Option, Redacted, Schedule } from "effect"
import type { RedisOptions } from "ioredis"
import { lazyModule } from "../LazyModule.js"

// The Redis client is loaded only when it is configured.
export const RedisStoreModule = lazyModule(
  "@effect/experimental/RateLimiter/Redis",
  () => import("@effect/experimental/RateLimiter/Redis"),
  { layerStore: "function" }
)

/**
 * ioredis options from a `redis://` or `rediss://` URL. Commands fail at once while Redis is unreachable (no
 * offline queue) and within half a second otherwise, so that a request never waits on it: it is served
 * unlimited instead (see RequestLimits).
 */
const redisOptions = (url: URL): RedisOptions => ({
  host: url.hostname.replace(/^\[|\]$/g, ""),
  port: url.port === "" ? 6379 : Number(url.port),
  ...(url.username !== "" ? { username: decodeURIComponent(url.username) } : {}),
  ...(url.password !== "" ? { password: decodeURIComponent(url.password) } : {}),
  db: Number(url.pathname.slice(1) || 0),
  ...(url.protocol === "rediss:" ? { tls: {} } : {}),
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 500,
  connectTimeout: 2000,
  // Reconnect for ever, at most every 10 seconds.
  retryStrategy: (times: number) => Math.min(times * 500, 10_000)
})

// The URL may hold a password: the error does not repeat it.
const redisUrl = Config.redacted("REDIS_URL").pipe(
  Config.mapOrFail((url) => {
    const parsed = URL.canParse(Redacted.value(url)) ? new URL(Redacted.value(url)) : undefined
    return parsed !== undefined && (parsed.protocol === "redis:" || parsed.protocol === "rediss:")
      ? Either.right(parsed)
      : Either.left(ConfigError.InvalidData([], "REDIS_URL must be a redis:// or rediss:// URL"))
  })
)

const config = Config.all({
  url: Config.option(redisUrl),
  prefix: Config.string("REDIS_KEY_PREFIX").pipe(Config.withDefault("postline:ratelimit:"))
})

/**
 * Redis is connected to in the background, and commands fail until it is: the server waits for a first
 * answer, up to 3 seconds, so that its first requests are counted. Without one it starts anyway.
 */
const firstAnswer = (limiter: RateLimiter.RateLimiter) =>
  limiter.consume({ key: "startup", limit: 1, window: Duration.seconds(1) }).pipe(
    // Redis answered, whether or not another process starting at once took the token.
    Effect.catchIf((error) => error.reason === "Exceeded", () => Effect.void),
    Effect.retry(Schedule.spaced(Duration.millis(50))),
    Effect.timeout(Duration.seconds(3)),
    Effect.ignore
  )

/**
 * The counts of every limit: in Redis when `REDIS_URL` is set, so that every server process shares them, else
 * in this process's memory (the embedded database has one process).
 */
export const RateLimiterLive = Layer.effect(RateLimiter.RateLimiter, Effect.tap(RateLimiter.make, firstAnswer)).pipe(
  Layer.provide(Layer.unwrapEffect(Effect.map(config, ({ prefix, url }) =>
    Option.match(url, {
      onNone: () => RateLimiter.layerStoreMemory,
      onSome: (url) => Layer.unwrapEffect(Effect.map(RedisStoreModule.load, (redis) => redis.layerStore({ ...redisOptions(url), prefix })))
    }))))
)
