import { Command } from "@effect/cli"
import { type ProviderRules, ProviderRulesList } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect } from "effect"
import { serverOptions } from "../CommonOptions.js"
import { Output } from "../Output.js"
import { online } from "../Session.js"
import { table } from "../Table.js"

const mebibyte = 1024 * 1024

/** 16 MiB, 2 MB, 900 bytes: as the provider states its limit, binary or decimal. */
const bytes = (n: number) =>
  n % mebibyte === 0 ? `${n / mebibyte} MiB` : n >= 1_000_000 ? `${n / 1_000_000} MB` : `${n} bytes`

const megapixels = (n: number) => `${Math.round(n / 100_000) / 10} MP`

const duration = (seconds: number) =>
  seconds % 86_400 === 0
    ? `${seconds / 86_400} d`
    : seconds % 3_600 === 0
    ? `${seconds / 3_600} h`
    : seconds % 60 === 0
    ? `${seconds / 60} min`
    : `${seconds} s`

/** A limit, or `none` where the provider sets none. */
const orNone = (value: number | null, format: (n: number) => string = String) => value === null ? "none" : format(value)

const yesNo = (value: boolean) => (value ? "yes" : "no")

/** How a provider counts a text's length, in words. */
const countingWords: Record<ProviderRules["text"]["counting"], string> = {
  graphemes: "graphemes",
  weighted: "weighted",
  utf16: "UTF-16 units",
  code_points: "code points"
}

const textLimit = ({ text }: ProviderRules) =>
  [
    text.maxLength === null ? "no limit" : `${text.maxLength} ${countingWords[text.counting]}`,
    ...(text.maxBytes === null ? [] : [`${text.maxBytes} bytes`]),
    ...(text.urlLength === null ? [] : [`URL = ${text.urlLength}`])
  ].join(", ")

const mediaTypes = ({ media }: ProviderRules) =>
  media.contentTypes.length === 0 ? "none" : media.contentTypes.map((type) => type.split("/")[1]).join(" ")

const window = (budget: ProviderRules["budgets"][number]) =>
  `${budget.limit} per ${duration(budget.seconds)}${budget.cost === 1 ? "" : ` (${budget.cost} a call)`}`

/** Whether this server connects the provider's accounts by signing in, else what it lacks; nothing if not that way. */
const signingIn = ({ connect: { oauth }, provider }: ProviderRules) =>
  oauth === null
    ? []
    : oauth.configured
    ? [`  ${provider}: yes`]
    : [`  ${provider}: not set up on this server${oauth.missingSettings.length === 0 ? "" : `: it needs ${oauth.missingSettings.join(" and ")}`}`]

const signInLines = (data: ProviderRulesList["data"]) => {
  const lines = data.flatMap(signingIn)
  return lines.length === 0 ? [] : ["", "Connecting by signing in (postline accounts connect <provider>):", ...lines]
}

/** Each provider's rules for people: text and features, media, each account's call budgets, then signing in. */
const rulesText = ({ data }: ProviderRulesList) =>
  [
    table([
      { header: "provider", value: (rules) => rules.provider },
      { header: "connect", value: (rules) => rules.connect.method },
      { header: "text", value: textLimit },
      { header: "threads", value: (rules) => rules.features.threads ? `up to ${rules.features.maxThreadParts} parts` : "no" },
      { header: "first comment", value: (rules) => yesNo(rules.features.firstComment) },
      { header: "delete", value: (rules) => yesNo(rules.features.delete) },
      { header: "credits", value: (rules) => String(rules.credits.perPublish) }
    ], data),
    "",
    "Media (* each account's server sets its own; these are the defaults):",
    table([
      { header: "provider", value: (rules) => `${rules.provider}${rules.media.perAccount ? " *" : ""}` },
      { header: "items", value: (rules) => orNone(rules.media.maxItems) },
      { header: "types", value: mediaTypes },
      { header: "image", value: (rules) => `${orNone(rules.media.maxImageBytes, bytes)}, ${orNone(rules.media.maxImagePixels, megapixels)}` },
      {
        header: "video",
        value: (rules) =>
          rules.media.contentTypes.some((type) => type.startsWith("video/"))
            ? `${orNone(rules.media.maxVideoBytes, bytes)}, ${orNone(rules.media.maxVideoPixels, megapixels)}, ` +
              `${orNone(rules.media.maxVideoSeconds, (seconds) => `${seconds} s`)}`
            : "not taken"
      },
      { header: "alt text", value: (rules) => orNone(rules.media.maxAltTextLength) }
    ], data),
    "",
    "Calls per account:",
    ...data.map((rules) => `  ${rules.provider}: ${rules.budgets.length === 0 ? "no limit" : rules.budgets.map(window).join(", ")}`),
    ...signInLines(data),
    "",
    "Credits: one publish to one account; a thread costs one per part, a first comment one more."
  ].join("\n")

export const providersCommand = Command.make("providers", serverOptions, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const rules = yield* client.providers.listProviders()
    yield* (yield* Output).answer(ProviderRulesList, rules, rulesText)
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "Each provider's rules: how an account connects (and whether this server can connect it by signing in), the " +
        "text and media it takes, threads, first comments, deleting, the credits of a publish and the calls an account " +
        "may make. Read them before writing a post"
    )
  )
