import { Schema } from "effect"

/** The command line asks for something the CLI will not do as given: a missing choice, a refused confirmation without a terminal. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** The user answered no to a confirmation: nothing was done. */
export class Cancelled extends Schema.TaggedError<Cancelled>()("Cancelled", { message: Schema.String }) {}

/** No connection to the server could be made (refused, no such host): the message names it and how to name another. */
export class ServerUnreachable extends Schema.TaggedError<ServerUnreachable>()("ServerUnreachable", { message: Schema.String }) {}

/** A file the command reads could not be read. */
export class FileUnreadable extends Schema.TaggedError<FileUnreadable>()("FileUnreadable", { message: Schema.String }) {}

/** A connect by signing in ended without an account: the person denied it, or the network or the server refused. */
export class AccountConnectFailed extends Schema.TaggedError<AccountConnectFailed>()("AccountConnectFailed", { message: Schema.String }) {}

/** Nobody approved a connect by signing in before its link expired. */
export class AccountConnectExpired extends Schema.TaggedError<AccountConnectExpired>()("AccountConnectExpired", { message: Schema.String }) {}
