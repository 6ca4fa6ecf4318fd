import { CliConfig, Command, HelpDoc, Span, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Layer, Logger, LogLevel } from "effect"
import { exitCodeOf, usageExitCode } from "./ExitCodes.js"
import { describeFailure, failureDocument, failureOf } from "./Output.js"
import { helpFooter, postlineCommand } from "./Root.js"
import { Confirmation } from "./Confirmation.js"
import { withHelpText } from "./HelpText.js"

declare const POSTLINE_CLI_VERSION: string | undefined

const version = typeof POSTLINE_CLI_VERSION === "string" ? POSTLINE_CLI_VERSION : "development"

const cli = Command.run(postlineCommand, {
  name: "postline",
  version,
  summary: Span.text("publish to your social accounts through a Postline server"),
  footer: helpFooter
})

/**
 * A failure no command reported itself: @effect/cli's refusal of the command line (which it has printed), or a
 * command group run alone. With --json, it is the JSON document on standard output too.
 */
const reportUnreported = (error: unknown, json: boolean) => {
  if (ValidationError.isValidationError(error)) {
    const failure = { _tag: "ValidationError", message: HelpDoc.toAnsiText(error.error).replace(/\u001b\[[0-9;]*m/g, "").trim() }
    return Effect.as(json ? Console.log(failureDocument(failure)) : Effect.void, usageExitCode)
  }
  const failure = failureOf(error)
  return Effect.as(json ? Console.log(failureDocument(failure)) : Console.error(describeFailure(failure)), exitCodeOf(failure))
}

/** Logs are for people and go to standard error: standard output is the answer's (or, for `mcp`, the protocol's). */
const stderrLogger = Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true, colors: process.stderr.isTTY === true }))

const argv = process.argv

cli(argv).pipe(
  withHelpText,
  Effect.as(0),
  Effect.catchAll((error) =>
    error._tag === "Reported" ? Effect.succeed(error.exitCode) : reportUnreported(error, argv.includes("--json"))),
  // A defect is a bug of the CLI's: its cause goes to standard error, and the exit status is 1.
  Effect.catchAllDefect((defect) => Effect.as(Console.error(Cause.pretty(Cause.die(defect))), 1)),
  Effect.flatMap((code) => Effect.sync(() => void (process.exitCode = code))),
  Effect.provide(Layer.mergeAll(NodeContext.layer, Confirmation.Default, CliConfig.layer({ showBuiltIns: false }))),
  Effect.provide(Layer.merge(stderrLogger, Logger.minimumLogLevel(LogLevel.Warning))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
