import { Command, Options } from "@effect/cli"
import { HttpClientError } from "@effect/platform"
import { IdempotencyKey, type Post, type SocialAccountId, type TeamId, UnpublishResponse } from "@postline/domain"
import { Postline, PublishInDoubt } from "@postline/sdk"
import { Duration, Effect, Option } from "effect"
import { accounts, decodedOption, postId, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { Output } from "../Output.js"
import { online } from "../Session.js"
import { withSpinner } from "../Spinner.js"
import { orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"
import { accountsById, errorText, excerpt, keyForRetry, WaitSeconds } from "./Publishing.js"

/** Said wherever unpublishing is offered: the contract keeps what publishing spent. */
const noRefund = "Credits spent publishing it are not given back"

const idempotencyKey = decodedOption("idempotency-key", IdempotencyKey, "key").pipe(
  Options.optional,
  Options.withDescription("Sent as Idempotency-Key (default: a new UUID): the same key again gets the first answer instead of deleting twice")
)

const wait = decodedOption("wait", WaitSeconds, "seconds").pipe(
  Options.withDefault(120),
  Options.withDescription(
    "How long to keep asking while the server is still deleting it (default 120): then the command ends in doubt, printing the key that learns the answer"
  )
)

/**
 * The SDK's transport error that says the server still runs the request with this key, as the SDK's own
 * PublishInDoubt (exit 1, with the key to repeat), which its postNow answers and its client leaves wrapped.
 */
const inDoubtAsItself = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(effect, (error): E | PublishInDoubt =>
    HttpClientError.isHttpClientError(error) && error._tag === "RequestError" && error.cause instanceof PublishInDoubt
      ? error.cause
      : error)

/** The accounts a confirmation names: those given, else every account the post is published to. */
const takenDownFrom = (post: Post, given: ReadonlyArray<SocialAccountId>) =>
  given.length > 0 ? given : post.targets.filter((target) => target.status === "published").map((target) => target.socialAccountId)

/** What will be deleted, where: each account with its provider, handle and the post's address there. */
const preview = (teamId: TeamId, post: Post, given: ReadonlyArray<SocialAccountId>) =>
  Effect.map(accountsById(teamId), (byId) => {
    const from = takenDownFrom(post, given)
    const parts = post.thread.length + 1
    return costsNothing([
      `Delete post ${post.id} from ${from.length} account${from.length === 1 ? "" : "s"}: ${excerpt(post.content)}`,
      table([
        { header: "account", value: (id) => id },
        { header: "provider", value: (id) => byId.get(id)?.provider ?? "-" },
        { header: "handle", value: (id) => byId.get(id)?.handle ?? "-" },
        { header: "url", value: (id) => orDash(post.targets.find((target) => target.socialAccountId === id)?.url) }
      ], from),
      `Every part${parts > 1 ? ` (${parts})` : ""}${post.firstComment === null ? "" : " and the first comment"} is deleted ` +
        `from each network, which cannot be undone. ${noRefund}.`
    ].join("\n"))
  })

export const unpublish = Command.make("unpublish", {
  ...serverOptions,
  team,
  postId,
  accounts: accounts("An account to delete the post from; repeat it for several (default: every account it is published to)"),
  idempotencyKey,
  wait,
  yes
}, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const path = { teamId, postId: options.postId }
    yield* confirmed({
      yes: options.yes,
      action: "deleting the post from the networks",
      preview: Effect.flatMap(client.posts.getPost({ path }), (post) => preview(teamId, post, options.accounts))
    })
    const key = Option.getOrElse(options.idempotencyKey, () => crypto.randomUUID())
    const answer = yield* client.posts.unpublishPost({
      path,
      payload: options.accounts.length > 0 ? { socialAccountIds: options.accounts } : {},
      headers: { "idempotency-key": key }
    }).pipe(inDoubtAsItself, withSpinner("Deleting from the networks…"), keyForRetry(key, "deleting"))
    yield* (yield* Output).answer(UnpublishResponse, answer, (response) =>
      [
        table([
          { header: "account", value: (result) => result.socialAccountId },
          { header: "status", value: (result) => result.status },
          { header: "error", value: (result) => errorText(result.error) }
        ], response.results),
        "",
        `Outcome: ${response.outcome}`,
        `${noRefund}.`
      ].join("\n"))
  }).pipe(online(options, { retry: { inDoubtFor: Duration.seconds(options.wait) } }))).pipe(
    Command.withDescription(
      "Deletes a published post from the networks (every part of a thread, and its first comment), from the --account " +
        `given or every account it is published to; asks first, --yes to skip. ${noRefund}`
    )
  )
