import { describe, expect, it } from "@effect/vitest"
import { graphemeLength } from "../src/Providers/TextLength.js"

// How the work of reading a text grows with its length is a figure of `pnpm bench` (S12, bench/lib/text-scaling.mjs):
// measured in CPU time, it is reported there, not asserted here (issue 35).

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
