import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Context, Effect, Exit, Layer, Logger, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, readFileSync, statSync } from "node:fs"
import * as Path from "node:path"
import { credentialsFromJson, credentialsToJson } from "../../src/Providers/Credentials.js"
import { DeploymentLive } from "../../src/Deployment.js"
import { CredentialsCipher, CredentialsCipherLive, unknownKeyMessage } from "../../src/Secrets/CredentialsCipher.js"
import { scopedTempDir, TestDatabase } from "../support/TestDatabase.js"

const newKey = () => Redacted.make(randomBytes(32).toString("base64"))

const cipherWith = (current: Redacted.Redacted<string>, previous: ReadonlyArray<Redacted.Redacted<string>> = []) =>
  CredentialsCipher.pipe(Effect.provide(CredentialsCipher.Default({ current, previous })))

/** The cipher that CredentialsCipherLive builds from these environment variables, and what it logged. */
const fromEnvironment = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const logs: Array<string> = []
    const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message))))
    const exit = yield* Layer.build(CredentialsCipherLive.pipe(Layer.provide(DeploymentLive))).pipe(
      Effect.map(Context.get(CredentialsCipher)),
      Effect.withConfigProvider(ConfigProvider.fromJson(env)),
      Effect.provide(logger),
      Effect.exit
    )
    return { exit, logs }
  })

