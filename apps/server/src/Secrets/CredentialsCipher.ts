import { SqlClient } from "@effect/sql"
import { Config, Effect, Layer, Option, Redacted, Schema } from "effect"
import { createCipheriv, createDecipheriv, createHash, createSecretKey, hkdfSync, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { CurrentDeployment } from "../Deployment.js"

/** The key is missing or malformed: the server cannot start. */
export class CredentialsKeyError extends Schema.TaggedError<CredentialsKeyError>()("CredentialsKeyError", {
  message: Schema.String
}) {}

/**
 * A stored ciphertext cannot be read: encrypted with a key that is not configured, altered, or malformed.
 * The message is for the account's users (its `lastError`): what happened and how to repair it.
 */
export class CredentialsUnreadable extends Schema.TaggedError<CredentialsUnreadable>()("CredentialsUnreadable", {
  message: Schema.String
}) {}

const unreadable = (reason: string) =>
  `This server cannot read the account's stored credentials: ${reason}. Reconnect the account (PATCH it with new credentials)`

/**
 * Why records of a key the server does not have cannot be read. Always the same words: they mark the accounts
 * of a key declared lost, and the server finds them by these when the key is given back (see
 * SocialAccounts/CredentialsKeysCheck.ts).
 */
export const unknownKeyMessage = unreadable(
  "they were encrypted with a key that is neither CREDENTIALS_KEY nor in CREDENTIALS_KEY_PREVIOUS"
) + ", or give the server the key they were encrypted with"

export interface CredentialsKeys {
  /** 32 bytes in base64: new records are encrypted with it. */
  readonly current: Redacted.Redacted<string>
  /** Older keys, still read after a rotation. */
  readonly previous: ReadonlyArray<Redacted.Redacted<string>>
}

const keyLength = 32
const nonceLength = 12
const tagLength = 16
const version = "v1"

/** A key's id comes from the key itself: keys need no names, and an id cannot be paired with the wrong key. */
const keyIdOf = (key: Buffer) =>
  createHash("sha256").update("postline credentials key id\n").update(key).digest("base64url").slice(0, 8)

const parseKey = (text: Redacted.Redacted<string>, source: string) => {
  const value = Redacted.value(text).trim()
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) ? Buffer.from(value, "base64") : Buffer.alloc(0)
  return key.length === keyLength
    ? Effect.succeed(key)
    : Effect.fail(new CredentialsKeyError({
      message: `${source} must be ${keyLength} random bytes in base64, e.g. the output of \`openssl rand -base64 32\``
    }))
}

/**
 * Encrypts social account credentials at rest with AES-256-GCM. A ciphertext reads
 * `v1.<keyId>.<base64url(nonce | tag | data)>`: a random 12-byte nonce of its own, the 16-byte tag, and
 * `v1.<keyId>` authenticated with the data. New records use the current key; records of any configured
 * key are read, so a key is rotated by making it previous and setting a new current one, and records move
 * to the new key when next written (`isCurrent` finds those that have not).
 */
export class CredentialsCipher extends Effect.Service<CredentialsCipher>()("CredentialsCipher", {
  effect: (keys: CredentialsKeys) =>
    Effect.gen(function*() {
      const current = yield* parseKey(keys.current, "CREDENTIALS_KEY")
      const previous = yield* Effect.forEach(keys.previous, (key) => parseKey(key, "Each key of CREDENTIALS_KEY_PREVIOUS"))
      const keyId = keyIdOf(current)
      // As key objects, made once: a raw key would be turned into one on every call.
      const keysById = new Map([...previous, current].map((key) => [keyIdOf(key), createSecretKey(key)]))

      const encrypt = (plaintext: string) =>
        Effect.sync(() => {
          const header = `${version}.${keyId}`
          const nonce = randomBytes(nonceLength)
          const cipher = createCipheriv("aes-256-gcm", current, nonce, { authTagLength: tagLength }).setAAD(Buffer.from(header))
          const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
          return `${header}.${Buffer.concat([nonce, cipher.getAuthTag(), data]).toString("base64url")}`
        })

      const decrypt = (ciphertext: string): Effect.Effect<string, CredentialsUnreadable> => {
        const fail = (message: string) => Effect.fail(new CredentialsUnreadable({ message }))
        const [recordVersion, recordKeyId, payload, ...rest] = ciphertext.split(".")
        if (recordVersion !== version || !recordKeyId || !payload || rest.length > 0) {
          return fail(unreadable("they are not a v1 credentials ciphertext"))
        }
        const key = keysById.get(recordKeyId)
        if (key === undefined) return fail(unknownKeyMessage)
        const bytes = Buffer.from(payload, "base64url")
        if (bytes.length < nonceLength + tagLength) return fail(unreadable("the ciphertext is truncated"))
        try {
          const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, nonceLength), { authTagLength: tagLength })
            .setAAD(Buffer.from(`${recordVersion}.${recordKeyId}`))
          decipher.setAuthTag(bytes.subarray(nonceLength, nonceLength + tagLength))
          const plaintext = Buffer.concat([decipher.update(bytes.subarray(nonceLength + tagLength)), decipher.final()])
          return Effect.succeed(plaintext.toString("utf8"))
        } catch {
          return fail(unreadable("the ciphertext does not match its key: it was altered, or the key is not the one it was made with"))
        }
      }

      return {
        /** The id of the current key, as it appears in new ciphertexts. */
        keyId,
        /** The ids of every key it reads. */
        keyIds: [...keysById.keys()],
        encrypt,
        decrypt,
        /**
         * A key for signing, not encrypting, derived from the current key for one purpose (HKDF-SHA-256): what it
         * signs stops verifying when the current key changes.
         */
        signingKey: (purpose: string) =>
          createSecretKey(Buffer.from(hkdfSync("sha256", current, Buffer.alloc(0), `postline ${purpose}`, 32))),
        /** Whether a ciphertext was made with the current key (if not, re-encrypt it to finish a rotation). */
        isCurrent: (ciphertext: string) => ciphertext.startsWith(`${version}.${keyId}.`)
      } as const
    })
}) {}

