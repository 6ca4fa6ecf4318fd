import { describe, expect, it } from "@effect/vitest"
import { findLinks } from "../src/Links/Detection.js"
import { graphemeLength, mastodonLength } from "../src/Providers/TextLength.js"

// Every post-now and every estimate reads the post's text for links and counts its length: work that grows
// faster than the text lets one member hold the CPU with a 10,000-character post. The bound is on growth,
// not on time: a text `factor` times longer may take about `factor` times longer (linear), and
// `allowedGrowth` leaves room for a busy machine, far below what quadratic work gives (`factor` squared).
const size = 1_000
const factor = 16
const allowedGrowth = 3 * factor

const mastodonLength23 = (text: string) => mastodonLength(text, 23)

const closingBrackets = (n: number) => "https://a.b" + ")".repeat(n)
const punctuationThenWord = (n: number) => "https://a.b/" + ".".repeat(n) + "x"
const schemesOnly = (n: number) => "https://".repeat(n / 8)

/** Each way of reading a text, with texts of about `n` code units built to be costly for it. */
const cases: ReadonlyArray<readonly [string, (text: string) => unknown, (n: number) => string]> = [
  ["links: closing brackets after a URL", findLinks, closingBrackets],
  ["links: unbalanced brackets after a URL", findLinks, (n) => "https://a.b/" + "(]".repeat(n / 2)],
  ["links: punctuation then a word after a URL", findLinks, punctuationThenWord],
  ["links: schemes only", findLinks, schemesOnly],
  ["links: many links with trailing brackets", findLinks, (n) => "https://a.b)) ".repeat(n / 14)],
  ["Mastodon length: punctuation then a word after a URL", mastodonLength23, punctuationThenWord],
  ["Mastodon length: closing brackets then a word after a URL", mastodonLength23, (n) => "https://a.b/" + ")".repeat(n) + "x"],
  ["Mastodon length: schemes only", mastodonLength23, schemesOnly],
  ["Mastodon length: a host of many labels, then punctuation", mastodonLength23, (n) => "https://" + "a.".repeat(n / 2) + "!x"],
  ["Mastodon length: mentions", mastodonLength23, (n) => "@a".repeat(n / 2)],
  ["Mastodon length: a mention with a long run of separators", mastodonLength23, (n) => "@a" + ".-".repeat(n / 2) + "!"],
  ["graphemes: plain letters", graphemeLength, (n) => "a".repeat(n)],
  ["graphemes: closing brackets after a URL", graphemeLength, closingBrackets],
  ["graphemes: emoji with skin tones", graphemeLength, (n) => "👍🏽".repeat(n / 4)],
  ["graphemes: one long cluster of combining marks", graphemeLength, (n) => "a" + "\u0301".repeat(n)]
]

/** CPU time of this process in milliseconds: unlike the clock, it does not count time other processes took. */
const cpuTime = () => {
  const { system, user } = process.cpuUsage()
  return (user + system) / 1000
}

/** The least CPU time of several runs of `calls` calls: the run that the machine's other work disturbed least. */
const leastTime = (run: (text: string) => unknown, text: string, calls: number) => {
  let least = Infinity
  for (let trial = 0; trial < 5; trial++) {
    const started = cpuTime()
    for (let call = 0; call < calls; call++) run(text)
    least = Math.min(least, cpuTime() - started)
  }
  return least
}

/** How many times longer `run` takes on a text `factor` times longer. */
const growth = (run: (text: string) => unknown, make: (n: number) => string) => {
  const small = make(size)
  const large = make(size * factor)
  // Compiled for both before either is timed: the first case would otherwise time the compiler's work.
  for (let warmup = 0; warmup < 3; warmup++) run(large), run(small)
  // Enough calls for the small text to take about 2 ms of CPU, well above the clock's resolution.
  const calls = Math.max(1, Math.ceil(2 / Math.max(leastTime(run, small, 1), 0.01)))
  return leastTime(run, large, calls) / leastTime(run, small, calls)
}

describe("reading a post's text takes time in proportion to its length", () => {
  for (const [name, run, make] of cases) {
    it(name, () => {
      expect(growth(run, make)).toBeLessThan(allowedGrowth)
    })
  }
})

describe("grapheme counting", () => {
  const segmenter = new Intl.Segmenter("en", { granularity: "grapheme" })
  const whole = (text: string) => Array.from(segmenter.segment(text)).length

  it("counts as segmenting the whole text does, whatever cluster lies across a window's edge", () => {
    const clusters = [
      "👨‍👩‍👧",
      "🇫🇷",
      "👍🏽",
      "\r\n",
      "e\u0301",
      "\u1100\u1161\u11A8",
      "\u0600a",
      "क्ष",
      "a" + "\u0301".repeat(700)
    ]
    for (const cluster of clusters) {
      for (let before = 240; before < 270; before++) {
        const text = "a".repeat(before) + cluster + "b" + cluster.repeat(3) + "🇫🇷".repeat(200) + "🇫" + cluster
        expect(graphemeLength(text), JSON.stringify(cluster) + ` after ${before}`).toBe(whole(text))
      }
    }
  })
})
