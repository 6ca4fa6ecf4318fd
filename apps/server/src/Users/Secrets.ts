import { createHash, randomBytes } from "node:crypto"

/** Each kind of secret is recognisable by its prefix: by people, by secret scanners and by the authentication. */
export const secretPrefixes = {
  accessToken: "plt_",
  apiKey: "plk_",
  refreshToken: "plr_",
  deviceCode: "pld_"
} as const

export type SecretKind = keyof typeof secretPrefixes

/** A new secret of 32 random bytes. */
export const generateSecret = (kind: SecretKind): string => secretPrefixes[kind] + randomBytes(32).toString("base64url")

/** Secrets are stored only as this hash. */
export const hashSecret = (secret: string): string => createHash("sha256").update(secret).digest("hex")
