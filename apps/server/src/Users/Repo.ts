import { SqlClient, SqlSchema } from "@effect/sql"
import { Conflict, User, type UserId } from "@postline/domain"
import { Effect, Option, Redacted, Schema } from "effect"
import { isUniqueViolation } from "../Database/Errors.js"
import { hashPassword, verifyPassword } from "./Passwords.js"
import { generateSecret, hashSecret } from "./Secrets.js"

// Checked when no password is set or the email is unknown, so that every wrong answer takes as long.
const nobodysHash = `scrypt$32768$8$1$${"A".repeat(22)}$${"A".repeat(86)}`

export class UsersRepo extends Effect.Service<UsersRepo>()("UsersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertUser = SqlSchema.single({
      Request: Schema.Struct({ email: Schema.String, name: Schema.String }),
      Result: User,
      execute: ({ email, name }) => sql`INSERT INTO users (email, name) VALUES (${email}, ${name}) RETURNING id, email, name`
    })

    // Every authenticated request runs this: its row is typed by its own SQL, as the lists' rows are,
    // without a schema's decoding pass.
    const findByTokenHash = (tokenHash: string) =>
      sql<User & { readonly expired: boolean }>`SELECT u.id, u.email, u.name, coalesce(t.expires_at <= now(), false) AS expired
            FROM access_tokens t JOIN users u ON u.id = t.user_id
            WHERE t.token_hash = ${tokenHash}`.pipe(Effect.map(([row]) => Option.fromNullable(row)))

    const insertToken = (userId: UserId) => {
      const token = generateSecret("accessToken")
      return Effect.as(sql`INSERT INTO access_tokens (token_hash, user_id) VALUES (${hashSecret(token)}, ${userId})`, token)
    }

    /** Creates a user with one personal access token; the token is returned once and stored hashed. */
    const createWithToken = (input: { readonly email: string; readonly name: string }) =>
      Effect.gen(function*() {
        const user = yield* insertUser(input).pipe(
          Effect.catchIf(
            (error) => error._tag === "SqlError" && isUniqueViolation(error),
            () => new Conflict({ message: `A user with email ${input.email} already exists`, reason: "email_taken" })
          )
        )
        return { user, token: yield* insertToken(user.id) }
      }).pipe(sql.withTransaction)

    /** A new personal access token for the user with this email (none when there is no such user). */
    const issueToken = (email: string) =>
      Effect.gen(function*() {
        const [user] = yield* sql<User>`SELECT id, email, name FROM users WHERE lower(email) = lower(${email})`
        if (user === undefined) return Option.none()
        return Option.some({ user, token: yield* insertToken(user.id) })
      }).pipe(sql.withTransaction, Effect.orDie)

    /** Stores the password's scrypt hash; false when no user has this email. */
    const setPassword = (email: string, password: Redacted.Redacted) =>
      Effect.gen(function*() {
        const passwordHash = yield* Effect.promise(() => hashPassword(Redacted.value(password)))
        const updated = yield* sql`UPDATE users SET password_hash = ${passwordHash}
          WHERE lower(email) = lower(${email}) RETURNING id`
        return updated.length > 0
      }).pipe(Effect.orDie)

    /** The user with this email, when the password is theirs (the device approval page). */
    const verifyPasswordOf = (email: string, password: Redacted.Redacted) =>
      Effect.gen(function*() {
        const [user] = yield* sql<{ readonly id: UserId; readonly passwordHash: string | null }>`
          SELECT id, password_hash AS "passwordHash" FROM users WHERE lower(email) = lower(${email})`
        const passwordHash = user?.passwordHash ?? null
        const matches = yield* Effect.promise(() => verifyPassword(Redacted.value(password), passwordHash ?? nobodysHash))
        return matches && passwordHash !== null ? Option.some(user.id) : Option.none()
      }).pipe(Effect.orDie)

    return {
      createWithToken,
      issueToken,
      setPassword,
      verifyPasswordOf,
      /** The user an access token acts for, and whether it has expired. */
      findByToken: (token: Redacted.Redacted) =>
        findByTokenHash(hashSecret(Redacted.value(token))).pipe(
          Effect.map(Option.map(({ expired, ...user }) => ({ user, expired }))),
          Effect.orDie
        )
    }
  })
}) {}
