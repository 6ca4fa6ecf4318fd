import type { SocialAccountId } from "@postline/domain"
import { Clock, Effect, Either, Layer, Schedule } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { pollInterval } from "../Background/Poll.js"
import type { ReadFailure } from "./Reader.js"
import { AnalyticsReader } from "./Reader.js"
import { AnalyticsRepo, type DueTarget, type ReadableAccount } from "./Repo.js"
import { accountSnapshotSeconds, nextSnapshotAt, retryAt } from "./Schedule.js"

/** Targets claimed at once by one process: several batches of one account's posts. */
const targetsPerClaim = 100

/** Accounts whose daily counts are claimed at once. */
const accountsPerClaim = 20

// A claimed row is due again after this, should its process die while reading it: more than a read takes.
const leaseSeconds = 300

// An account over its provider's budget is tried again this much later.
const overBudgetSeconds = 300

const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000)

/**
 * The scheduled snapshots, in the background of every server process: each `SCHEDULER_POLL_MS` it claims the
 * published targets whose read is due (15 min, 1 h, 6 h, 1 d, 3 d, 7 d and 30 d after publishing, then never),
 * reads them per account in the provider's batches within the account's budgets, and stores a snapshot of
 * each; then the accounts whose daily counts are due. A read that fails for a while (the provider down) is
 * tried again every five minutes for an hour, never past the next point; one the provider refuses is logged
 * and skipped: the next is at the next point of the schedule. Free: no credits are spent. Time is the Effect clock's, so that a test
 * can move it.
 */
