import { Schema } from "effect"
import { invalidUnless } from "./Fields.js"
import { SocialAccountId } from "./Ids.js"

/** The most accounts one post is meant for, or one publish goes to. */
export const maxTargetsPerPublish = 50

/** Distinct account ids, from `min` to 50 of them: for Posts.ts and Publishing.ts, not exported by the package. */
export const accountIds = (min: number, description: string) =>
  Schema.Array(SocialAccountId).pipe(
    Schema.filter(
      (ids) => ids.length >= min && ids.length <= maxTargetsPerPublish && new Set(ids).size === ids.length,
      { jsonSchema: { minItems: min, maxItems: maxTargetsPerPublish, uniqueItems: true } }
    )
  ).annotations({
    description,
    ...invalidUnless(`must be ${min} to ${maxTargetsPerPublish} distinct social account ids`)
  })
