import type { AssetId, TeamId } from "@postline/domain"
import { Effect } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { MediaSettings } from "./Settings.js"

export type Variant = "original" | "thumbnail"

export interface SignedUrl {
  readonly url: string
  readonly expiresAt: Date
}

/**
 * Signed URLs of assets' bytes: `…/assets/{id}/content?variant&expires&signature`, an HMAC of the path,
 * variant and expiry with a key derived from the server's credentials key, so that anyone given one (a
 * provider, a webhook's receiver) may download until it expires, and nobody may make one.
 */
export class UrlSigning extends Effect.Service<UrlSigning>()("Assets/UrlSigning", {
  effect: Effect.gen(function*() {
    const key = (yield* CredentialsCipher).signingKey("asset urls")
    const { base } = yield* MediaSettings

    const pathOf = (teamId: TeamId, assetId: AssetId) => `/v1/teams/${teamId}/assets/${assetId}/content`

    const signatureOf = (path: string, variant: Variant, expires: number) =>
      createHmac("sha256", key).update(`${path}\n${variant}\n${expires}`).digest("base64url")

    const sign = (teamId: TeamId, assetId: AssetId, variant: Variant, expiresAt: Date): SignedUrl => {
      const path = pathOf(teamId, assetId)
      const expires = Math.floor(expiresAt.getTime() / 1000)
      const query = new URLSearchParams({
        ...(variant === "original" ? {} : { variant }),
        expires: String(expires),
        signature: signatureOf(path, variant, expires)
      })
      return { url: `${base ?? ""}${path}?${query}`, expiresAt: new Date(expires * 1000) }
    }

    /** Whether the signature is the server's for this path, variant and expiry, and the expiry is still ahead. */
    const verify = (teamId: TeamId, assetId: AssetId, variant: Variant, expires: string, signature: string, now: Date) => {
      if (!/^[0-9]{1,12}$/.test(expires) || Number(expires) * 1000 <= now.getTime()) return false
      const expected = Buffer.from(signatureOf(pathOf(teamId, assetId), variant, Number(expires)))
      const given = Buffer.from(signature)
      return given.length === expected.length && timingSafeEqual(given, expected)
    }

    return { sign, verify } as const
  }),
  dependencies: [MediaSettings.Default]
}) {}
