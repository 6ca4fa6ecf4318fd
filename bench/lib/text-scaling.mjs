// S12 (bench/README.md): how the work of reading a post's text grows with its length. Every post-now and every
// estimate reads the text for links and counts its length: work that grows faster than the text lets one member
// hold the CPU with a 10,000-character post. Measured in CPU time, so it is a figure, not a test (issue 35).
import { findLinks } from "../../apps/server/src/Links/Detection.ts"
import { graphemeLength, mastodonLength } from "../../apps/server/src/Providers/TextLength.ts"

const size = 1_000
const factor = 16
/** Linear work gives about `factor`; quadratic gives `factor` squared. Reported beside each figure, not enforced. */
export const expectedGrowthBelow = 3 * factor

const mastodonLength23 = (text) => mastodonLength(text, 23)
const closingBrackets = (n) => "https://a.b" + ")".repeat(n)
const punctuationThenWord = (n) => "https://a.b/" + ".".repeat(n) + "x"
const schemesOnly = (n) => "https://".repeat(n / 8)

/** Each way of reading a text, with texts of about `n` code units built to be costly for it. */
const cases = [
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
const leastTime = (run, text, calls) => {
  let least = Infinity
  for (let trial = 0; trial < 5; trial++) {
    const started = cpuTime()
    for (let call = 0; call < calls; call++) run(text)
    least = Math.min(least, cpuTime() - started)
  }
  return least
}

/** How many times longer `run` takes on a text `factor` times longer. */
const growth = (run, make) => {
  const small = make(size)
  const large = make(size * factor)
  // Compiled for both before either is timed: the first case would otherwise time the compiler's work.
  for (let warmup = 0; warmup < 3; warmup++) run(large), run(small)
  // Enough calls for the small text to take about 2 ms of CPU, well above the clock's resolution.
  const calls = Math.max(1, Math.ceil(2 / Math.max(leastTime(run, small, 1), 0.01)))
  return leastTime(run, large, calls) / leastTime(run, small, calls)
}

/** The growth of each case, in this process (the functions are pure: no server is needed). */
export const measureTextScaling = () => ({
  size,
  factor,
  expectedGrowthBelow,
  results: cases.map(([name, run, make]) => ({ name, growth: growth(run, make) }))
})

export const describeTextScaling = (r) =>
  `  ${r.name}: ${r.growth.toFixed(1)}x${r.growth >= expectedGrowthBelow ? `  (at or above ${expectedGrowthBelow}x: more than linear?)` : ""}`
