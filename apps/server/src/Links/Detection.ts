import { randomBytes } from "node:crypto"

/** A link as written in a text: where it starts and ends (UTF-16 indices), and what it says. */
export interface FoundLink {
  readonly start: number
  readonly end: number
  readonly url: string
}

// A scheme, not glued to a word before it, then everything up to white space, an invisible character, or
// one that people do not write in a URL: quotes, angle brackets, controls, emoji, and the punctuation of
// Chinese and Japanese, which is written with no space after a URL (`。`, `、`, `「`, fullwidth `，` `！`…).
const candidates =
  /(?<![\p{L}\p{N}_])https?:\/\/[^\s\u0000-\u001F\u007F<>"`\u200B-\u200D\u2060\uFEFF\u3000-\u303F\uFF01\uFF08\uFF09\uFF0C\uFF0E\uFF1A\uFF1B\uFF1F\p{Extended_Pictographic}]+/giu

// Punctuation that can end a URL; any other at its end belongs to the sentence around it.
const keptAtEnd = new Set(["/", "#", "%", "&", "@", "*", "-", "_"])
const openerOf: Record<string, string> = { ")": "(", "]": "[", "}": "{" }
const punctuation = /\p{P}/u

const brackets = ["(", ")", "[", "]", "{", "}"]

/**
 * Drops what follows a URL in a sentence: trailing punctuation (`.`, `,`, `!`, quotes, `。`…) and a
 * closing bracket that the URL did not open (`(see https://example.com)`), while a balanced one stays
 * (`https://en.wikipedia.org/wiki/Mercury_(planet)`).
 */
const trimEnd = (candidate: string) => {
  // Counted once and kept up to date as characters are dropped, so that trimming a URL followed by
  // thousands of `)` stays linear.
  const counts = new Map(brackets.map((bracket) => [bracket, 0]))
  for (const character of candidate) {
    const count = counts.get(character)
    if (count !== undefined) counts.set(character, count + 1)
  }
  let end = candidate.length
  for (; end > 0; end--) {
    const last = candidate[end - 1]!
    const opener = openerOf[last]
    if (opener !== undefined) {
      if (counts.get(opener)! >= counts.get(last)!) break
    } else if (!punctuation.test(last) || keptAtEnd.has(last)) {
      break
    }
    const count = counts.get(last)
    if (count !== undefined) counts.set(last, count - 1)
  }
  return candidate.slice(0, end)
}

const isLink = (url: string) => {
  if (!URL.canParse(url)) return false
  const { hostname, protocol } = new URL(url)
  return (protocol === "http:" || protocol === "https:") && /[\p{L}\p{N}]/u.test(hostname)
}

/** The http(s) links of a text, as its author wrote them, in order. */
export const findLinks = (text: string): Array<FoundLink> =>
  Array.from(text.matchAll(candidates), (match) => ({ start: match.index, url: trimEnd(match[0]) }))
    .filter(({ url }) => isLink(url))
    .map(({ start, url }) => ({ start, end: start + url.length, url }))

/** The text with each link replaced by what `replacement` gives for its URL. */
export const replaceLinks = (text: string, links: ReadonlyArray<FoundLink>, replacement: (url: string) => string) => {
  let result = ""
  let position = 0
  for (const link of links) {
    result += text.slice(position, link.start) + replacement(link.url)
    position = link.end
  }
  return result + text.slice(position)
}

/** Characters of a code: 96 random bits in base64url, 16 characters. */
export const codeLength = 16

export const newCode = () => randomBytes(12).toString("base64url")

/** What a code looks like; anything else is no code of ours. */
export const codeShape = /^[A-Za-z0-9_-]{16}$/
