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
