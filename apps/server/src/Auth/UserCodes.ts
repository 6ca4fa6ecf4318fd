import { Option } from "effect"
import { randomInt } from "node:crypto"

// Consonants only (RFC 8628 §6.1): no words can be spelled, and no 0/O or 1/I mix-ups.
const alphabet = "BCDFGHJKLMNPQRSTVWXZ"
const length = 8
const storedShape = new RegExp(`^[${alphabet}]{${length}}$`)

/** A new user code as stored: eight letters, no dash. */
export const generateUserCode = (): string => Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join("")

/** What the user typed, as stored: case, dashes and spaces do not matter. None when it cannot be a code. */
export const normalizeUserCode = (input: string): Option.Option<string> => {
  const code = input.replace(/[-\s]/g, "").toUpperCase()
  return storedShape.test(code) ? Option.some(code) : Option.none()
}

/** As users read it: `XXXX-XXXX`. */
export const displayUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`
