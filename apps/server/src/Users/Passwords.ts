import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { promisify } from "node:util"

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>

// scrypt's interactive-login cost (2^15, 8, 1); the parameters travel with each hash.
const parameters = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }
const keyLength = 64

export const minPasswordLength = 8

/** `scrypt$N$r$p$salt$hash`, with a random salt per user. */
export const hashPassword = async (password: string): Promise<string> => {
  const salt = randomBytes(16)
  const hash = await scryptAsync(password, salt, keyLength, parameters)
  return ["scrypt", parameters.N, parameters.r, parameters.p, salt.toString("base64url"), hash.toString("base64url")].join("$")
}

export const verifyPassword = async (password: string, stored: string): Promise<boolean> => {
  const [scheme, N, r, p, salt, hash] = stored.split("$")
  if (scheme !== "scrypt" || salt === undefined || hash === undefined) return false
  const expected = Buffer.from(hash, "base64url")
  const actual = await scryptAsync(password, Buffer.from(salt, "base64url"), expected.length, {
    N: Number(N),
    r: Number(r),
    p: Number(p),
    maxmem: parameters.maxmem
  })
  return timingSafeEqual(actual, expected)
}
