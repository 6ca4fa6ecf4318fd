import twitterText from "twitter-text"
import type { ContentLimits, ContentProblem } from "./SocialProvider.js"
import { lengthProblems } from "./TextLength.js"

/**
 * A text's length as X counts it, with X's own library (twitter-text 3, the configuration X applies since
 * 2018): normalized (NFC), a character of Latin, Cyrillic and similar scripts weighs one, any other (CJK, an
 * emoji, whatever its sequence) two, and every URL 23 whatever its length.
 */
export const xWeightedLength = (text: string): number => twitterText.parseTweet(text).weightedLength

/** The problems X would find in a text's length. */
export const xTextProblems = (text: string, limits: ContentLimits): ReadonlyArray<ContentProblem> =>
  lengthProblems(text, xWeightedLength(text), limits)
