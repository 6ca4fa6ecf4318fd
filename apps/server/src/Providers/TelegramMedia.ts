import { Effect, type Redacted, Schema } from "effect"
import { providerRules } from "./Rules.js"
import type { ContentProblem, MediaFacts, ProviderError, PublishMedia } from "./SocialProvider.js"
import { TelegramClient } from "./TelegramClient.js"
import { Message } from "./TelegramObjects.js"

const rules = providerRules.telegram.media
const megabytes = (bytes: number, round: (n: number) => number = Math.round) => `${round(bytes / 1024 / 1024 * 10) / 10} MB`

// sendPhoto: "The photo's width and height must not exceed 10000 in total. Width and height ratio must be at most 20."
const maxPhotoSides = 10_000
const maxPhotoRatio = 20

const photoProblems = (name: string, width: number | null, height: number | null): ReadonlyArray<string> =>
  width === null || height === null || width === 0 || height === 0
    ? []
    : [
      ...(width + height > maxPhotoSides
        ? [`${name} is ${width}×${height} pixels; Telegram takes photos whose width and height add up to at most ${maxPhotoSides}`]
        : []),
      ...(Math.max(width / height, height / width) > maxPhotoRatio
        ? [`${name} is ${width}×${height} pixels; Telegram takes photos at most ${maxPhotoRatio} times as wide as tall, or as tall as wide`]
        : [])
    ]

/**
 * What Telegram refuses of a post's media (core.telegram.org/bots/api#sending-files, #sendphoto, #sendmediagroup): at
 * most 10, as one album; photos (JPEG, PNG, WebP) up to 10 MB, videos (MP4) up to 50 MB, uploaded. Alt text has no
 * place in Telegram, and is left out.
 */
export const telegramMediaProblems = (media: ReadonlyArray<MediaFacts>): ReadonlyArray<ContentProblem> => [
  ...(media.length > rules.maxItems ? [`Telegram takes at most ${rules.maxItems} images and videos in a post; this post has ${media.length}`] : []),
  ...media.flatMap(({ contentType, height, kind, size, width }, index) => {
    const name = `${kind === "image" ? "Image" : "Video"} ${index + 1}`
    const maxBytes = kind === "image" ? rules.maxImageBytes : rules.maxVideoBytes
    return [
      ...((rules.contentTypes as ReadonlyArray<string>).includes(contentType)
        ? []
        : contentType === "image/gif"
        ? [`${name} is a GIF, which Telegram shows as an animation: Postline sends Telegram photos and videos only`]
        : [`${name} is ${contentType}, which Telegram does not take`]),
      ...(size > maxBytes ? [`${name} is ${megabytes(size, Math.ceil)}; Telegram takes ${kind}s up to ${megabytes(maxBytes)}`] : []),
      ...(kind === "image" ? photoProblems(name, width, height) : [])
    ]
  })
].map((message) => ({ code: "media", message }))

const inputType = (medium: MediaFacts) => medium.kind === "image" ? "photo" : "video"
const fileName = (medium: MediaFacts, index: number) => `file${index + 1}.${medium.contentType.split("/")[1]}`

/** A part's media sent, uploaded as multipart/form-data (core.telegram.org/bots/api#sending-files). */
export class TelegramMedia extends Effect.Service<TelegramMedia>()("TelegramMedia", {
  effect: Effect.gen(function*() {
    const { call } = yield* TelegramClient

    /**
     * One medium as one message (sendPhoto, sendVideo), several as an album (sendMediaGroup, the caption on its first
     * item, each file a part its InputMedia names by `attach://`): the messages, in order.
     */
    const send = (
      botToken: Redacted.Redacted<string>,
      chatId: string,
      media: ReadonlyArray<PublishMedia>,
      options: { readonly caption?: string; readonly replyTo?: number }
    ): Effect.Effect<ReadonlyArray<Message>, ProviderError> =>
      Effect.gen(function*() {
        const files = yield* Effect.forEach(media, (medium) => medium.open)
        const form = new FormData()
        form.append("chat_id", chatId)
        if (options.replyTo !== undefined) form.append("reply_parameters", JSON.stringify({ message_id: options.replyTo }))
        if (media.length === 1) {
          const type = inputType(media[0]!)
          form.append(type, files[0]!, fileName(media[0]!, 0))
          if (options.caption !== undefined) form.append("caption", options.caption)
          return [yield* call(botToken, type === "photo" ? "sendPhoto" : "sendVideo", form, Message)]
        }
        form.append("media", JSON.stringify(media.map((medium, index) => ({
          type: inputType(medium),
          media: `attach://file${index + 1}`,
          ...(index === 0 && options.caption !== undefined ? { caption: options.caption } : {})
        }))))
        media.forEach((medium, index) => form.append(`file${index + 1}`, files[index]!, fileName(medium, index)))
        return yield* call(botToken, "sendMediaGroup", form, Schema.Array(Message))
      }).pipe(Effect.scoped)

    return { send } as const
  }),
  dependencies: [TelegramClient.Default]
}) {}
