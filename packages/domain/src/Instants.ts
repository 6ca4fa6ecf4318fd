// An instant with an explicit offset, so that it means the same on every machine.
const isoInstant = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/i

/** Date.parse forgives 30 February and offsets past ±14:00; PostgreSQL does not, so neither do we. */
export const isInstantWithOffset = (s: string): boolean => {
  const match = isoInstant.exec(s)
  if (match === null) return false
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = match.slice(1).map((part) => Number(part ?? 0))
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day &&
    hour < 24 && minute < 60 && second < 60 && offsetHours <= 14 && offsetMinutes < 60
}
