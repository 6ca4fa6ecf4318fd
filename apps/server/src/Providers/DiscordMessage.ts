import { Effect, type Scope } from "effect"
import { providerRules } from "./Rules.js"
import type { ContentProblem, MediaFacts, ProviderError, PublishPart } from "./SocialProvider.js"

const rules = providerRules.discord.media

const megabytes = (bytes: number, round: (n: number) => number = Math.round) => `${round(bytes / 1024 / 1024 * 10) / 10} MB`

/**
 * What Discord refuses of a message's files (docs/reference#uploading-files, docs/resources/message#attachment-object):
 * at most 10, each at most 10 MiB in a server without boosts (a boosted server takes more, which a webhook cannot
 * tell), a description (the alt text) of at most 1024 characters.
 */
export const discordMediaProblems = (media: ReadonlyArray<MediaFacts>): ReadonlyArray<ContentProblem> => [
  ...(media.length > rules.maxItems ? [`Discord takes at most ${rules.maxItems} files in a message; this post has ${media.length}`] : []),
  ...media.flatMap(({ altText, contentType, kind, size }, index) => {
    const name = `${kind === "image" ? "Image" : "Video"} ${index + 1}`
    const maxBytes = kind === "image" ? rules.maxImageBytes : rules.maxVideoBytes
    const altLength = altText === null ? 0 : [...altText].length
    return [
      ...((rules.contentTypes as ReadonlyArray<string>).includes(contentType) ? [] : [`${name} is ${contentType}, which Postline does not send to Discord`]),
      ...(size > maxBytes ? [`${name} is ${megabytes(size, Math.ceil)}; Discord takes files up to ${megabytes(maxBytes)} in a server without boosts`] : []),
      ...(altLength > rules.maxAltTextLength ? [`${name}'s alt text is ${altLength} characters long; Discord takes ${rules.maxAltTextLength}`] : [])
    ]
  })
].map((message) => ({ code: "media", message }))

/**
 * The message Execute Webhook takes (docs/resources/webhook#execute-webhook): the text, and its media as `files[n]`
 * in a multipart body whose `payload_json` names each (`attachments[n]`, with the alt text as its `description`).
 * `allowed_mentions` parses none: a post's text is written for every network, and an `@everyone`, `@here` or a
 * role in it must not ping a whole server; the words stay, no one is notified.
 */
export const messageBody = (
  part: PublishPart
): Effect.Effect<{ readonly json: unknown } | { readonly form: FormData }, ProviderError, Scope.Scope> =>
  Effect.gen(function*() {
    const attachments = part.media.map((medium, index) => ({
      id: index,
      // The stored types are image/jpeg, png, webp, gif and video/mp4: their subtype is an extension Discord knows.
      filename: `${medium.assetId}.${medium.contentType.split("/")[1]}`,
      ...(medium.altText !== null && medium.altText !== "" ? { description: medium.altText } : {})
    }))
    const payload = { content: part.text, allowed_mentions: { parse: [] }, ...(attachments.length > 0 ? { attachments } : {}) }
    if (attachments.length === 0) return { json: payload }
    const form = new FormData()
    form.append("payload_json", JSON.stringify(payload))
    for (const [index, medium] of part.media.entries()) {
      const file = yield* medium.open
      form.append(`files[${index}]`, file.slice(0, file.size, medium.contentType), attachments[index]!.filename)
    }
    return { form }
  })
