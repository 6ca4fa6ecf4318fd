import { describe, expect, it } from "@effect/vitest"
import { instantOf, isoWeekday, offsetAt, type Slot, slotInstants, wallClockAt } from "../src/PostingSlots/WallClock.js"

const at = (iso: string) => Date.parse(iso)
const iso = (instant: number) => new Date(instant).toISOString()
const clock = (year: number, month: number, day: number, hour: number, minute: number) => ({ year, month, day, hour, minute })

/** The instants of the slots over `days` days after `after`, as ISO strings. */
const upcoming = (slots: ReadonlyArray<Slot>, timeZone: string, after: string, days = 7) =>
  slotInstants(slots, timeZone, at(after), days).map(iso)

/** The first instant of the slots after `after`. */
const next = (slots: ReadonlyArray<Slot>, timeZone: string, after: string) => upcoming(slots, timeZone, after)[0]

describe("wall clocks", () => {
  it("read offsets and clocks from the runtime's tz database", () => {
    expect(offsetAt("UTC", at("2025-06-01T12:00:00Z"))).toBe(0)
    expect(offsetAt("Asia/Kolkata", at("2025-01-01T00:00:00Z"))).toBe(330 * 60_000)
    expect(offsetAt("Europe/Paris", at("2025-01-15T12:00:00Z"))).toBe(60 * 60_000)
    expect(offsetAt("Europe/Paris", at("2025-07-15T12:00:00Z"))).toBe(120 * 60_000)
    // Before 1911, Paris kept its local mean time, +00:09:21.
    expect(offsetAt("Europe/Paris", at("1900-01-01T00:00:00Z"))).toBe((9 * 60 + 21) * 1000)
    expect(wallClockAt("America/New_York", at("2025-01-01T04:59:00Z"))).toEqual(clock(2024, 12, 31, 23, 59))
    expect(wallClockAt("Asia/Kolkata", at("2025-12-31T18:30:00Z"))).toEqual(clock(2026, 1, 1, 0, 0))
  })

  it("numbers weekdays from Monday (1) to Sunday (7)", () => {
    expect(isoWeekday(2025, 1, 6)).toBe(1)
    expect(isoWeekday(2025, 1, 12)).toBe(7)
    expect(isoWeekday(2024, 2, 29)).toBe(4)
  })

  describe("an ordinary time is the one instant the clock shows it", () => {
    it("UTC", () => expect(iso(instantOf("UTC", clock(2025, 1, 6, 9, 0)))).toBe("2025-01-06T09:00:00.000Z"))
    it("Asia/Kolkata, +05:30 all year", () => {
      expect(iso(instantOf("Asia/Kolkata", clock(2025, 1, 6, 9, 0)))).toBe("2025-01-06T03:30:00.000Z")
      expect(iso(instantOf("Asia/Kolkata", clock(2025, 7, 6, 9, 0)))).toBe("2025-07-06T03:30:00.000Z")
      // Early on Monday in Kolkata is still Sunday in UTC.
      expect(iso(instantOf("Asia/Kolkata", clock(2025, 1, 6, 0, 15)))).toBe("2025-01-05T18:45:00.000Z")
    })
    it("either side of a transition", () => {
      expect(iso(instantOf("Europe/Paris", clock(2025, 3, 30, 1, 59)))).toBe("2025-03-30T00:59:00.000Z")
      expect(iso(instantOf("Europe/Paris", clock(2025, 3, 30, 3, 0)))).toBe("2025-03-30T01:00:00.000Z")
      expect(iso(instantOf("Europe/Paris", clock(2025, 10, 26, 3, 0)))).toBe("2025-10-26T02:00:00.000Z")
      expect(iso(instantOf("America/New_York", clock(2025, 11, 2, 2, 30)))).toBe("2025-11-02T07:30:00.000Z")
    })
  })

  describe("a time in the hour skipped when summer time starts is the first instant after the gap", () => {
    it("Europe/Paris, 30 March 2025: 02:00 CET jumps to 03:00 CEST", () => {
      for (const minute of [0, 30, 59]) {
        expect(iso(instantOf("Europe/Paris", clock(2025, 3, 30, 2, minute)))).toBe("2025-03-30T01:00:00.000Z")
      }
    })
    it("America/New_York, 9 March 2025: 02:00 EST jumps to 03:00 EDT", () => {
      expect(iso(instantOf("America/New_York", clock(2025, 3, 9, 2, 30)))).toBe("2025-03-09T07:00:00.000Z")
    })
    it("America/Santiago, 7 September 2025: midnight jumps to 01:00", () => {
      expect(iso(instantOf("America/Santiago", clock(2025, 9, 7, 0, 30)))).toBe("2025-09-07T04:00:00.000Z")
    })
    it("Pacific/Apia skipped 30 December 2011 whole: any time of it is the start of the 31st", () => {
      expect(iso(instantOf("Pacific/Apia", clock(2011, 12, 30, 12, 0)))).toBe("2011-12-30T10:00:00.000Z")
      expect(wallClockAt("Pacific/Apia", at("2011-12-30T10:00:00Z"))).toEqual(clock(2011, 12, 31, 0, 0))
    })
  })

  describe("a time in the hour repeated when summer time ends is its first occurrence", () => {
    it("Europe/Paris, 26 October 2025: 02:30 CEST, not 02:30 CET an hour later", () => {
      expect(iso(instantOf("Europe/Paris", clock(2025, 10, 26, 2, 30)))).toBe("2025-10-26T00:30:00.000Z")
      expect(iso(instantOf("Europe/Paris", clock(2025, 10, 26, 2, 0)))).toBe("2025-10-26T00:00:00.000Z")
    })
    it("America/New_York, 2 November 2025: 01:30 EDT, not 01:30 EST", () => {
      expect(iso(instantOf("America/New_York", clock(2025, 11, 2, 1, 30)))).toBe("2025-11-02T05:30:00.000Z")
    })
  })

  describe("slot instants", () => {
    it("a weekly slot across both Paris transitions keeps its wall-clock time", () => {
      const sunday = [{ weekday: 7, time: "10:00" }]
      expect(upcoming(sunday, "Europe/Paris", "2025-03-20T00:00:00Z", 14)).toEqual([
        "2025-03-23T09:00:00.000Z",
        "2025-03-30T08:00:00.000Z"
      ])
      expect(upcoming(sunday, "Europe/Paris", "2025-10-20T00:00:00Z", 14)).toEqual([
        "2025-10-26T09:00:00.000Z",
        "2025-11-02T09:00:00.000Z"
      ])
    })

    it("slots in the skipped and the repeated hours", () => {
      expect(next([{ weekday: 7, time: "02:30" }], "Europe/Paris", "2025-03-29T00:00:00Z")).toBe("2025-03-30T01:00:00.000Z")
      expect(next([{ weekday: 7, time: "02:30" }], "Europe/Paris", "2025-10-25T00:00:00Z")).toBe("2025-10-26T00:30:00.000Z")
      expect(next([{ weekday: 7, time: "02:15" }], "America/New_York", "2025-03-08T00:00:00Z")).toBe("2025-03-09T07:00:00.000Z")
      expect(next([{ weekday: 7, time: "01:30" }], "America/New_York", "2025-11-01T00:00:00Z")).toBe("2025-11-02T05:30:00.000Z")
      // Once the first 01:30 has passed, the repeated one is not a slot: the next is a week later.
      expect(next([{ weekday: 7, time: "01:30" }], "America/New_York", "2025-11-02T05:30:00Z")).toBe("2025-11-09T06:30:00.000Z")
    })

    it("a skipped slot and the slot at the end of the gap are one instant", () => {
      const slots = [{ weekday: 7, time: "02:30" }, { weekday: 7, time: "03:00" }, { weekday: 7, time: "04:00" }]
      expect(upcoming(slots, "Europe/Paris", "2025-03-29T00:00:00Z", 2)).toEqual([
        "2025-03-30T01:00:00.000Z",
        "2025-03-30T02:00:00.000Z"
      ])
    })

    it("Asia/Kolkata: weekdays are the team's, not UTC's", () => {
      // Monday 00:15 in Kolkata is Sunday 18:45 UTC.
      expect(next([{ weekday: 1, time: "00:15" }], "Asia/Kolkata", "2025-01-05T18:00:00Z")).toBe("2025-01-05T18:45:00.000Z")
      expect(next([{ weekday: 7, time: "23:59" }], "Asia/Kolkata", "2025-01-05T18:00:00Z")).toBe("2025-01-05T18:29:00.000Z")
      expect(next([{ weekday: 1, time: "09:00" }], "Asia/Kolkata", "2025-01-06T03:30:00Z")).toBe("2025-01-13T03:30:00.000Z")
    })

    it("wraps from Sunday to Monday, and from one year to the next", () => {
      const slots = [{ weekday: 1, time: "08:00" }, { weekday: 7, time: "22:00" }]
      expect(upcoming(slots, "UTC", "2025-01-05T23:00:00Z")).toEqual([
        "2025-01-06T08:00:00.000Z",
        "2025-01-12T22:00:00.000Z"
      ])
      // 31 December 2025 is a Wednesday, 1 January 2026 a Thursday.
      expect(next([{ weekday: 4, time: "00:00" }], "UTC", "2025-12-31T23:30:00Z")).toBe("2026-01-01T00:00:00.000Z")
      expect(next([{ weekday: 4, time: "00:00" }], "Europe/Paris", "2025-12-31T22:59:00Z")).toBe("2025-12-31T23:00:00.000Z")
      expect(next([{ weekday: 3, time: "23:59" }], "America/New_York", "2026-01-01T04:59:00Z"))
        .toBe("2026-01-08T04:59:00.000Z")
    })

    it("a slot exactly now is not next: slots are strictly after now", () => {
      const monday = [{ weekday: 1, time: "09:00" }]
      expect(next(monday, "UTC", "2025-01-06T09:00:00.000Z")).toBe("2025-01-13T09:00:00.000Z")
      expect(next(monday, "UTC", "2025-01-06T08:59:59.999Z")).toBe("2025-01-06T09:00:00.000Z")
      expect(next(monday, "UTC", "2025-01-06T09:00:00.001Z")).toBe("2025-01-13T09:00:00.000Z")
    })

    it("none without slots", () => {
      expect(upcoming([], "Europe/Paris", "2025-01-01T00:00:00Z", 28)).toEqual([])
    })

    it("fifty slots: every one of them each week, in order, each at its wall-clock time", () => {
      const slots: Array<Slot> = Array.from({ length: 50 }, (_, index) => ({
        weekday: (index % 7) + 1,
        time: `${String((index * 5) % 24).padStart(2, "0")}:${String((index * 7) % 60).padStart(2, "0")}`
      }))
      expect(new Set(slots.map((slot) => `${slot.weekday} ${slot.time}`)).size).toBe(50)
      const week = 7 * 24 * 3_600_000
      const january = slotInstants(slots, "Europe/Paris", at("2025-01-06T00:00:00Z"), 14)
      expect(january.filter((instant) => instant < at("2025-01-06T00:00:00Z") + week)).toHaveLength(50)
      // Over two weeks with the start of summer time, one slot (Sunday 02:58) falls in the skipped hour.
      const after = "2025-03-24T00:00:00Z"
      const instants = slotInstants(slots, "Europe/Paris", at(after), 14)
      expect(instants).toEqual([...new Set(instants)].sort((a, b) => a - b))
      expect(instants.length).toBeGreaterThanOrEqual(100)
      for (const instant of instants) {
        const shown = wallClockAt("Europe/Paris", instant)
        const time = `${String(shown.hour).padStart(2, "0")}:${String(shown.minute).padStart(2, "0")}`
        const weekday = isoWeekday(shown.year, shown.month, shown.day)
        // 30 March has a skipped hour: a slot in it shows 03:00.
        const skipped = shown.day === 30 && shown.month === 3 && time === "03:00"
        expect(skipped || slots.some((slot) => slot.weekday === weekday && slot.time === time), iso(instant)).toBe(true)
      }
    })
  })
})
