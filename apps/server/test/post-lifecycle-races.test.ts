import { expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw } from "./support/TestServer.js"
import { eventually, inSeconds } from "./support/Waiting.js"

/**
 * Every lifecycle operation of a post (post-now, schedule, unschedule, PATCH, DELETE) against a post in
 * each state, alone and all at once. Whatever the interleaving: the answers are those of some order of the
 * operations one after another, each (post, account) is delivered at most once, and when nothing is in
 * flight no credit stays reserved and the ledger balances.
 *
 * The scheduler sends one step at a time, so that while a due post's first account is being sent (its
 * receiver answers after 2 s), its other accounts wait with no attempt yet: the state "publishing".
 */
const RaceServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(
      new Map([
        ["SCHEDULE_MIN_LEAD_SECONDS", "1"],
        ["SCHEDULER_POLL_MS", "100"],
        ["SCHEDULER_CONCURRENCY", "1"],
        ["CREDIT_COSTS", `{"webhook":1}`]
      ])
    ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)

const initialCredits = 50
const slowAnswerMillis = 2000

/** "rescheduled": a post that failed, scheduled again (not yet due). */
type State = "draft" | "scheduled" | "publishing" | "published" | "failed" | "rescheduled"

type Operation = "postNow" | "schedule" | "unschedule" | "patch" | "delete"
const operations: ReadonlyArray<Operation> = ["postNow", "schedule", "unschedule", "patch", "delete"]

/**
 * The post as the operations see it. "sent" is publishing or published (every operation 409); a scheduled
 * post remembers what unscheduling returns it to.
 */
type Model =
  | { readonly _tag: "draft" | "failed" | "sent" | "gone" }
  | { readonly _tag: "scheduled"; readonly from: "draft" | "failed" }

/** What one operation answers on a post in `model`, and what the post becomes (README: Posts, Scheduling). */
const step = (model: Model, operation: Operation): { readonly status: number; readonly next: Model } => {
  const refused = { status: 409, next: model }
  if (model._tag === "gone") return { status: 404, next: model }
  switch (operation) {
    case "postNow":
      return model._tag === "draft" || model._tag === "failed" ? { status: 200, next: { _tag: "sent" } } : refused
    case "schedule":
      return model._tag === "draft" || model._tag === "failed"
        ? { status: 200, next: { _tag: "scheduled", from: model._tag } }
        : model._tag === "scheduled" ? { status: 200, next: model } : refused
    case "unschedule":
      return model._tag === "scheduled" ? { status: 200, next: { _tag: model.from } } : refused
    case "patch":
      return model._tag === "draft" ? { status: 200, next: model } : refused
    case "delete":
      return model._tag === "draft" ? { status: 200, next: { _tag: "gone" } } : refused
  }
}

/** The post's status once nothing is in flight (a scheduled post has come due and been published by then). */
const settledStatus = (model: Model): string =>
  model._tag === "gone" ? "(deleted)" : model._tag === "sent" || model._tag === "scheduled" ? "published" : model._tag

interface Outcome {
  readonly label: string
  readonly operation: Operation
  readonly status: number
  readonly body: unknown
  readonly answeredAt: number
}

/** An order of the outcomes in which the model answers each as it was answered and ends as the post did. */
const serialOrder = (start: Model, outcomes: ReadonlyArray<Outcome>, finalStatus: string): Array<string> | undefined => {
  const search = (model: Model, left: ReadonlyArray<Outcome>): Array<string> | undefined => {
    if (left.length === 0) return settledStatus(model) === finalStatus ? [] : undefined
    for (const [index, outcome] of left.entries()) {
      const { next, status } = step(model, outcome.operation)
      if (status !== outcome.status) continue
      const rest = search(next, left.filter((_, other) => other !== index))
      if (rest !== undefined) return [outcome.label, ...rest]
    }
    return undefined
  }
  return search(start, outcomes)
}

interface Delivery {
  readonly post: string
  readonly account: string
  readonly webhookId: string
  readonly arrivedAt: number
  answeredAt?: number
  status?: number
}

