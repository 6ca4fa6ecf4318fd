/** When a published post's engagement is read, counted from its publishing: 15 min, 1 h, 6 h, 1 d, 3 d, 7 d, 30 d. */
export const snapshotOffsetsSeconds: ReadonlyArray<number> = [
  15 * 60,
  3_600,
  6 * 3_600,
  86_400,
  3 * 86_400,
  7 * 86_400,
  30 * 86_400
]

/** The next read after `now` of a post published at `publishedAt`, or null when the schedule has ended. */
export const nextSnapshotAt = (publishedAt: Date, now: Date): Date | null => {
  for (const seconds of snapshotOffsetsSeconds) {
    const at = publishedAt.getTime() + seconds * 1000
    if (at > now.getTime()) return new Date(at)
  }
  return null
}

/** An account's counts are read once a day. */
export const accountSnapshotSeconds = 86_400

// A read that failed for a while (the provider down, a timeout) is tried again this much later, for at most an
// hour after the point of the schedule it missed and never past the next point.
const retrySeconds = 300
const retryForSeconds = 3_600

/** When to try again a read at `now` that failed for a while: soon, within its retries; else the next point. */
export const retryAt = (publishedAt: Date, now: Date): Date | null => {
  const next = nextSnapshotAt(publishedAt, now)
  const missed = [...snapshotOffsetsSeconds].reverse()
    .map((seconds) => publishedAt.getTime() + seconds * 1000)
    .find((at) => at <= now.getTime())
  const retry = now.getTime() + retrySeconds * 1000
  const within = missed !== undefined && retry <= missed + retryForSeconds * 1000 && (next === null || retry < next.getTime())
  return within ? new Date(retry) : next
}
