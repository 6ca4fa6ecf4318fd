// Publishing through a server process (the bundle): its setup, its calls, and what receivers and the ledger saw.
import { Effect } from "effect"
import { execFile } from "node:child_process"
import type { ReceivedEvent } from "./Publishing.js"
import { bundled, callsAs, createUserWithToken, type ProcessResponse, serverDir, startServer } from "./ServerProcess.js"

/** Reads `read` every 250 ms until `done` holds or `seconds` pass (a bound for what never comes); answers the last value read. */
export const readUntil = <A>(read: Effect.Effect<A>, done: (value: A) => boolean, seconds = 180) =>
  Effect.gen(function*() {
    const deadline = Date.now() + seconds * 1000
    for (;;) {
      const value = yield* read
      if (done(value) || Date.now() >= deadline) return value
      yield* Effect.sleep("250 millis")
    }
  })

/** `pnpm admin credits grant` on the database of `env`: an embedded one only while no server holds it. */
export const grantCredits = (env: Record<string, string>, organizationId: string, amount: number) =>
  Effect.async<void>((resume) => {
    execFile(
      process.execPath,
      [bundled("admin"), "credits", "grant", "--organization", organizationId, "--amount", String(amount)],
      { cwd: serverDir, env: { PATH: process.env.PATH ?? "", ...env } },
      (error, _stdout, stderr) => resume(error ? Effect.die(new Error(`credits grant failed: ${stderr}`)) : Effect.void)
    )
  })

/**
 * An organization with `credits`, a team with `accounts` webhook accounts on `receiverUrl` and a draft post,
 * made through a server that is then stopped (the embedded database takes the grant only with no server on it).
 */
export const publishingSetup = (env: Record<string, string>, receiverUrl: string, accounts: number, credits: number) =>
  Effect.gen(function*() {
    const { token } = yield* createUserWithToken(env)
    const server = yield* startServer(env)
    const call = callsAs(server, token)
    const created = (answer: ProcessResponse) => {
      if (answer.status !== 201) throw new Error(`setup failed: ${answer.status} ${answer.text}`)
      return answer.body
    }
    const organization = created(yield* call("POST", "/v1/organizations", { name: "Recovery" }))
    const team = created(yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" }))
    const accountIds: Array<string> = []
    for (let i = 0; i < accounts; i++) {
      accountIds.push(created(yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: `${receiverUrl}/${i}` })).id)
    }
    const post = created(yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "Sent once, whatever happens" }))
    server.child.kill("SIGTERM")
    yield* Effect.promise(() => server.exited)
    yield* grantCredits(env, organization.id, credits)
    return { token, organizationId: organization.id as string, teamId: team.id as string, accountIds, postId: post.id as string }
  })

/** The server's settings for these tests: webhooks cost a credit each, and may be sent to this machine. */
export const publishEnv = (database: Record<string, string>, settings: Record<string, string>) => ({
  ...database,
  OUTBOUND_ALLOW_PRIVATE: "true",
  CREDIT_COSTS: JSON.stringify({ webhook: 1 }),
  ...settings
})

/** The account a webhook call was for, as its event says. */
export const accountOf = (event: ReceivedEvent): string => JSON.parse(event.body).data.socialAccountId

/** The webhook-ids of the calls that one account received, in order. */
export const deliveries = (received: ReadonlyArray<ReceivedEvent>, accountId: string) =>
  received.filter((event) => accountOf(event) === accountId).map((event) => String(event.headers["webhook-id"]))

/** The organization's credits and the sums of its ledger by kind, overall and per account. */
export const creditsOf = (call: ReturnType<typeof callsAs>, organizationId: string) =>
  Effect.gen(function*() {
    const { balance, reserved } = (yield* call("GET", `/v1/organizations/${organizationId}/credits`)).body
    const ledger = (yield* call("GET", `/v1/organizations/${organizationId}/credits/transactions?limit=100`)).body
    const sums: Record<string, number> = {}
    const perAccount: Record<string, Record<string, number>> = {}
    for (const entry of ledger.data as Array<{ kind: string; amount: number; socialAccountId: string | null }>) {
      sums[entry.kind] = (sums[entry.kind] ?? 0) + entry.amount
      if (entry.socialAccountId !== null) {
        const of = (perAccount[entry.socialAccountId] ??= {})
        of[entry.kind] = (of[entry.kind] ?? 0) + entry.amount
      }
    }
    return { balance, reserved, sums, perAccount }
  })
