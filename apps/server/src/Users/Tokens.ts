import { createHash, randomBytes } from "node:crypto"

/** Personal access tokens are recognisable by this prefix, e.g. in secret scanners. */
export const tokenPrefix = "plt_"

export const generateToken = (): string => tokenPrefix + randomBytes(32).toString("base64url")

/** Tokens are stored only as this hash. */
export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex")