describe("CredentialsCipher", () => {
  it.effect("round-trips credentials, with a nonce of its own per record", () =>
    Effect.gen(function*() {
      const cipher = yield* cipherWith(newKey())
      const json = yield* credentialsToJson({
        provider: "mastodon",
        instanceUrl: "https://mastodon.social",
        accessToken: Redacted.make("token-123")
      })
      const first = yield* cipher.encrypt(json)
      const second = yield* cipher.encrypt(json)
      expect(first).toMatch(new RegExp(`^v1\\.${cipher.keyId}\\.[A-Za-z0-9_-]+$`))
      expect(first).not.toBe(second)
      expect(first).not.toContain("token-123")
      const back = yield* credentialsFromJson(yield* cipher.decrypt(first))
      expect(back.provider === "mastodon" && Redacted.value(back.accessToken)).toBe("token-123")
      expect(yield* cipher.decrypt(second)).toBe(json)
      expect(yield* cipher.decrypt(yield* cipher.encrypt(""))).toBe("")
    }))

  it.effect("refuses a wrong key, an altered ciphertext and malformed input", () =>
    Effect.gen(function*() {
      const cipher = yield* cipherWith(newKey())
      const ciphertext = yield* cipher.encrypt("secret")
      const other = yield* cipherWith(newKey())
      expect((yield* other.decrypt(ciphertext).pipe(Effect.flip)).message).toContain("neither CREDENTIALS_KEY nor")
      // Said to the account's users (its lastError): what to do about it.
      expect((yield* other.decrypt(ciphertext).pipe(Effect.flip)).message).toBe(unknownKeyMessage)
      expect(unknownKeyMessage).toMatch(/^This server cannot read the account's stored credentials: .*PATCH it with new credentials.*give the server the key/)

      const [version, keyId, payload] = ciphertext.split(".")
      const bytes = Buffer.from(payload, "base64url")
      for (const index of [0, 12, 28, bytes.length - 1]) {
        const altered = Buffer.from(bytes)
        altered[index] ^= 1
        const error = yield* cipher.decrypt(`${version}.${keyId}.${altered.toString("base64url")}`).pipe(Effect.flip)
        expect(error._tag).toBe("CredentialsUnreadable")
        expect(error.message).toContain("altered")
      }
      // The version and key id are authenticated too: another key's id with this data cannot be decrypted by it.
      const previousKey = newKey()
      const both = yield* cipherWith(newKey(), [previousKey])
      const withPrevious = yield* cipherWith(previousKey)
      const swapped = `v1.${withPrevious.keyId}.${(yield* both.encrypt("secret")).split(".")[2]}`
      expect((yield* both.decrypt(swapped).pipe(Effect.flip)).message).toContain("altered")

      for (const malformed of ["", "v2.abc.def", `v1.${keyId}`, `v1.${keyId}.AAAA`, `${ciphertext}.extra`]) {
        expect((yield* cipher.decrypt(malformed).pipe(Effect.flip))._tag).toBe("CredentialsUnreadable")
      }
    }))

  it.effect("rotates keys: old records still decrypt with a previous key, new ones use the current key", () =>
    Effect.gen(function*() {
      const oldKey = newKey()
      const before = yield* cipherWith(oldKey)
      const oldRecord = yield* before.encrypt("old")
      const after = yield* cipherWith(newKey(), [oldKey])
      expect(after.keyId).not.toBe(before.keyId)
      expect(yield* after.decrypt(oldRecord)).toBe("old")
      expect(after.isCurrent(oldRecord)).toBe(false)
      const newRecord = yield* after.encrypt("new")
      expect(after.isCurrent(newRecord)).toBe(true)
      expect(newRecord.split(".")[1]).toBe(after.keyId)
      expect((yield* before.decrypt(newRecord).pipe(Effect.flip))._tag).toBe("CredentialsUnreadable")
    }))

  it.effect("refuses keys that are not 32 bytes of base64, without quoting them", () =>
    Effect.gen(function*() {
      for (const bad of ["", "too-short", randomBytes(16).toString("base64"), `${randomBytes(32).toString("base64")}!`]) {
        const error = yield* cipherWith(Redacted.make(bad)).pipe(Effect.flip)
        expect(error._tag).toBe("CredentialsKeyError")
        if (bad !== "") expect(error.message).not.toContain(bad)
      }
      expect((yield* cipherWith(newKey(), [Redacted.make("nope")]).pipe(Effect.flip)).message).toContain("CREDENTIALS_KEY_PREVIOUS")
    }))

  layer(TestDatabase)("CredentialsCipherLive", (it) => {
    it.scoped("uses CREDENTIALS_KEY and CREDENTIALS_KEY_PREVIOUS (comma separated)", () =>
      Effect.gen(function*() {
        const [current, older, oldest] = [newKey(), newKey(), newKey()]
        const oldRecord = yield* (yield* cipherWith(oldest)).encrypt("kept")
        const { exit } = yield* fromEnvironment({
          CREDENTIALS_KEY: Redacted.value(current),
          CREDENTIALS_KEY_PREVIOUS: `${Redacted.value(older)}, ${Redacted.value(oldest)}`,
          DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postline"
        })
        const cipher = yield* exit
        expect(cipher.keyId).toBe((yield* cipherWith(current)).keyId)
        expect(yield* cipher.decrypt(oldRecord)).toBe("kept")
      }))

    it.scoped("with DATABASE_URL and no key, fails with what to do", () =>
      Effect.gen(function*() {
        const { exit } = yield* fromEnvironment({ DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postline" })
        expect(Exit.isFailure(exit)).toBe(true)
        expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("CREDENTIALS_KEY is not set")
      }))

    it.scoped("with the embedded database and no key, makes one in the data folder (0600) once and reuses it", () =>
      Effect.gen(function*() {
        const dataDir = Path.join(yield* scopedTempDir("postline-key-"), "data")
        const first = yield* fromEnvironment({ DATA_DIR: dataDir })
        const cipher = yield* first.exit
        const file = Path.join(dataDir, "credentials.key")
        expect(statSync(file).mode & 0o777).toBe(0o600)
        expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64")).toHaveLength(32)
        expect(first.logs.filter((line) => line.includes("Generated a credentials key"))).toHaveLength(1)
        expect(first.logs.join("\n")).not.toContain(readFileSync(file, "utf8").trim())

        const record = yield* cipher.encrypt("embedded")
        const second = yield* fromEnvironment({ DATA_DIR: dataDir })
        expect(second.logs).toEqual([])
        expect(yield* (yield* second.exit).decrypt(record)).toBe("embedded")
      }))

    it.scoped("with the embedded database, no key file and social accounts stored, refuses to make a new key", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`WITH organization AS (INSERT INTO organizations (name) VALUES ('Acme') RETURNING id),
            team AS (INSERT INTO teams (organization_id, name) SELECT id, 'Social' FROM organization RETURNING id)
          INSERT INTO social_accounts (team_id, provider, handle, credentials, content_limits)
          SELECT id, 'webhook', 'hooks.example.com', 'v1.abcdefgh.AAAA', '{}'::json FROM team`
        const dataDir = Path.join(yield* scopedTempDir("postline-key-"), "data")
        const { exit, logs } = yield* fromEnvironment({ DATA_DIR: dataDir })
        const file = Path.join(dataDir, "credentials.key")
        expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain(
          `${file} is missing, but the database beside it holds social accounts whose credentials were encrypted with it`
        )
        expect(existsSync(file)).toBe(false)
        expect(logs).toEqual([])
        yield* sql`DELETE FROM organizations`
      }))
  })
})
