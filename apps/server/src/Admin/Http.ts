import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { NotFound, type User } from "@postline/domain"
import { type ConfigError, Context, Effect, Layer, Option } from "effect"
import { Credits } from "../Credits/Service.js"
import { CredentialsCipher, type CredentialsKeyError, unknownKeyMessage } from "../Secrets/CredentialsCipher.js"
import { missingKeysMessage } from "../SocialAccounts/CredentialsKeysCheck.js"
import { rotateCredentials } from "../SocialAccounts/CredentialsRotation.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { UsersRepo } from "../Users/Repo.js"
import { AdminApi, CommandFailed } from "./Api.js"
import { AdminRepo } from "./Repo.js"

/**
 * The credentials keys the rotation encrypts with, built only when a rotation runs: the other commands work
 * where no key is configured yet (PostgreSQL before `CREDENTIALS_KEY` is set).
 */
export class RotationKeys extends Context.Tag("RotationKeys")<RotationKeys, Layer.Layer<
  CredentialsCipher,
  ConfigError.ConfigError | CredentialsKeyError,
  SqlClient.SqlClient
>>() {}

const UsersLive = HttpApiBuilder.group(AdminApi, "users", (handlers) =>
  Effect.gen(function*() {
    const users = yield* UsersRepo
    const admin = yield* AdminRepo
    const answer = ({ token, user }: { readonly user: User; readonly token: string }) => ({ id: user.id, email: user.email, token })
    return handlers
      .handle("create", ({ payload }) =>
        users.createWithToken(payload).pipe(
          Effect.map(answer),
          Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die })
        ))
      .handle("list", ({ urlParams }) => admin.listUsers(urlParams.limit))
      .handle("token", ({ payload }) =>
        users.issueToken(payload.email).pipe(
          Effect.flatMap(Option.match({
            onNone: () => new NotFound({ message: `No user with email ${payload.email}` }),
            onSome: (issued) => Effect.succeed(answer(issued))
          }))
        ))
      .handle("setPassword", ({ payload }) =>
        users.setPassword(payload.email, payload.password).pipe(
          Effect.filterOrFail((set) => set, () => new NotFound({ message: `No user with email ${payload.email}` })),
          Effect.asVoid
        ))
  }))

const OrganizationsLive = HttpApiBuilder.group(AdminApi, "organizations", (handlers) =>
  Effect.map(AdminRepo, (admin) => handlers.handle("list", ({ urlParams }) => admin.listOrganizations(urlParams.limit))))

const CreditsLive = HttpApiBuilder.group(AdminApi, "credits", (handlers) =>
  Effect.map(Credits, (credits) =>
    handlers.handle("grant", ({ payload: { amount, note, organizationId } }) =>
      credits.grant(organizationId, amount, note).pipe(
        Effect.map((balance) => ({ organizationId, ...balance })),
        Effect.catchIf((error): error is Exclude<typeof error, NotFound> => error._tag !== "NotFound", Effect.die)
      ))))

const CredentialsLive = HttpApiBuilder.group(AdminApi, "credentials", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* RotationKeys
    const accounts = yield* SocialAccountsRepo
    const sql = yield* SqlClient.SqlClient
    const commandFailed = (error: ConfigError.ConfigError | CredentialsKeyError | CommandFailed) =>
      error._tag === "CommandFailed" ? error : new CommandFailed({
        message: error._tag === "CredentialsKeyError" ? error.message : String(error)
      })
    const cipher = Layer.build(keys).pipe(
      Effect.map(Context.get(CredentialsCipher)),
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.scoped
    )
    // Like a server's start, a rotation with keys that lack one the data uses would mark accounts that other
    // processes read: it is refused until the key is given or declared lost.
    const rotate = Effect.gen(function*() {
      const configured = yield* cipher
      const missing = yield* accounts.unknownKeys(configured.keyIds, unknownKeyMessage)
      if (missing.length > 0) return yield* new CommandFailed({ message: missingKeysMessage(missing, configured) })
      return yield* rotateCredentials.pipe(
        Effect.provideService(SocialAccountsRepo, accounts),
        Effect.provideService(CredentialsCipher, configured),
        Effect.provideService(SqlClient.SqlClient, sql)
      )
    })
    // The operator's word that nobody has the key: a key this command's own settings hold is not lost.
    const forgetKey = (keyId: string) =>
      Effect.gen(function*() {
        const held = yield* cipher.pipe(Effect.map((configured) => configured.keyIds.includes(keyId)), Effect.orElseSucceed(() => false))
        if (held) {
          return yield* new CommandFailed({ message: `Key ${keyId} is one of this server's credentials keys: it is not lost` })
        }
        const { marked, total } = yield* accounts.markLostKey(keyId, unknownKeyMessage)
        if (total === 0) return yield* new NotFound({ message: `No social account's credentials use key ${keyId}` })
        return { keyId, marked, accounts: total }
      })
    return handlers
      .handle("rotate", () => Effect.mapError(rotate, commandFailed))
      .handle("forgetKey", ({ payload }) => forgetKey(payload.keyId))
  }))

/** The operator's API, over the database it is given; `RotationKeys` says where the credentials keys come from. */
export const AdminHttpLive = HttpApiBuilder.api(AdminApi).pipe(
  Layer.provide([UsersLive, OrganizationsLive, CreditsLive, CredentialsLive]),
  Layer.provide([UsersRepo.Default, AdminRepo.Default, Credits.Default, SocialAccountsRepo.Default])
)