/**
 * The key in `<dataDir>/credentials.key`, made (32 random bytes, mode 0600) and logged once if absent.
 * The embedded database's key lives beside its data so that a backup of the folder holds both. A database
 * that already holds credentials (`holdsCredentials`) gets no new key: it could not read them.
 */
export const keyFromDataDir = <R>(dataDir: string, holdsCredentials: Effect.Effect<boolean, never, R>) =>
  Effect.gen(function*() {
    const file = Path.resolve(dataDir, "credentials.key")
    if (!Fs.existsSync(file) && (yield* holdsCredentials)) {
      return yield* new CredentialsKeyError({
        message: `${file} is missing, but the database beside it holds social accounts whose credentials were ` +
          "encrypted with it, and a new key could not read them. Restore credentials.key from a backup of the data " +
          "folder, or set CREDENTIALS_KEY to that key. If the key is lost, set CREDENTIALS_KEY to a new one " +
          "(`openssl rand -base64 32`): the server then names the lost key, to declare lost with " +
          "`pnpm admin credentials forget-key`, and its accounts need reconnecting (PATCH them with new credentials)"
      })
    }
    const created = yield* Effect.try({
      try: () => {
        Fs.mkdirSync(dataDir, { recursive: true })
        try {
          Fs.writeFileSync(file, `${randomBytes(keyLength).toString("base64")}\n`, { flag: "wx", mode: 0o600 })
          return true
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
          throw error
        }
      },
      catch: (cause) => new CredentialsKeyError({ message: `Could not create ${file}: ${(cause as Error).message}` })
    })
    if (created) {
      yield* Effect.logWarning(
        `Generated a credentials key in ${file}. Back it up with the data folder: social account ` +
          "credentials cannot be read without it. Set CREDENTIALS_KEY to use a key of your own."
      )
    }
    return yield* Effect.try({
      try: () => Redacted.make(Fs.readFileSync(file, "utf8")),
      catch: (cause) => new CredentialsKeyError({ message: `Could not read ${file}: ${(cause as Error).message}` })
    })
  })

/** Whether the database holds any social account, and so credentials encrypted with some key. */
const holdsCredentials = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ readonly held: boolean }>`SELECT EXISTS (SELECT 1 FROM social_accounts) AS held`).pipe(
    Effect.map(([row]) => row.held),
    Effect.orDie
  )

/**
 * The cipher as configured: `CREDENTIALS_KEY` (base64) and `CREDENTIALS_KEY_PREVIOUS` (older keys, comma
 * separated). Without `CREDENTIALS_KEY`, the embedded database's key file in `DATA_DIR` (see `keyFromDataDir`);
 * with `DATABASE_URL` there is no data folder to keep a key in, and the layer fails with what to do.
 */
export const CredentialsCipherLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const key = yield* Config.option(Config.redacted("CREDENTIALS_KEY"))
    const previousKeys = yield* Config.redacted("CREDENTIALS_KEY_PREVIOUS").pipe(Config.withDefault(Redacted.make("")))
    const deployment = yield* CurrentDeployment
    const previous = Redacted.value(previousKeys).split(",").map((text) => text.trim()).filter((text) => text !== "")
      .map((text) => Redacted.make(text))
    if (Option.isSome(key)) return CredentialsCipher.Default({ current: key.value, previous })
    if (deployment._tag === "Postgres") {
      return yield* new CredentialsKeyError({
        message: "CREDENTIALS_KEY is not set. With DATABASE_URL, set it to 32 random bytes in base64 (e.g. the output " +
          "of `openssl rand -base64 32`) and keep it safe: social account credentials are encrypted with it."
      })
    }
    return CredentialsCipher.Default({ current: yield* keyFromDataDir(deployment.dataDir, holdsCredentials), previous })
  })
)
