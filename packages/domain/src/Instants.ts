import type { LazyArbitrary } from "effect/Arbitrary"

// An instant with an explicit offset, so that it means the same on every machine. Date.parse
// forgives 30 February and offsets past ±14:00; PostgreSQL does not, so neither does this
// pattern, which is also the document's: calendar days (29 February in leap years only),
// hours to 23, offsets to ±14:59, seconds and up to 9 decimals optional.
const day31 = "(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
const day30 = "(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
const february = "02-(?:0[1-9]|1[0-9]|2[0-8])"
const leapYear = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
const date = `(?:[0-9]{4}-(?:${day31}|${day30}|${february})|${leapYear}-02-29)`
const time = "[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{1,9})?)?"
const offset = "(?:[Zz]|[+-](?:0[0-9]|1[0-4]):[0-5][0-9])"

export const instantWithOffsetPattern = `^${date}${time}${offset}$`

const instantWithOffset = new RegExp(instantWithOffsetPattern)

export const isInstantWithOffset = (s: string): boolean => instantWithOffset.test(s)

const twoDigits = (n: number) => String(n).padStart(2, "0")

/** For property tests: instants between `min` and `max`, written with offsets from -14:00 to +14:00. */
export const instantArbitrary = (min: Date, max: Date): LazyArbitrary<string> => (fc) =>
  fc.tuple(fc.date({ min, max, noInvalidDate: true }), fc.integer({ min: -14 * 60, max: 14 * 60 })).map(([date, offset]) => {
    const local = new Date(date.getTime() + offset * 60_000).toISOString().slice(0, 19)
    const sign = offset < 0 ? "-" : "+"
    return `${local}${sign}${twoDigits(Math.floor(Math.abs(offset) / 60))}:${twoDigits(Math.abs(offset) % 60)}`
  })
