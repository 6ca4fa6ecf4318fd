import { createHash } from "node:crypto"

/** base32-sortable, the TID alphabet: string order is numeric order. */
const alphabet = "234567abcdefghijklmnopqrstuvwxyz"

// TIDs hold microseconds since the epoch. The key's time is drawn from 2023, fixed and in the past: the PDS
// takes any TID (1970 and 2255 alike) and the AppView orders posts by `createdAt`, not by key, but a time in
// the network's own past is a plausible creation time, unlike the future, and no TID minted from today's
// clock falls there.
const rangeStart = BigInt(Date.UTC(2023, 0, 1)) * 1000n
const rangeLength = BigInt(Date.UTC(2024, 0, 1) - Date.UTC(2023, 0, 1)) * 1000n

/**
 * The record key of the `app.bsky.feed.post` that publishes under `idempotencyKey`: a TID (13 characters,
 * top bit 0, then 53 bits of time and a 10-bit clock id) derived from the key alone, so that every attempt
 * writes to the same record and a repeat finds the first one there.
 */
export const postRecordKey = (idempotencyKey: string): string => {
  const hash = createHash("sha256").update(idempotencyKey).digest()
  const microseconds = rangeStart + hash.readBigUInt64BE(0) % rangeLength
  const clockId = BigInt(hash.readUInt16BE(8) & 0x3ff)
  let value = (microseconds << 10n) | clockId
  let key = ""
  for (let i = 0; i < 13; i++) {
    key = alphabet[Number(value & 31n)] + key
    value >>= 5n
  }
  return key
}