/** Webhook receivers that log each delivery, and answer as `answer` says for its post (204 at once by default). */
const makeDeliveryLog = Effect.gen(function*() {
  const receiver = yield* makeWebhookReceiver
  const deliveries: Array<Delivery> = []
  const answers = new Map<string, { readonly status: number; readonly afterMillis: number }>()
  receiver.answerWith((event, response) => {
    const { data } = JSON.parse(event.body)
    const delivery: Delivery = {
      post: data.postId,
      account: data.socialAccountId,
      webhookId: String(event.headers["webhook-id"]),
      arrivedAt: Date.now()
    }
    deliveries.push(delivery)
    const { afterMillis, status } = answers.get(delivery.post) ?? { status: 204, afterMillis: 0 }
    setTimeout(() => {
      delivery.answeredAt = Date.now()
      delivery.status = status
      response.writeHead(status).end()
    }, afterMillis)
  })
  return {
    url: receiver.url,
    deliveries,
    answer: (postId: string, status: number, afterMillis = 0) => void answers.set(postId, { status, afterMillis }),
    of: (postId: string) => deliveries.filter((delivery) => delivery.post === postId)
  }
})

/** A team of an organization with `initialCredits`, three webhook accounts costing a credit each, and the calls. */
const raceTeam = Effect.gen(function*() {
  const log = yield* makeDeliveryLog
  const team = yield* publishingTeam(initialCredits)
  const accounts: Array<string> = []
  for (const path of ["a", "b", "c"]) accounts.push((yield* team.connect({ provider: "webhook", url: `${log.url}/${path}` })).id)

  const request = (postId: string, operation: Operation, socialAccountIds: ReadonlyArray<string>) => {
    switch (operation) {
      case "postNow":
        return team.postNow(postId, socialAccountIds)
      case "schedule":
        // The time is taken when the request is sent, with room for a busy server to take it in.
        return Effect.suspend(() => team.call("POST", `/posts/${postId}/schedule`, { socialAccountIds, scheduledAt: inSeconds(10) }))
      case "unschedule":
        return team.call("POST", `/posts/${postId}/unschedule`)
      case "patch":
        return team.call("PATCH", `/posts/${postId}`, { content: "Changed while racing" })
      case "delete":
        return team.call("DELETE", `/posts/${postId}`)
    }
  }

  const perform = (postId: string, operation: Operation, socialAccountIds: ReadonlyArray<string> = accounts, label: string = operation) =>
    Effect.map(
      request(postId, operation, socialAccountIds),
      (response): Outcome => ({ label, operation, status: response.status, body: response.body, answeredAt: Date.now() })
    )

  const scheduleAt = (postId: string, seconds: number) =>
    Effect.map(team.scheduleSoon(postId, accounts, seconds), ({ answer }) => {
      if (answer.status !== 200) throw new Error(`schedule failed: ${JSON.stringify(answer.body)}`)
      return Date.parse(answer.body.scheduledAt)
    })

  const statusOf = (postId: string) =>
    Effect.map(team.call("GET", `/posts/${postId}`), (response) => response.status === 404 ? "(deleted)" : response.body.status as string)

  /** A post in `state`; for a scheduled one, when it is due; for "publishing", the accounts still waiting their turn. */
  const postIn = (state: State) =>
    Effect.gen(function*() {
      const post = yield* team.draft(`A post ${state}`)
      if (state === "published" || state === "failed" || state === "rescheduled") {
        // A receiver's 400 fails the account for good (invalid_content); the next attempt is accepted.
        if (state !== "published") log.answer(post.id, 400)
        const sent = yield* team.postNow(post.id, accounts)
        expect(sent.body.outcome).toBe(state === "published" ? "none_failed" : "all_failed")
        log.answer(post.id, 204)
      }
      if (state === "scheduled" || state === "rescheduled") {
        // Far enough ahead that a busy machine answers the operations before it.
        return { postId: post.id, dueAt: yield* scheduleAt(post.id, 12), waiting: accounts }
      }
      if (state === "publishing") {
        log.answer(post.id, 204, slowAnswerMillis)
        yield* scheduleAt(post.id, 2)
        yield* eventually(Effect.sync(() => log.of(post.id).length), (count) => count > 0)
        const first = log.of(post.id)
        expect(first).toHaveLength(1)
        return { postId: post.id, dueAt: undefined, waiting: accounts.filter((account) => account !== first[0].account) }
      }
      expect(yield* statusOf(post.id)).toBe(state)
      return { postId: post.id, dueAt: undefined, waiting: accounts }
    })

  /** Until no post is scheduled or publishing, no delivery awaits its answer and nothing due waits or is sent. */
  const settle = (postIds: ReadonlyArray<string>) =>
    eventually(
      Effect.all({
        statuses: Effect.forEach(postIds, statusOf),
        health: Effect.map(raw({ method: "GET", path: "/health" }), (response) => response.body.scheduler)
      }),
      ({ health, statuses }) =>
        statuses.every((status) => status !== "scheduled" && status !== "publishing") &&
        log.deliveries.every((delivery) => delivery.answeredAt !== undefined) &&
        health.sending === 0 && health.dueWaiting === 0
    )

  /**
   * Per (post, account): deliveries accepted (1 when the target is published, else 0), deliveries sent
   * while another one to it was still unanswered or after one was accepted (none), and distinct webhook-ids
   * (one). Per (post, account) in the ledger: reserved = spent + released, spent only for a published
   * target. The organization: nothing reserved, the balance what the published targets left.
   */
  const expectConsistent = (posts: Record<string, string>) =>
    Effect.gen(function*() {
      // (post, account) pairs, named by the post's label and the account's path for readable failures.
      const nameOf = new Map<string, string>()
      for (const [label, postId] of Object.entries(posts)) {
        for (const [index, account] of accounts.entries()) nameOf.set(`${postId}/${account}`, `${label}/${"abc"[index]}`)
      }
      const targets = new Map<string, string>()
      for (const postId of Object.values(posts)) {
        const post = yield* team.call("GET", `/posts/${postId}`)
        for (const target of post.status === 200 ? post.body.targets : []) targets.set(`${postId}/${target.socialAccountId}`, target.status)
      }
      const pairs = [...nameOf.keys()]
      const published = pairs.filter((pair) => targets.get(pair) === "published")

      const deliveries = pairs.map((pair) => {
        const sent = log.deliveries.filter((delivery) => `${delivery.post}/${delivery.account}` === pair)
        const accepted = sent.filter((delivery) => delivery.status! >= 200 && delivery.status! < 300)
        const repeated = sent.filter((delivery, index) =>
          index > 0 && (delivery.arrivedAt < sent[index - 1].answeredAt! || sent[index - 1].status! < 300)
        )
        return {
          pair: nameOf.get(pair),
          target: targets.get(pair) ?? null,
          accepted: accepted.length,
          repeated: repeated.length,
          webhookIds: new Set(sent.map((delivery) => delivery.webhookId)).size
        }
      })
      expect.soft(deliveries).toEqual(deliveries.map(({ pair, target, webhookIds }) => ({
        pair,
        target,
        accepted: target === "published" ? 1 : 0,
        repeated: 0,
        webhookIds: Math.min(webhookIds, 1)
      })))

      const ledger: Array<{ kind: string; amount: number; postId: string | null; socialAccountId: string | null }> = []
      for (let cursor: string | null = ""; cursor !== null;) {
        const page: any = (yield* raw({
          method: "GET",
          path: `/v1/organizations/${team.organization.id}/credits/transactions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
          token: team.admin.token
        })).body
        ledger.push(...page.data)
        cursor = page.nextCursor
      }
      const sumOf = (pair: string, kind: string) =>
        ledger.filter((entry) => `${entry.postId}/${entry.socialAccountId}` === pair && entry.kind === kind)
          .reduce((sum, entry) => sum + entry.amount, 0)
      const entries = pairs.map((pair) => ({
        pair: nameOf.get(pair),
        reserve: sumOf(pair, "reserve"),
        spend: sumOf(pair, "spend"),
        release: sumOf(pair, "release")
      }))
      expect.soft(entries).toEqual(entries.map(({ pair, reserve }, index) => {
        const spend = published.includes(pairs[index]) ? 1 : 0
        return { pair, reserve, spend, release: reserve - spend }
      }))
      const total = (kind: string) => ledger.filter((entry) => entry.kind === kind).reduce((sum, entry) => sum + entry.amount, 0)
      expect.soft(total("reserve"), "credits reserved = spent + released").toBe(total("spend") + total("release"))
      const balance = initialCredits - published.length
      expect.soft(yield* team.credit).toEqual({ balance, reserved: 0, available: balance })
    })

  return { accounts, log, perform, postIn, settle, statusOf, expectConsistent }
})

const startOf: Record<State, Model> = {
  draft: { _tag: "draft" },
  scheduled: { _tag: "scheduled", from: "draft" },
  publishing: { _tag: "sent" },
  published: { _tag: "sent" },
  failed: { _tag: "failed" },
  rescheduled: { _tag: "scheduled", from: "failed" }
}

layer(RaceServer, { excludeTestServices: true })("post lifecycle races", (it) => {
  for (const state of ["draft", "scheduled", "published", "failed", "rescheduled"] as const) {
    it.scoped(`${state}: each operation alone answers as the README says`, () =>
      Effect.gen(function*() {
        const team = yield* raceTeam
        const posts = yield* Effect.forEach(operations, () => team.postIn(state), { concurrency: "unbounded" })
        const outcomes = yield* Effect.forEach(operations, (operation, index) => team.perform(posts[index].postId, operation))
        // Soft, so that one run shows the answers, the deliveries and the credits together.
        expect.soft(outcomes.map(({ operation, status }) => [operation, status]))
          .toEqual(operations.map((operation) => [operation, step(startOf[state], operation).status]))
        // A scheduled post was still waiting for its time when each operation was answered.
        for (const [index, post] of posts.entries()) {
          if (post.dueAt !== undefined) expect.soft(outcomes[index].answeredAt, operations[index]).toBeLessThan(post.dueAt)
        }
        yield* team.settle(posts.map((post) => post.postId))
        const statuses = yield* Effect.forEach(posts, (post) => team.statusOf(post.postId))
        expect.soft(operations.map((operation, index) => [operation, statuses[index]]))
          .toEqual(operations.map((operation) => [operation, settledStatus(step(startOf[state], operation).next)]))
        yield* team.expectConsistent(Object.fromEntries(operations.map((operation, index) => [operation, posts[index].postId])))
      }))
  }

  for (const state of ["draft", "scheduled", "publishing", "published", "failed", "rescheduled"] as const) {
    it.scoped(`${state}: all operations at once answer as some order of them would, send once and leave no credit held`, () =>
      Effect.gen(function*() {
        const team = yield* raceTeam
        // Several posts race at once, each its own burst, for more interleavings in one run; a publishing
        // post holds the scheduler's only turn, so that one races alone.
        const posts = yield* Effect.forEach(state === "publishing" ? [1] : [1, 2, 3], () => team.postIn(state), {
          concurrency: "unbounded"
        })
        const burstOn = ({ postId, waiting }: (typeof posts)[number]) => [
          team.perform(postId, "postNow", undefined, "postNow#1"),
          team.perform(postId, "postNow", undefined, "postNow#2"),
          team.perform(postId, "schedule"),
          team.perform(postId, "unschedule"),
          team.perform(postId, "patch"),
          team.perform(postId, "delete"),
          // With every account, the one being sent makes both 409 anyway: these ask for one waiting account each.
          ...(state === "publishing"
            ? [
              team.perform(postId, "postNow", [waiting[0]], "postNow(a waiting account)"),
              team.perform(postId, "schedule", [waiting[1]], "schedule(another waiting account)")
            ]
            : [])
        ]
        const bursts = yield* Effect.all(posts.map((post) => Effect.all(burstOn(post), { concurrency: "unbounded" })), {
          concurrency: "unbounded"
        })
        yield* team.settle(posts.map((post) => post.postId))

        for (const [index, { dueAt, postId }] of posts.entries()) {
          const outcomes = bursts[index]
          const finalStatus = yield* team.statusOf(postId)
          const answered = outcomes.map(({ body, label, status }) =>
            `${label} ${status}${[200, 404, 409].includes(status) ? "" : ` ${JSON.stringify(body)}`}`
          )
          // Soft, so that one run shows the answers, the deliveries and the credits together.
          if (startOf[state]._tag === "sent") {
            expect.soft(answered).toEqual(outcomes.map(({ label }) => `${label} 409`))
          }
          expect.soft(serialOrder(startOf[state], outcomes, finalStatus), `no order of ${answered.join(", ")} ends ${finalStatus}`)
            .toBeDefined()
          // The burst met the state it was meant for: not yet due, or the first account still being sent.
          if (dueAt !== undefined) for (const outcome of outcomes) expect.soft(outcome.answeredAt, outcome.label).toBeLessThan(dueAt)
          if (state === "publishing") {
            const first = team.log.of(postId)[0]
            for (const outcome of outcomes.filter(({ status }) => status === 409)) {
              expect.soft(outcome.answeredAt, outcome.label).toBeLessThanOrEqual(first.answeredAt!)
            }
          }
        }
        yield* team.expectConsistent(Object.fromEntries(posts.map((post, index) => [`post${index + 1}`, post.postId])))
      }))
  }
})
