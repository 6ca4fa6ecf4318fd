import type { ContentLimits, ContentProblem } from "./SocialProvider.js"

const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" })

/** Grapheme clusters: an emoji with skin tone or a flag counts as one, as Bluesky and Mastodon count. */
export const graphemeLength = (text: string): number => {
  let length = 0
  for (const _ of graphemes.segment(text)) length += 1
  return length
}

// Mastodon finds URLs with twitter-text (scheme required) and mentions with Account::MENTION_RE; these
// follow them closely enough for counting. Trailing punctuation, a closing parenthesis included, is not
// part of a URL here: where twitter-text keeps a balanced one, this counts one character too many, never too few.
const urlPattern = /(?<![\p{L}\p{N}@$#])https?:\/\/[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*(?::\d+)?(?:[/?#][^\s]*?)?(?=[.,:;!?'")]*(?:\s|$))/gu
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
