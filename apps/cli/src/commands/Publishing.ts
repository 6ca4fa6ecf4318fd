import { Command, Options } from "@effect/cli"
import {
  Estimate,
  IdempotencyKey,
  maxTargetsPerPublish,
  PaymentRequired,
  Post,
  type PostId,
  PostNowResponse,
  type PublishError,
  ScheduleRequest,
  ScheduleResponse,
  type SocialAccount,
  type SocialAccountId,
  type TeamId
} from "@postline/domain"
import { Postline, PublishInDoubt } from "@postline/sdk"
import { Duration, Effect, Option, Schema } from "effect"
import { accounts, decodedOption, postId, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { exitCodeOf } from "../ExitCodes.js"
import { failureOf, Output } from "../Output.js"
import { online } from "../Session.js"
import { withSpinner } from "../Spinner.js"
import { fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"
import { postText } from "./PostText.js"

const targets = accounts("An account to publish to; repeat it for several (default: the post's accounts, else all the team's connected ones)")

export const WaitSeconds = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, 3600, { message: () => "must be a whole number of seconds, 1 to 3600" })
)

const wait = decodedOption("wait", WaitSeconds, "seconds").pipe(
  Options.withDefault(120),
  Options.withDescription(
    "How long to keep asking while the server is still publishing it (default 120): then the command ends in doubt, printing the key that learns the answer"
  )
)

const idempotencyKey = decodedOption("idempotency-key", IdempotencyKey, "key").pipe(
  Options.optional,
  Options.withDescription("Sent as Idempotency-Key (default: a new UUID): the same key again gets the first answer instead of publishing twice")
)

/**
 * The accounts a publish goes to: those given, else the post's own, else every connected account of the team,
 * which must then be no more than a publish takes (one more is asked for, to tell).
 */
const targetsOf = (teamId: TeamId, postId: PostId, given: ReadonlyArray<SocialAccountId>) =>
  Effect.gen(function*() {
    if (given.length > 0) return given
    const { client } = yield* Postline
    const post = yield* client.posts.getPost({ path: { teamId, postId } })
    if (post.socialAccountIds.length > 0) return post.socialAccountIds
    const connected = yield* client.socialAccounts.listSocialAccounts({
      path: { teamId },
      urlParams: { status: "connected", limit: maxTargetsPerPublish + 1 }
    })
    if (connected.data.length === 0) {
      return yield* new UsageError({ message: "The team has no connected account: connect one (postline accounts connect) or pass --account" })
    }
    if (connected.data.length > maxTargetsPerPublish) {
      return yield* new UsageError({
        message: `The team has more than ${maxTargetsPerPublish} connected accounts, more than one publish takes: ` +
          `pass --account for each account to publish to (at most ${maxTargetsPerPublish})`
      })
    }
    return connected.data.map((account) => account.id)
  })

const credits = (n: number) => `${n} credit${n === 1 ? "" : "s"}`

type EstimateItem = Estimate["perAccount"][number]

/** What publishing would cost per account and in all, and what the organization has; changes nothing. */
export const estimateText = (estimate: Estimate, byId: ReadonlyMap<string, SocialAccount>) =>
  [
    table([
      { header: "account", value: (item) => item.socialAccountId },
      { header: "provider", value: (item) => byId.get(item.socialAccountId)?.provider ?? "-" },
      { header: "handle", value: (item) => byId.get(item.socialAccountId)?.handle ?? "-" },
      // A webhook's handle is its host, which two webhooks may share: its name tells them apart.
      { header: "name", value: (item) => orDash(byId.get(item.socialAccountId)?.displayName) },
      // What each account gets sent, when one gets more than a post (a thread's parts, a first comment).
      ...(estimate.perAccount.some((item) => (item.publishes ?? 1) > 1)
        ? [{ header: "publishes", value: (item: EstimateItem) => orDash(item.publishes) }]
        : []),
      { header: "credits", value: (item) => String(item.credits) },
      // Why an account would fail before anything is sent: a part too long, media it refuses, a reconnect.
      ...(estimate.perAccount.some((item) => (item.problems ?? []).length > 0)
        ? [{ header: "problems", value: (item: EstimateItem) => (item.problems ?? []).join("; ") || "-" }]
        : [])
    ], estimate.perAccount),
    "",
    fields([
      ["Cost", credits(estimate.total)],
      ["Available", `${credits(estimate.available)}${estimate.sufficient ? "" : " (not enough)"}`]
    ])
  ].join("\n")

