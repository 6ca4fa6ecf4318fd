/**
 * Seconds to wait before trying again, from a rate-limited answer's headers, in the order of precedence:
 * `Retry-After` (seconds or an HTTP date), `RateLimit-Reset` (Bluesky: the reset's time in Unix seconds;
 * the IETF draft: seconds from now), `X-RateLimit-Reset` (Mastodon: an ISO 8601 time). Undefined when
 * none can be read.
 */
export const retryAfterSeconds = (header: (name: string) => string | null | undefined, now: Date): number | undefined => {
  const untilTime = (time: number) => Number.isNaN(time) ? undefined : Math.max(0, Math.ceil((time - now.getTime()) / 1000))
  const retryAfter = header("retry-after")?.trim()
  if (retryAfter) return /^\d+$/.test(retryAfter) ? Number(retryAfter) : untilTime(Date.parse(retryAfter))
  const reset = header("ratelimit-reset")?.trim()
  if (reset && /^\d+$/.test(reset)) {
    const value = Number(reset)
    // A delta is never this large; a Unix time is never this small.
    return value > 1_000_000_000 ? untilTime(value * 1000) : value
  }
  const mastodonReset = header("x-ratelimit-reset")?.trim()
  return mastodonReset ? untilTime(Date.parse(mastodonReset)) : undefined
}
