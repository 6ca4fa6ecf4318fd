import { invalidUnless, visibleText } from "./Fields.js"

export const maxAltTextLength = 1500

/** What a screen reader says for an image: Mastodon takes at most 1,500 characters, Bluesky more. */
export const AltText = visibleText({ blankRanges: "\\s\\u0085\\u200B-\\u200D\\u2060", minLength: 1, maxLength: maxAltTextLength })
  .annotations({
    identifier: "AltText",
    description: `Alt text: 1 to ${maxAltTextLength} characters, not blank`,
    ...invalidUnless(`must be a string of 1 to ${maxAltTextLength} characters, not blank`)
  })