/** The team's accounts by id, to name them in an estimate. */
export const accountsById = (teamId: TeamId) =>
  Effect.flatMap(Postline, ({ client }) =>
    client.socialAccounts.listSocialAccounts({ path: { teamId }, urlParams: { limit: 100 } })).pipe(
      Effect.map((page) => new Map(page.data.map((account) => [account.id, account])))
    )

const estimateOf = (teamId: TeamId, postId: PostId, socialAccountIds: ReadonlyArray<SocialAccountId>) =>
  Effect.flatMap(Postline, ({ client }) => client.posts.estimatePost({ path: { teamId, postId }, payload: { socialAccountIds } }))

/**
 * Why the server would refuse (402) a spend whose estimate is not sufficient: the credits short of it (and how
 * to get them, as the server says) or, the credits being enough, the month's spend cap.
 */
export const unaffordable = (doing: string, estimate: Estimate) =>
  estimate.total <= estimate.available
    ? new PaymentRequired({
      message: `The monthly spend cap stops it: ${doing} costs ${credits(estimate.total)}, more than the cap leaves this month (postline billing shows it)`,
      reason: "spend_cap_reached"
    })
    : new PaymentRequired({
      message: `Not enough credits: ${doing} costs ${credits(estimate.total)}, the organization has ${credits(estimate.available)} available` +
        (estimate.howToGetCredits === undefined ? "" : `. ${estimate.howToGetCredits}`),
      reason: "insufficient_credits"
    })

/** The most of a post's text a confirmation shows, in code points. */
const excerptLength = 60

/** A post's text on one line, cut at `excerptLength` code points: enough to recognize the post being sent. */
export const excerpt = (content: string) => {
  const line = content.replace(/\s+/g, " ").trim()
  const codePoints = [...line]
  return JSON.stringify(codePoints.length <= excerptLength ? line : `${codePoints.slice(0, excerptLength - 1).join("")}…`)
}

/**
 * The preview of a paid command: the post's text, the estimate and the organization's credits. Credits short of
 * the cost end the command here, as the server would (402), instead of asking a question whose yes cannot succeed.
 */
const costPreview = (heading: string, teamId: TeamId, postId: PostId, socialAccountIds: ReadonlyArray<SocialAccountId>) =>
  Effect.gen(function*() {
    const estimate = yield* estimateOf(teamId, postId, socialAccountIds)
    if (!estimate.sufficient) return yield* unaffordable("publishing", estimate)
    const { client } = yield* Postline
    const post = yield* client.posts.getPost({ path: { teamId, postId } })
    return `${heading}\nText: ${excerpt(post.content)}\n${estimateText(estimate, yield* accountsById(teamId))}`
  })

export const errorText = (error: PublishError | null) => error === null ? "-" : `${error.category}: ${error.message}`

const estimate = Command.make("estimate", { ...serverOptions, team, postId, accounts: targets }, (options) =>
  Effect.gen(function*() {
    const teamId = yield* teamOf(options.team)
    const socialAccountIds = yield* targetsOf(teamId, options.postId, options.accounts)
    const answer = yield* estimateOf(teamId, options.postId, socialAccountIds)
    const teamAccounts = yield* accountsById(teamId)
    yield* (yield* Output).answer(Estimate, answer, (value) => estimateText(value, teamAccounts))
  }).pipe(online(options))).pipe(
    Command.withDescription("What publishing a post now would cost, per account, and the organization's available credits; changes nothing")
  )

/**
 * After a publish (or an unpublish: `doing` says which) that ended without a definite answer (the server
 * unreachable, timing out or failing, or still running it when the SDK stopped waiting), says how to repeat it so
 * that the repetition cannot act twice. A refusal (exit 2 to 7) needs no such advice.
 */
export const keyForRetry = (key: string, doing = "publishing") => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.tapError(effect, (error) =>
    error instanceof PublishInDoubt
      ? Effect.flatMap(Output, (output) =>
        output.note(
          `The server is still ${doing} it and may yet succeed: to learn its answer without ${doing} twice, repeat the command later with --idempotency-key ${error.idempotencyKey}`
        ))
      : exitCodeOf(failureOf(error)) === 1
      ? Effect.flatMap(Output, (output) => output.note(`To try again without ${doing} twice, repeat the command with --idempotency-key ${key}`))
      : Effect.void)

