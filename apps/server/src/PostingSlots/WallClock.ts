/**
 * Wall-clock times in IANA time zones, with the runtime's own tz database
 * (`Intl.DateTimeFormat`), so that no library has to be kept in step with it.
 * Instants are milliseconds since the epoch; wall-clock times are minutes.
 */

/** A date and time as a clock in some zone shows it. */
export interface WallClock {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hour: number
  readonly minute: number
}

/** A posting slot: an ISO weekday (1 Monday … 7 Sunday) and a time `HH:MM`. */
export interface Slot {
  readonly weekday: number
  readonly time: string
}

const minute = 60_000
const day = 24 * 60 * minute

const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (timeZone: string) => {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    })
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** The zone's clock at the instant, to the second, as if that clock were UTC. */
const clockAsUtc = (timeZone: string, instant: number) => {
  const fields: Record<string, number> = {}
  for (const part of formatterFor(timeZone).formatToParts(instant)) {
    if (part.type !== "literal") fields[part.type] = Number(part.value)
  }
  // Some ICU versions write midnight as 24 even with h23.
  return Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour % 24, fields.minute, fields.second)
}

/** How far the zone's clock is ahead of UTC at the instant, in milliseconds (whole seconds). */
export const offsetAt = (timeZone: string, instant: number): number =>
  clockAsUtc(timeZone, instant) - Math.floor(instant / 1000) * 1000

/** What a clock in the zone shows at the instant, to the minute. */
export const wallClockAt = (timeZone: string, instant: number): WallClock => {
  const clock = new Date(clockAsUtc(timeZone, instant))
  return {
    year: clock.getUTCFullYear(),
    month: clock.getUTCMonth() + 1,
    day: clock.getUTCDate(),
    hour: clock.getUTCHours(),
    minute: clock.getUTCMinutes()
  }
}

const asUtc = (clock: WallClock) => Date.UTC(clock.year, clock.month - 1, clock.day, clock.hour, clock.minute)

/**
 * The instant at which a clock in the zone shows `clock`. Where the clock
 * shows it twice (the hour repeated when summer time ends), the first; where
 * it never shows it (the hour skipped when summer time starts), the first
 * instant after the gap, when the clock jumps past it.
 */
export const instantOf = (timeZone: string, clock: WallClock): number => {
  const local = asUtc(clock)
  // Offsets change at most once within a day either side of any instant the clock could mean.
  const offsets = [...new Set([offsetAt(timeZone, local - day), offsetAt(timeZone, local), offsetAt(timeZone, local + day)])]
  const shown = offsets.map((offset) => local - offset).filter((instant) => asUtc(wallClockAt(timeZone, instant)) === local)
  if (shown.length > 0) return Math.min(...shown)
  if (offsets.length === 1) return local - offsets[0]
  // A gap: the clock jumps from before `local` to after it. Between the instant `local` would be with the
  // largest offset (still before the jump) and with the smallest (after it), find the jump, to the second.
  let before = Math.floor((local - Math.max(...offsets)) / 1000)
  let after = Math.ceil((local - Math.min(...offsets)) / 1000)
  const offsetAfter = offsetAt(timeZone, after * 1000)
  while (after - before > 1) {
    const middle = Math.floor((before + after) / 2)
    if (offsetAt(timeZone, middle * 1000) === offsetAfter) after = middle
    else before = middle
  }
  return after * 1000
}

/** ISO weekday of a calendar date: 1 Monday … 7 Sunday. */
export const isoWeekday = (year: number, month: number, dayOfMonth: number): number =>
  new Date(Date.UTC(year, month - 1, dayOfMonth)).getUTCDay() || 7

/** Minutes since midnight of `HH:MM`. */
export const minutesOf = (time: string): number => {
  const [hours, minutes] = time.split(":").map(Number)
  return hours * 60 + minutes
}

/**
 * The instants of the slots, strictly after `after`, over the next `days`
 * calendar days of the zone, distinct and in order. Two slots can fall on one
 * instant (one in a skipped hour, moved to its end where another slot is).
 */
export const slotInstants = (
  slots: ReadonlyArray<Slot>,
  timeZone: string,
  after: number,
  days: number
): Array<number> => {
  const today = wallClockAt(timeZone, after)
  const instants = new Set<number>()
  // From the day before: a slot late on it can be moved past midnight by a gap.
  for (let offset = -1; offset <= days; offset++) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + offset))
    const [year, month, dayOfMonth] = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()]
    const weekday = isoWeekday(year, month, dayOfMonth)
    for (const slot of slots) {
      if (slot.weekday !== weekday) continue
      const minutes = minutesOf(slot.time)
      const instant = instantOf(timeZone, { year, month, day: dayOfMonth, hour: Math.floor(minutes / 60), minute: minutes % 60 })
      if (instant > after) instants.add(instant)
    }
  }
  return [...instants].sort((a, b) => a - b)
}
