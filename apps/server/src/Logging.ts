import { Config, Effect, Logger, LogLevel, Order } from "effect"
import { StartupError } from "./StartupError.js"

// Parameters whose value is a secret: these names, and any name that mentions a token, secret, password or key.
const sensitiveNames = new Set(["code", "device_code", "user_code", "sig", "signature", "auth", "authorization", "session"])
const sensitiveParts = /token|secret|passw|pwd|credential|api_?key|^key$/

const isSensitive = (name: string) => {
  let decoded = name
  try {
    decoded = decodeURIComponent(name.replaceAll("+", " "))
  } catch {
    // A malformed escape is judged as written.
  }
  const lower = decoded.toLowerCase()
  return sensitiveNames.has(lower) || sensitiveParts.test(lower)
}

// A query parameter inside any text: `?name=value` or `&name=value`, the value ending at the next separator.
const queryParameter = /([?&])([^=&#\s"'\\]+)=([^&#\s"'\\]*)/g

/** The text with the value of every sensitive query parameter of the URLs in it replaced by `[REDACTED]`. */
export const redactSecretsInUrls = (text: string): string =>
  text.replace(queryParameter, (whole, separator: string, name: string) =>
    isSensitive(name) ? `${separator}${name}=[REDACTED]` : whole)

/**
 * JSON log lines on stdout, with secrets sent in URLs redacted: the access log writes each request's URL,
 * query string and all, and errors may quote it. The whole line is redacted, so no message, annotation or
 * cause that quotes a URL can leak one.
 */
export const JsonLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.jsonLogger.pipe(Logger.map(redactSecretsInUrls), Logger.withConsoleLog)
)

const levelsByRank = [...LogLevel.allLevels].sort(Order.mapInput(Order.number, (level: LogLevel.LogLevel) => level.ordinal))

/** `LOG_LEVEL` (any case; INFO when unset); an unknown one is a StartupError that lists the known ones. */
export const LogLevelConfig = Effect.gen(function*() {
  const text = yield* Config.string("LOG_LEVEL").pipe(Config.withDefault("INFO"))
  const level = levelsByRank.find((level) => level.label === text.trim().toUpperCase())
  if (level) return level
  return yield* new StartupError({
    message: `LOG_LEVEL "${text}" is not one of ${levelsByRank.map((level) => level.label).join(", ")}`
  })
})
