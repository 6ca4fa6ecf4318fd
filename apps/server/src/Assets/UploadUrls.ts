import type { AssetUploadId } from "@postline/domain"
import { Effect } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { MediaSettings } from "./Settings.js"

/**
 * The one-time URLs a presigned upload's bytes are PUT to when media live in a folder: `/v1/uploads/{id}?expires&signature`,
 * signed like downloads (`Signing.ts`) but with a key of its own purpose, so that no download URL opens an upload.
 */
export class UploadUrls extends Effect.Service<UploadUrls>()("Assets/UploadUrls", {
  effect: Effect.gen(function*() {
    const key = (yield* CredentialsCipher).signingKey("asset upload urls")
    const { base } = yield* MediaSettings

    const pathOf = (id: AssetUploadId) => `/v1/uploads/${id}`

    const signatureOf = (id: AssetUploadId, expires: number) =>
      createHmac("sha256", key).update(`${pathOf(id)}\n${expires}`).digest("base64url")

    /** The URL, valid until `expiresAt` (whole seconds). */
    const sign = (id: AssetUploadId, expiresAt: Date) => {
      const expires = Math.floor(expiresAt.getTime() / 1000)
      return `${base ?? ""}${pathOf(id)}?${new URLSearchParams({ expires: String(expires), signature: signatureOf(id, expires) })}`
    }

    /** Whether the signature is the server's for this upload and expiry, and the expiry is still ahead. */
    const verify = (id: AssetUploadId, expires: string, signature: string, now: Date) => {
      if (!/^[0-9]{1,12}$/.test(expires) || Number(expires) * 1000 <= now.getTime()) return false
      const expected = Buffer.from(signatureOf(id, Number(expires)))
      const given = Buffer.from(signature)
      return given.length === expected.length && timingSafeEqual(given, expected)
    }

    return { sign, verify } as const
  }),
  dependencies: [MediaSettings.Default]
}) {}
