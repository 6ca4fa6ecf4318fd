import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { HttpApiClient } from "@effect/platform"
import { OrganizationId } from "@postline/domain"
import { Console, Effect, ParseResult, Redacted, Schema } from "effect"
import { AdminApi, CreditAmount, CredentialsKeyId, Email, GrantNote, Password, PersonName } from "./Api.js"

/** The admin API's client, over whichever socket the edge chose (the running server's, or this process's own). */
export class AdminClient extends Effect.Service<AdminClient>()("AdminClient", {
  effect: HttpApiClient.make(AdminApi, { baseUrl: "http://postline-admin" })
}) {}

/** An option decoded by a schema of the admin API, refused in the schema's words: `--amount must be …`. */
const decodedBy = <A>(name: string, schema: Schema.Schema<A, string>) =>
  Options.text(name).pipe(Options.mapEffect((value) =>
    Schema.decode(schema)(value).pipe(Effect.mapError((error) =>
      ValidationError.invalidValue(HelpDoc.p(`--${name} ${ParseResult.ArrayFormatter.formatErrorSync(error)[0]?.message}`))
    ))
  ))

/** Standard output carries a command's answer alone, one JSON document, for scripts to parse. */
const printJson = (value: unknown) => Console.log(JSON.stringify(value))

const email = decodedBy("email", Email).pipe(Options.withDescription("The user's email address"))
const limit = Options.integer("limit").pipe(
  Options.withSchema(Schema.Int.pipe(Schema.between(1, 10_000))),
  Options.withDefault(1000),
  Options.withDescription("Print at most this many, oldest first (1 to 10000)")
)

const createUser = Command.make("create", {
  email,
  name: decodedBy("name", PersonName).pipe(Options.withDescription("The user's name"))
}, (payload) => Effect.flatMap(AdminClient, (admin) => admin.users.create({ payload })).pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription("Creates a user and a personal access token; prints {\"id\",\"email\",\"token\"}. The token is shown once."))

const listUsers = Command.make("list", { limit }, ({ limit }) =>
  Effect.flatMap(AdminClient, (admin) => admin.users.list({ urlParams: { limit } })).pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription("Prints the users as a JSON array: id, email, name, createdAt, hasPassword, organizations."))

const newToken = Command.make("token", { email }, (payload) =>
  Effect.flatMap(AdminClient, (admin) => admin.users.token({ payload })).pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription("Creates another personal access token for an existing user; prints {\"id\",\"email\",\"token\"}."))

const readStandardInput = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
})

const setPassword = Command.make("set-password", { email }, ({ email }) =>
  Effect.gen(function*() {
    // One line: a trailing newline from `echo` or a terminal is not part of the password.
    const password = yield* Schema.decode(Password)((yield* readStandardInput).replace(/\r?\n$/, "")).pipe(
      Effect.mapError((error) => new Error(ParseResult.ArrayFormatter.formatErrorSync(error)[0]?.message))
    )
    yield* Effect.flatMap(AdminClient, (admin) => admin.users.setPassword({ payload: { email, password: Redacted.make(password) } }))
    yield* Console.error(`Password set for ${email}`)
  })).pipe(Command.withDescription("Reads a password from standard input (one line) and stores its scrypt hash, for the device-login page."))

const listOrganizations = Command.make("list", { limit }, ({ limit }) =>
  Effect.flatMap(AdminClient, (admin) => admin.organizations.list({ urlParams: { limit } })).pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription("Prints the organizations as a JSON array: id, name, createdAt, members, teams, creditsAvailable."))

const grantCredits = Command.make("grant", {
  organizationId: decodedBy("organization", OrganizationId).pipe(Options.withDescription("The organization's id (a UUID)")),
  amount: decodedBy("amount", Schema.compose(Schema.NumberFromString, CreditAmount)).pipe(
    Options.withDescription("Whole credits to add, 1 to 1000000000")
  ),
  note: decodedBy("note", GrantNote).pipe(Options.optional, Options.withDescription("Why (kept in the ledger)"))
}, ({ amount, note, organizationId }) =>
  Effect.flatMap(AdminClient, (admin) =>
    admin.credits.grant({ payload: { organizationId, amount, note: note._tag === "Some" && note.value !== "" ? note.value : null } }))
    .pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription("Adds credits to an organization; prints {\"organizationId\",\"balance\",\"reserved\",\"available\"}."))

const rotateCredentials = Command.make("rotate", {}, () =>
  Effect.flatMap(AdminClient, (admin) => admin.credentials.rotate()).pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription(
    "Re-encrypts every social account's credentials with CREDENTIALS_KEY, so that the keys of CREDENTIALS_KEY_PREVIOUS " +
      "can be dropped; prints {\"reencrypted\",\"alreadyCurrent\",\"unreadable\"}."
  ))

const forgetKey = Command.make("forget-key", {
  keyId: Args.text({ name: "keyId" }).pipe(
    Args.withSchema(CredentialsKeyId),
    Args.withDescription("The lost key's id, as the server's refusal to start names it")
  )
}, ({ keyId }) =>
  Effect.flatMap(AdminClient, (admin) => admin.credentials.forgetKey({ payload: { keyId } })).pipe(Effect.flatMap(printJson)))
  .pipe(Command.withDescription(
    "Declares a credentials key lost, when no process has it any more: its accounts are marked reconnect_required " +
      "(to be reconnected with new credentials) and servers without it may start; prints {\"keyId\",\"marked\",\"accounts\"}."
  ))

export const adminCommand = Command.make("admin").pipe(
  Command.withDescription(
    "The operator's commands. They work while the server runs (on the embedded database, through the data folder's " +
      "admin socket) and while it is stopped."
  ),
  Command.withSubcommands([
    Command.make("users").pipe(
      Command.withDescription("Users and their personal access tokens"),
      Command.withSubcommands([createUser, listUsers, newToken, setPassword])
    ),
    Command.make("organizations").pipe(
      Command.withDescription("Every organization of the installation"),
      Command.withSubcommands([listOrganizations])
    ),
    Command.make("credits").pipe(Command.withDescription("Organizations' credits"), Command.withSubcommands([grantCredits])),
    Command.make("credentials").pipe(
      Command.withDescription("The social accounts' encrypted credentials"),
      Command.withSubcommands([rotateCredentials, forgetKey])
    )
  ])
)
