import { FileSystem, Path } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { Effect, Layer, Option, type ParseResult, Ref, Schema } from "effect"
import { homedir } from "node:os"
import { processEnv } from "./Env.js"
import { makeFileLock } from "./FileLock.js"

/**
 * A device login as the token store keeps it: the server it was made on, the client it was issued to, and its
 * current tokens. The tokens are `Redacted` once decoded, so that logging a login shows no secret.
 */
export const StoredLogin = Schema.Struct({
  baseUrl: Schema.String,
  clientId: Schema.String,
  accessToken: Schema.Redacted(Schema.String),
  refreshToken: Schema.Redacted(Schema.String),
  accessTokenExpiresAt: Schema.Date
}).annotations({ identifier: "StoredLogin" })
export type StoredLogin = typeof StoredLogin.Type

const StoredLoginJson = Schema.parseJson(StoredLogin, { space: 2 })

export interface TokenStoreOptions {
  /** Where XDG_CONFIG_HOME and HOME are read; default `process.env`. */
  readonly env?: Record<string, string | undefined> | undefined
  /**
   * The credentials file itself, instead of the one under the configuration folder. Its folder must exist, and is
   * left as it is.
   */
  readonly path?: string | undefined
}

/**
 * `$XDG_CONFIG_HOME/postline/credentials.json`, else `$HOME/.config/postline/credentials.json` (the user's home
 * folder when HOME is not set). A relative
 * XDG_CONFIG_HOME is ignored, as the XDG Base Directory specification says.
 */
export const credentialsPath = (path: Path.Path, env: Record<string, string | undefined> = processEnv()): string => {
  const xdg = env.XDG_CONFIG_HOME
  const configHome = xdg !== undefined && xdg !== "" && path.isAbsolute(xdg)
    ? xdg
    : path.join(env.HOME || env.USERPROFILE || homedir(), ".config")
  return path.join(configHome, "postline", "credentials.json")
}

/** The token store's interface: the one stored login, if any. */
export interface TokenStoreShape {
  /** The stored login; none when there is no file. A file that cannot be read or decoded is none too, with a warning logged. */
  readonly load: Effect.Effect<Option.Option<StoredLogin>>
  /** Replaces the stored login, atomically (a new file renamed over the old one), readable by its owner alone. */
  readonly save: (login: StoredLogin) => Effect.Effect<void, PlatformError | ParseResult.ParseError>
  /** Removes the stored login; nothing to remove is fine. */
  readonly clear: Effect.Effect<void, PlatformError>
  /**
   * Runs `effect` while no other holder of this store's lock runs, in this process or another: a refresh reads,
   * rotates and saves the login within it, so that two processes never present one refresh token.
   */
  readonly withLock: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The credentials file. */
  readonly path: string
}

const makeFileStore = (options: TokenStoreOptions = {}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const file = options.path ?? credentialsPath(path, options.env ?? processEnv())
    const folder = path.dirname(file)
    // Postline's own folder: whatever made it, only its owner may look inside. A folder of the caller's is theirs.
    const prepareFolder = options.path === undefined
      ? Effect.zipRight(fs.makeDirectory(folder, { recursive: true, mode: 0o700 }), fs.chmod(folder, 0o700))
      : Effect.void
    const lock = makeFileLock(fs, `${file}.lock`)

    const load: TokenStoreShape["load"] = fs.readFileString(file).pipe(
      Effect.flatMap(Schema.decode(StoredLoginJson)),
      Effect.map(Option.some),
      Effect.catchAll((error) =>
        error._tag === "SystemError" && error.reason === "NotFound"
          ? Effect.succeedNone
          : Effect.as(Effect.logWarning(`Postline: cannot read the stored login at ${file}; ignoring it`, error), Option.none())
      )
    )

    const save: TokenStoreShape["save"] = (login) =>
      Effect.gen(function*() {
        const json = yield* Schema.encode(StoredLoginJson)(login)
        yield* prepareFolder
        const temporary = `${file}.${crypto.randomUUID()}.tmp`
        yield* fs.writeFileString(temporary, `${json}\n`, { mode: 0o600, flag: "wx" }).pipe(
          Effect.zipRight(fs.chmod(temporary, 0o600)),
          Effect.zipRight(fs.rename(temporary, file)),
          Effect.tapError(() => Effect.ignore(fs.remove(temporary)))
        )
      })

    const clear: TokenStoreShape["clear"] = fs.remove(file).pipe(
      Effect.catchIf((error) => error._tag === "SystemError" && error.reason === "NotFound", () => Effect.void)
    )

    // The lock file sits beside the credentials: their folder must be there first.
    const withLock: TokenStoreShape["withLock"] = (effect) => Effect.zipRight(Effect.ignore(prepareFolder), lock(effect))

    return { load, save, clear, withLock, path: file } satisfies TokenStoreShape
  })

/**
 * Where a device login is kept between runs: one JSON file, `$XDG_CONFIG_HOME/postline/credentials.json` (else
 * `$HOME/.config/postline/credentials.json`), in a 0700 folder, itself 0600, with `credentials.json.lock` beside it
 * while a process refreshes, replaces or logs out the login. `TokenStore.Default(options?)` needs a `FileSystem`
 * and a `Path`; `TokenStore.layerNode(options?)` has Node's; `TokenStore.layerMemory()` keeps the
 * login in memory only.
 */
export class TokenStore extends Effect.Service<TokenStore>()("@postline/sdk/TokenStore", {
  effect: (options?: TokenStoreOptions) => makeFileStore(options)
}) {
  /** The file store, with Node's file system. */
  static readonly layerNode = (options?: TokenStoreOptions): Layer.Layer<TokenStore> =>
    TokenStore.Default(options).pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)))

  /** A store that keeps the login in memory, for tests and programs that must not write files. */
  static readonly layerMemory = (initial?: StoredLogin): Layer.Layer<TokenStore> =>
    Layer.effect(
      TokenStore,
      Effect.gen(function*() {
        const ref = yield* Ref.make(Option.fromNullable(initial))
        const lock = yield* Effect.makeSemaphore(1)
        return TokenStore.make({
          load: Ref.get(ref),
          save: (login) => Ref.set(ref, Option.some(login)),
          clear: Ref.set(ref, Option.none()),
          withLock: lock.withPermits(1),
          path: ":memory:"
        })
      })
    )
}
