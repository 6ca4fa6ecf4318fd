import { Effect } from "effect"
import * as Readline from "node:readline/promises"
import { Cancelled, UsageError } from "./Errors.js"
import { Output } from "./Output.js"

/** A yes or no question on the terminal; anything but y or yes is no (the default). */
const askOnTerminal = (question: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => Readline.createInterface({ input: process.stdin, output: process.stderr })),
    (terminal) =>
      Effect.async<boolean>((resume) => {
        // Ctrl-C (which readline takes from the terminal, rather than the process's signal) and Ctrl-D are a no too.
        terminal.once("SIGINT", () => {
          process.stderr.write("\n")
          terminal.close()
        })
        terminal.once("close", () => resume(Effect.succeed(false)))
        terminal.question(question).then(
          (answer) => resume(Effect.succeed(/^\s*y(es)?\s*$/i.test(answer))),
          () => resume(Effect.succeed(false))
        )
      }),
    (terminal) => Effect.sync(() => terminal.close())
  )

/**
 * Asks before a command changes anything (on the server, or the stored login): the contract's clients preview
 * what they will do, and its cost, before mutating or paid operations. `--yes` answers for the user; without it
 * the question needs a terminal on standard input, and a command that cannot ask refuses (exit 2) rather than
 * deciding for the user. The preview and the question go to standard error: standard output is the answer's.
 */
export class Confirmation extends Effect.Service<Confirmation>()("postline/Confirmation", {
  sync: () => ({
    canAsk: process.stdin.isTTY === true,
    ask: askOnTerminal
  })
}) {}

/**
 * Runs nothing unless confirmed: with `yes`, at once (without computing the preview); otherwise after
 * `preview` is shown and the user answers yes. `action` says what would be done, for the refusals' words.
 */
export const confirmed = <E, R>(options: {
  readonly yes: boolean
  readonly action: string
  readonly preview: Effect.Effect<string, E, R>
}) =>
  Effect.gen(function*() {
    if (options.yes) return
    const confirmation = yield* Confirmation
    if (!confirmation.canAsk) {
      return yield* new UsageError({
        message: `Not ${options.action} without confirmation: standard input is not a terminal, so pass --yes to proceed without asking`
      })
    }
    yield* (yield* Output).note(yield* options.preview)
    if (!(yield* confirmation.ask("Proceed? [y/N] "))) {
      return yield* new Cancelled({ message: `Cancelled: nothing was done (not ${options.action})` })
    }
  })

/** The end of a preview of a command that spends no credits. */
export const costsNothing = (preview: string) => `${preview}\nCost: none`
