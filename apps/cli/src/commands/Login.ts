import { Command } from "@effect/cli"
import { NodeHttpClient } from "@effect/platform-node"
import { User } from "@postline/domain"
import { defaultBaseUrl, deviceLogin, logout, normalizeBaseUrl, Postline, TokenStore } from "@postline/sdk"
import { Config, Effect, Layer, Option, Schema } from "effect"
import { serverOptions, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { Output } from "../Output.js"
import { namingUnreachableServer, offline } from "../Session.js"
import { fields } from "../Table.js"

/** How the CLI names itself to the server: the approval page and the login's record show it. */
export const cliClientId = "postline-cli"

const LoginAnswer = Schema.Struct({
  baseUrl: Schema.String,
  user: Schema.NullOr(User),
  credentialsFile: Schema.String,
  accessTokenExpiresAt: Schema.Date
})

const LogoutAnswer = Schema.Struct({ baseUrl: Schema.NullOr(Schema.String), loggedOut: Schema.Boolean })

/** The server to log in to: `--url`, else POSTLINE_URL, else the stored login's, else the SDK's default. */
const loginServer = (url: Option.Option<string>) =>
  Effect.gen(function*() {
    const fromEnv = yield* Config.option(Config.nonEmptyString("POSTLINE_URL"))
    const stored = Option.map(yield* Effect.flatMap(TokenStore, (store) => store.load), (login) => login.baseUrl)
    return normalizeBaseUrl(url.pipe(Option.orElse(() => fromEnv), Option.orElse(() => stored), Option.getOrElse(() => defaultBaseUrl)))
  })

const nodeLogin = Layer.merge(NodeHttpClient.layer, TokenStore.layerNode())

/** The device login at `baseUrl`, stored, and who it is. */
const loggingIn = (baseUrl: string) =>
  Effect.gen(function*() {
    const output = yield* Output
    const stored = yield* deviceLogin({
      baseUrl,
      clientId: cliClientId,
      // Nothing is opened: the user may be on another machine than this terminal.
      onCode: (code) =>
        output.note(
          [
            `To log in to ${baseUrl}, open ${code.verification_uri} and enter the code: ${code.user_code}`,
            `(or open ${code.verification_uri_complete})`,
            `Waiting for approval; the code expires in ${Math.round(code.expires_in / 60)} minutes…`
          ].join("\n")
        )
    })
    // As the login just approved: not POSTLINE_API_KEY or POSTLINE_TOKEN, which the environment may also hold.
    const context = yield* Effect.flatMap(Postline, (postline) => postline.client.agent.getContext()).pipe(
      Effect.provide(Postline.layer({ baseUrl, token: stored.accessToken, env: {} }))
    )
    const store = yield* TokenStore
    yield* output.answer(LoginAnswer, {
      baseUrl: stored.baseUrl,
      user: context.user,
      credentialsFile: store.path,
      accessTokenExpiresAt: stored.accessTokenExpiresAt
    }, (answer) =>
      fields([
        ["Logged in to", answer.baseUrl],
        ["As", answer.user === null ? "-" : `${answer.user.name} <${answer.user.email}>`],
        ["Credentials", answer.credentialsFile]
      ]))
  })

const login = Command.make("login", serverOptions, (options) =>
  Effect.flatMap(loginServer(options.url), (baseUrl) => loggingIn(baseUrl).pipe(namingUnreachableServer(options.url, baseUrl))).pipe(
    Effect.provide(nodeLogin),
    offline(options)
  )).pipe(
    Command.withDescription(
      "Logs in with a code you approve in a browser (on any device): prints the address and the code, waits for your approval, and stores the login (readable by you alone)"
    )
  )

const logoutCommand = Command.make("logout", { json: serverOptions.json, yes }, (options) =>
  Effect.gen(function*() {
    const store = yield* TokenStore
    const stored = yield* store.load
    if (Option.isSome(stored)) {
      yield* confirmed({
        yes: options.yes,
        action: "logging out",
        preview: Effect.succeed(costsNothing(`Log out of ${stored.value.baseUrl}: the login ends on the server, and ${store.path} is removed`))
      })
      yield* logout()
    }
    yield* (yield* Output).answer(
      LogoutAnswer,
      { baseUrl: Option.getOrNull(Option.map(stored, (login) => login.baseUrl)), loggedOut: Option.isSome(stored) },
      (answer) => answer.baseUrl === null ? "Not logged in: nothing to do" : `Logged out of ${answer.baseUrl}`
    )
  }).pipe(Effect.provide(nodeLogin), offline(options))).pipe(
    Command.withDescription("Ends the stored login on its server and removes it from this machine (asks first)")
  )

export const loginCommands = [login, logoutCommand] as const
