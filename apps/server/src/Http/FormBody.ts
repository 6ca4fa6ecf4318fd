import { UrlParams } from "@effect/platform"

const strayPercent = /%(?![0-9A-Fa-f]{2})/g

/**
 * One name or value of a form, decoded as URLSearchParams does (`+` is a
 * space, a `%` without two hex digits stays as written), except that the
 * bytes it encodes must be UTF-8: URLSearchParams turns `%FF` into U+FFFD
 * unseen, where decodeURIComponent throws.
 */
const decodeComponent = (component: string) =>
  decodeURIComponent(component.replaceAll("+", " ").replace(strayPercent, "%25"))

/** An `application/x-www-form-urlencoded` body; throws when a name or value does not decode to UTF-8. */
export const parseForm = (body: string): UrlParams.UrlParams =>
  UrlParams.fromInput(
    body.split("&").filter((pair) => pair !== "").map((pair) => {
      const equals = pair.indexOf("=")
      return equals === -1
        ? [decodeComponent(pair), ""] as const
        : [decodeComponent(pair.slice(0, equals)), decodeComponent(pair.slice(equals + 1))] as const
    })
  )
