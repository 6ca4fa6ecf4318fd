import { SqlClient } from "@effect/sql"
import type { UserId } from "@postline/domain"
import { Effect, Option } from "effect"
import { verifyPassword } from "../Users/Passwords.js"

// Checked when no password is set or the email is unknown, so that every wrong answer takes as long.
const nobodysHash = `scrypt$32768$8$1$${"A".repeat(22)}$${"A".repeat(86)}`

/** Email and password, as the device approval page checks them. */
export class Credentials extends Effect.Service<Credentials>()("Credentials", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The user with this email, when the password is theirs. */
    const verify = (email: string, password: string) =>
      Effect.gen(function*() {
        const [user] = yield* sql<{ readonly id: UserId; readonly passwordHash: string | null }>`
          SELECT id, password_hash FROM users WHERE lower(email) = lower(${email})`
        const passwordHash = user?.passwordHash ?? null
        const matches = yield* Effect.promise(() => verifyPassword(password, passwordHash ?? nobodysHash))
        return matches && passwordHash !== null ? Option.some(user.id) : Option.none()
      }).pipe(Effect.orDie)

    return { verify } as const
  })
}) {}