export class AnalyticsSnapshots extends Effect.Service<AnalyticsSnapshots>()("AnalyticsSnapshots", {
  effect: Effect.gen(function*() {
    const repo = yield* AnalyticsRepo
    const reader = yield* AnalyticsReader
    const poll = yield* pollInterval

    const logFailure = (what: string, account: ReadableAccount, failure: ReadFailure) =>
      failure._tag === "Refused"
        ? Effect.logWarning(`Analytics: could not read ${what}`).pipe(
          Effect.annotateLogs({ socialAccountId: account.id, provider: account.provider, error: failure.message })
        )
        : Effect.void

    // One account's failure (one removed while it was read, say) is logged and leaves the others to finish; what
    // it had claimed is due again when its lease ends.
    const alone = <A, E, R>(self: Effect.Effect<A, E, R>) =>
      self.pipe(Effect.catchAllCause((cause) => Effect.logWarning("Analytics: could not take an account's snapshots", cause)))

    /**
     * One account's due targets, claimed until `heldUntil`: leased again just before the read, since a claim's
     * accounts wait their turn, then read in batches, a snapshot each, and each moved to its next read. Every
     * step moves only the targets still held, so that one whose lease ran out and that another process claimed
     * is read and stored by that process alone.
     */
    const snapshotAccount = (account: ReadableAccount | null, claimed: ReadonlyArray<DueTarget>, heldUntil: Date) =>
      Effect.gen(function*() {
        const move = (targets: ReadonlyArray<DueTarget>, at: (target: DueTarget) => Date | null, leasedUntil: Date) =>
          Effect.map(
            repo.moveLeasedTargets(
              targets.map((target) => ({ postId: target.postId, socialAccountId: target.socialAccountId, at: at(target) })),
              leasedUntil
            ),
            (moved) => {
              const keys = new Set(moved.map((key) => key.postId))
              return targets.filter((target) => keys.has(target.postId))
            }
          )
        if (account === null || !reader.hasAnalytics(account)) {
          // Removed, or a provider with nothing to read: never again.
          return yield* move(claimed, () => null, heldUntil)
        }
        const now = new Date(yield* Clock.currentTimeMillis)
        const lease = later(now, leaseSeconds)
        const held = yield* move(claimed, () => lease, heldUntil)
        if (held.length === 0) return
        const read = yield* Effect.either(reader.engagement(account, held.map((target) => target.externalId), now))
        if (Either.isLeft(read)) {
          yield* logFailure("posts' engagement", account, read.left)
          const failure = read.left
          const next = (target: DueTarget) =>
            failure._tag === "OverBudget"
              ? later(now, overBudgetSeconds)
              : failure.error?.retryable
              ? retryAt(target.publishedAt, now)
              : nextSnapshotAt(target.publishedAt, now)
          return yield* move(held, next, lease)
        }
        const byExternalId = new Map(read.right.map((engagement) => [engagement.externalId, engagement]))
        yield* transactionally(Effect.gen(function*() {
          const stored = yield* move(held, (target) => nextSnapshotAt(target.publishedAt, now), lease)
          yield* repo.addPostSnapshots(
            now,
            stored.flatMap((target) => {
              const engagement = byExternalId.get(target.externalId)
              return engagement === undefined ? [] : [{ postId: target.postId, socialAccountId: target.socialAccountId, engagement }]
            })
          )
        }))
      })

    /** Claims due targets and snapshots them, account by account; answers how many were claimed. */
    const snapshotPosts = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      const heldUntil = later(now, leaseSeconds)
      const due = yield* transactionally(repo.claimDueTargets(now, targetsPerClaim, heldUntil))
      const byAccount = new Map<SocialAccountId, Array<DueTarget>>()
      for (const target of due) byAccount.set(target.socialAccountId, [...(byAccount.get(target.socialAccountId) ?? []), target])
      yield* Effect.forEach(byAccount.values(), (targets) => alone(snapshotAccount(targets[0]!.account, targets, heldUntil)), {
        concurrency: 4,
        discard: true
      })
      return due.length
    })

    /** One account's daily counts, stored only while the account is still leased until `heldUntil`. */
    const snapshotCounts = (account: ReadableAccount, now: Date, heldUntil: Date) =>
      Effect.gen(function*() {
        if (!reader.hasAnalytics(account)) return yield* repo.moveLeasedAccount(account.id, heldUntil, null)
        const counts = yield* Effect.either(reader.counts(account, now))
        if (Either.isLeft(counts)) {
          yield* logFailure("the account's counts", account, counts.left)
          const retry = counts.left._tag === "OverBudget" ? overBudgetSeconds : accountSnapshotSeconds
          return yield* repo.moveLeasedAccount(account.id, heldUntil, later(now, retry))
        }
        yield* transactionally(Effect.gen(function*() {
          if (yield* repo.moveLeasedAccount(account.id, heldUntil, later(now, accountSnapshotSeconds))) {
            yield* repo.addAccountSnapshot(account.id, now, counts.right!)
          }
        }))
      })

    /** Claims accounts whose daily counts are due and reads them; answers how many were claimed. */
    const snapshotAccounts = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      const heldUntil = later(now, leaseSeconds)
      const due = yield* transactionally(repo.claimDueAccounts(now, accountsPerClaim, heldUntil))
      yield* Effect.forEach(due, (account) => alone(snapshotCounts(account, now, heldUntil)), { concurrency: 4, discard: true })
      return due.length
    })

    /** Everything due now, claim after claim while they come back full. */
    const snapshotDue = withSystemActor(Effect.zipRight(
      snapshotPosts.pipe(Effect.repeat({ while: (claimed) => claimed === targetsPerClaim })),
      snapshotAccounts.pipe(Effect.repeat({ while: (claimed) => claimed === accountsPerClaim }))
    ))

    const run = snapshotDue.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("Analytics: could not take due snapshots", cause)),
      Effect.repeat(Schedule.spaced(poll))
    )

    return { snapshotDue, run } as const
  }),
  dependencies: [AnalyticsRepo.Default, AnalyticsReader.Default]
}) {}

/** The scheduled snapshots, in the background of a server process. */
export const AnalyticsSnapshotsLive = Layer.scopedDiscard(
  Effect.flatMap(AnalyticsSnapshots, (snapshots) => Effect.forkScoped(snapshots.run))
).pipe(Layer.provide(AnalyticsSnapshots.Default))