const postNow = Command.make("post-now", { ...serverOptions, team, postId, accounts: targets, idempotencyKey, wait, yes }, (options) =>
  Effect.gen(function*() {
    const postline = yield* Postline
    const teamId = yield* teamOf(options.team)
    const socialAccountIds = yield* targetsOf(teamId, options.postId, options.accounts)
    const accountsText = `${socialAccountIds.length} account${socialAccountIds.length === 1 ? "" : "s"}`
    yield* confirmed({
      yes: options.yes,
      action: "publishing",
      preview: costPreview(`Publish post ${options.postId} now to ${accountsText}:`, teamId, options.postId, socialAccountIds)
    })
    const key = Option.getOrElse(options.idempotencyKey, () => crypto.randomUUID())
    const { response } = yield* postline.postNow({
      teamId,
      postId: options.postId,
      payload: { socialAccountIds },
      idempotencyKey: key
    }).pipe(withSpinner(`Publishing to ${accountsText}…`), keyForRetry(key))
    yield* (yield* Output).answer(PostNowResponse, response, (answer) =>
      [
        table([
          { header: "account", value: (result) => result.socialAccountId },
          { header: "status", value: (result) => result.status },
          { header: "credits", value: (result) => String(result.creditsSpent) },
          { header: "url", value: (result) => orDash(result.url) },
          { header: "error", value: (result) => errorText(result.error) }
        ], answer.results),
        "",
        `Outcome: ${answer.outcome}`
      ].join("\n"))
  }).pipe(online(options, { retry: { inDoubtFor: Duration.seconds(options.wait) } }))).pipe(
    Command.withDescription("Publishes a post now (asks first, showing its cost and your credits); --yes to skip")
  )

const [AtInstant, InNextSlot] = ScheduleRequest.members

/** When a schedule publishes: a member of the request without its accounts. */
type When = Omit<typeof AtInstant.Type, "socialAccountIds"> | Omit<typeof InNextSlot.Type, "socialAccountIds">

const schedule = Command.make("schedule", {
  ...serverOptions,
  team,
  postId,
  accounts: targets,
  at: decodedOption("at", AtInstant.fields.scheduledAt, "instant").pipe(
    Options.optional,
    Options.withDescription("When to publish: an ISO 8601 instant with an offset, e.g. 2027-01-31T09:00:00+01:00")
  ),
  nextSlot: Options.boolean("next-slot").pipe(Options.withDescription("In the team's next free posting slot (postline slots)")),
  idempotencyKey,
  yes
}, (options) =>
  Effect.gen(function*() {
    const when: Option.Option<When> = Option.match(options.at, {
      onNone: () => (options.nextSlot ? Option.some({ slot: "next" }) : Option.none()),
      onSome: (scheduledAt) => (options.nextSlot ? Option.none() : Option.some({ scheduledAt }))
    })
    if (Option.isNone(when)) return yield* new UsageError({ message: "Pass either --at <instant> or --next-slot" })
    const postline = yield* Postline
    const teamId = yield* teamOf(options.team)
    const socialAccountIds = yield* targetsOf(teamId, options.postId, options.accounts)
    const whenText = "slot" in when.value ? "in the team's next free posting slot" : `at ${when.value.scheduledAt}`
    yield* confirmed({
      yes: options.yes,
      action: "scheduling",
      preview: costPreview(`Schedule post ${options.postId} ${whenText} to ${socialAccountIds.length} account(s):`, teamId, options.postId, socialAccountIds)
    })
    const key = Option.getOrElse(options.idempotencyKey, () => crypto.randomUUID())
    const { response } = yield* postline.schedulePost({
      teamId,
      postId: options.postId,
      payload: { socialAccountIds, ...when.value },
      idempotencyKey: key
    }).pipe(keyForRetry(key))
    yield* (yield* Output).answer(ScheduleResponse, response, (answer) =>
      [
        fields([["Scheduled at", answer.scheduledAt], ["Outcome", answer.outcome]]),
        "",
        table([
          { header: "account", value: (result) => result.socialAccountId },
          { header: "status", value: (result) => result.status },
          { header: "error", value: (result) => errorText(result.error) }
        ], answer.results)
      ].join("\n"))
  }).pipe(online(options))).pipe(
    Command.withDescription("Schedules a post --at an instant or in the --next-slot (asks first, showing its cost and your credits)")
  )

const unschedule = Command.make("unschedule", { ...serverOptions, team, postId, yes }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const path = { teamId: yield* teamOf(options.team), postId: options.postId }
    yield* confirmed({
      yes: options.yes,
      action: "unscheduling",
      preview: Effect.map(client.posts.getPost({ path }), (post) =>
        costsNothing(
          `Unschedule post ${post.id} (scheduled at ${orDash(post.scheduledAt)}): it becomes a draft again and its held credits are released`
        ))
    })
    const post = yield* client.posts.unschedulePost({ path })
    yield* (yield* Output).answer(Post, post, postText)
  }).pipe(online(options))).pipe(Command.withDescription("Returns a scheduled post to draft, releasing its credits (asks first)"))

export const publishingCommands = [estimate, postNow, schedule, unschedule] as const
