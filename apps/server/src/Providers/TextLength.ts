import type { ContentLimits, ContentProblem } from "./SocialProvider.js"

const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" })

// Node's Intl.Segmenter spends time in proportion to the whole text at each segment it gives, quadratic
// on a long text: a text is segmented a window of code units at a time.
const graphemeWindow = 256

const isHighSurrogate = (code: number) => code >= 0xD800 && code <= 0xDBFF

/**
 * Grapheme clusters: an emoji with skin tone or a flag counts as one, as Bluesky and Mastodon count.
 * A window's last cluster may be cut short by the window's end, so it is counted in the next window,
 * which starts where it starts; every earlier boundary is one of the whole text (each boundary depends on
 * the text before it and the next code point only). A cluster longer than a window widens the window.
 */
export const graphemeLength = (text: string): number => {
  let length = 0
  let start = 0
  let size = graphemeWindow
  for (;;) {
    let end = start + size
    if (end >= text.length) {
      for (const _ of graphemes.segment(text.slice(start))) length += 1
      return length
    }
    // A window ends between code points, never inside a surrogate pair.
    if (isHighSurrogate(text.charCodeAt(end - 1))) end -= 1
    let clusters = 0
    let lastStart = 0
    for (const { index } of graphemes.segment(text.slice(start, end))) {
      clusters += 1
      lastStart = index
    }
    if (clusters === 1) {
      size *= 2
    } else {
      length += clusters - 1
      start += lastStart
      size = graphemeWindow
    }
  }
}

// Mastodon finds URLs with twitter-text (scheme required) and mentions with Account::MENTION_RE; these
// follow them closely enough for counting. Trailing punctuation, a closing parenthesis included, is not
// part of a URL here: where twitter-text keeps a balanced one, this counts one character too many, never too few.
// A path runs to its last character that is not such punctuation, matched greedily to stay linear on long
// runs of punctuation.
const urlPattern = /(?<![\p{L}\p{N}@$#])https?:\/\/[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*(?::\d+)?(?:[/?#](?:[^\s]*[^\s.,:;!?'")])?)?(?=[.,:;!?'")]*(?:\s|$))/gu
const mentionPattern = /(?<![=/\p{L}\p{N}_])@([a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)(?:@[\p{L}\p{N}_]+(?:[.-]+[\p{L}\p{N}_]+)*)?/giu

interface Entity {
  readonly start: number
  readonly end: number
  readonly replacement: string
}

/**
 * The length Mastodon checks against its limit: every URL counts as `urlLength` characters (23 unless the
 * instance says otherwise) and a mention of a remote account as its username only (`@bob@example.org`
 * counts as `@bob`); the rest in grapheme clusters.
 */
export const mastodonLength = (text: string, urlLength: number): number => {
  const entities: Array<Entity> = [
    ...Array.from(text.matchAll(urlPattern), (match) => ({
      start: match.index,
      end: match.index + match[0].length,
      replacement: "x".repeat(urlLength)
    })),
    ...Array.from(text.matchAll(mentionPattern), (match) => ({
      start: match.index,
      end: match.index + match[0].length,
      replacement: `@${match[1]}`
    }))
  ].sort((a, b) => a.start - b.start)
  let countable = ""
  let position = 0
  for (const entity of entities) {
    // Overlapping entities (a mention inside a URL): the first one wins.
    if (entity.start < position) continue
    countable += text.slice(position, entity.start) + entity.replacement
    position = entity.end
  }
  return graphemeLength(countable + text.slice(position))
}

/** The problems of a text of this length under these limits. */
export const lengthProblems = (text: string, length: number, limits: ContentLimits): ReadonlyArray<ContentProblem> => {
  if (text.trim() === "") return [{ code: "empty", message: "The text is empty" }]
  if (limits.maxLength !== null && length > limits.maxLength) {
    return [{
      code: "too_long",
      message: `The text is ${length} characters long; the limit is ${limits.maxLength}`,
      length,
      maxLength: limits.maxLength
    }]
  }
  return []
}
