import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { BadRequestReason, ConflictReason, PaymentRequiredReason, PostlineApi } from "@postline/domain"
import { ConfigProvider, Effect, Layer, Schema } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { generateSecret, hashSecret } from "../src/Users/Secrets.js"
import { noisyPng, putUpload, serverUrl, upload } from "./support/Media.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { makeStripeFake, signedEvent } from "./support/StripeFake.js"
import { raw, TestServer } from "./support/TestServer.js"

/**
 * Every endpoint against every kind of caller: the status each gets, that a
 * refused call changed nothing, and that no answer shows another
 * organization's data.
 */

/** Files for imports to fetch, served on this machine, which the matrix's server may reach (OUTBOUND_ALLOW_PRIVATE). */
const importable = new Map<string, Uint8Array>()
const importSource = await new Promise<string>((resolve) => {
  const server = createServer((request, response) => {
    const bytes = importable.get(request.url ?? "")
    if (bytes === undefined) response.writeHead(404).end()
    else response.writeHead(200, { "content-type": "image/png" }).end(bytes)
  })
  server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  server.unref()
})

/** The refusals that say why with a `reason`, and the codes the document lists for each. */
const reasonsOf: Record<string, (reason: unknown) => boolean> = {
  Conflict: Schema.is(ConflictReason),
  PaymentRequired: Schema.is(PaymentRequiredReason),
  BadRequest: Schema.is(BadRequestReason)
}

/** Billing sells through Stripe, faked at the HTTP level (no Stripe server can run here). */
const stripe = await makeStripeFake()

/** A Stripe event the server does not use, signed: acknowledged whoever sends it, since the signature is the permission. */
const stripeEvent = (secret?: string) => {
  const { body, signature } = signedEvent({ id: `evt_${randomUUID()}`, type: "customer.created", object: { id: "cus_matrix" } }, secret)
  return { body, headers: { "content-type": "application/json", "stripe-signature": signature } }
}

const callers = [
  "owner",
  "admin",
  "member",
  "outsider",
  "ownKey",
  "foreignKey",
  "revokedKey",
  "expiredToken",
  "anonymous"
] as const
type CallerKind = typeof callers[number]

/** Two organizations: A, where the owner, admin, member and A's keys belong, and B, the outsider's. */
const seedWorld = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const insertUser = (name: string) =>
    Effect.gen(function*() {
      const [{ id }] = yield* sql<{ id: string }>`INSERT INTO users (email, name)
        VALUES (${`${randomUUID()}@example.com`}, ${name}) RETURNING id`
      const token = generateSecret("accessToken")
      yield* sql`INSERT INTO access_tokens (token_hash, user_id) VALUES (${hashSecret(token)}, ${id})`
      return { id, token }
    })
  const insertOrganization = (name: string) =>
    Effect.map(sql<{ id: string }>`INSERT INTO organizations (name) VALUES (${name}) RETURNING id`, ([row]) => row.id)
  const join = (userId: string, organizationId: string, role: string) =>
    sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${userId}, ${organizationId}, ${role})`
  const insertTeam = (organizationId: string) =>
    Effect.map(
      sql<{ id: string }>`INSERT INTO teams (organization_id, name) VALUES (${organizationId}, 'Team') RETURNING id`,
      ([row]) => row.id
    )
  const insertKey = (organizationId: string, createdBy: string, revoked = false) =>
    Effect.gen(function*() {
      const key = generateSecret("apiKey")
      const [{ id }] = yield* sql<{ id: string }>`INSERT INTO api_keys
          (organization_id, name, prefix, key_hash, created_by_user_id, revoked_at)
        VALUES (${organizationId}, 'key', ${key.slice(0, 12)}, ${hashSecret(key)}, ${createdBy},
          ${revoked ? sql`now()` : null})
        RETURNING id`
      return { id, key }
    })

  const [owner, admin, member, outsider] = yield* Effect.all(["Owner", "Admin", "Member", "Outsider"].map(insertUser))
  const organizationA = yield* insertOrganization("Org A")
  const organizationB = yield* insertOrganization("Org B")
  yield* join(owner.id, organizationA, "owner")
  yield* join(admin.id, organizationA, "admin")
  yield* join(member.id, organizationA, "member")
  yield* join(outsider.id, organizationB, "admin")
  const teamA = yield* insertTeam(organizationA)
  const teamB = yield* insertTeam(organizationB)
  const ownKey = yield* insertKey(organizationA, admin.id)
  const foreignKey = yield* insertKey(organizationB, outsider.id)
  const revokedKey = yield* insertKey(organizationA, admin.id, true)
  const expiredToken = generateSecret("accessToken")
  yield* sql`INSERT INTO access_tokens (token_hash, user_id, expires_at)
    VALUES (${hashSecret(expiredToken)}, ${owner.id}, now() - interval '1 second')`
  // An asset whose bytes are stored, and the URL the server signed for them: nobody deletes it.
  const stored = yield* upload({ token: admin.token, teamId: teamA, bytes: yield* noisyPng(8, 8), fileName: "stored.png" })
  if (stored.status !== 201) return yield* Effect.die(new Error(`upload → ${stored.status} ${JSON.stringify(stored.body)}`))
  const signed = new URL(stored.body.url, "http://server")
  const storedAsset = { id: stored.body.id as string, url: `${signed.pathname}${signed.search}` }

  const tokens: Record<CallerKind, string | undefined> = {
    owner: owner.token,
    admin: admin.token,
    member: member.token,
    outsider: outsider.token,
    ownKey: ownKey.key,
    foreignKey: foreignKey.key,
    revokedKey: revokedKey.key,
    expiredToken,
    anonymous: undefined
  }
  /** Fresh things to act on, so that one caller's allowed change leaves the next caller's case as it was. */
  const freshTargets = Effect.gen(function*() {
    const bystander = yield* insertUser("Bystander")
    yield* join(bystander.id, organizationA, "member")
    const newcomer = yield* insertUser("Newcomer")
    const [{ email }] = yield* sql<{ email: string }>`SELECT email FROM users WHERE id = ${newcomer.id}`
    const spareKey = yield* insertKey(organizationA, admin.id)
    // A connect the admin started, waiting for the person to approve at the network.
    const [connect] = yield* sql<{ id: string }>`INSERT INTO account_connects
        (team_id, user_id, provider, state_hash, pending, redirect_uri, expires_at)
      VALUES (${teamA}, ${admin.id}, 'mastodon', md5(random()::text), '', 'http://127.0.0.1:9/v1/oauth/callback/mastodon',
        now() + interval '10 minutes')
      RETURNING id`
    const account = yield* raw({
      method: "POST",
      path: `/v1/teams/${teamA}/social-accounts`,
      token: admin.token,
      json: { provider: "webhook", url: "http://127.0.0.1:9/hook" }
    })
    const post = yield* raw({
      method: "POST",
      path: `/v1/teams/${teamA}/posts`,
      token: admin.token,
      json: { content: "A draft", socialAccountIds: [account.body.id] }
    })
    const scheduled = yield* raw({
      method: "POST",
      path: `/v1/teams/${teamA}/posts`,
      token: admin.token,
      json: { content: "A scheduled post" }
    })
    yield* raw({
      method: "POST",
      path: `/v1/teams/${teamA}/posts/${scheduled.body.id}/schedule`,
      token: admin.token,
      json: { socialAccountIds: [account.body.id], scheduledAt: new Date(Date.now() + 86_400_000).toISOString() }
    })
    const folder = yield* raw({
      method: "POST",
      path: `/v1/teams/${teamA}/folders`,
      token: admin.token,
      json: { name: `Folder ${randomUUID()}` }
    })
    // An asset as an upload saves it (its bytes are not stored: none of these calls reads them).
    const assetId = randomUUID()
    yield* sql`INSERT INTO assets (id, team_id, organization_id, folder_id, name, kind, content_type, size, stored_bytes,
        sha256, width, height, alt_text, storage_key, thumbnail_key)
      VALUES (${assetId}, ${teamA}, ${organizationA}, ${null}, 'seeded.png', 'image', 'image/png', 100, 150,
        ${createHash("sha256").update(assetId).digest("hex")}, 8, 8, ${null},
        ${`assets/${teamA}/${assetId}/original.png`}, ${`assets/${teamA}/${assetId}/thumbnail.webp`})`
    // A presigned upload whose bytes were PUT, ready to complete; another still waiting for its bytes. Those of the
    // callers before are forgotten: a team may have only 20 uploads open, and each caller's targets are fresh.
    yield* sql`DELETE FROM asset_uploads WHERE team_id = ${teamA}`
    const sentPng = yield* noisyPng(8, 8)
    const sent = yield* raw({ method: "POST", path: `/v1/teams/${teamA}/assets/uploads`, token: admin.token, json: { size: sentPng.length } })
    yield* putUpload(sent.body.url, sentPng)
    const awaitingBytes = "sixteen bytes..."
    const awaiting = yield* raw({ method: "POST", path: `/v1/teams/${teamA}/assets/uploads`, token: admin.token, json: { size: awaitingBytes.length } })
    const importPath = `/${randomUUID()}.png`
    importable.set(importPath, yield* noisyPng(8, 8))
    // An event webhook for the organization, unless a caller before left one (its secret is never read here).
    yield* sql`INSERT INTO event_webhooks (organization_id, url, secret)
      VALUES (${organizationA}, 'http://127.0.0.1:9/events', 'v1.matrix.secret') ON CONFLICT (organization_id) DO NOTHING`
    return {
      folderId: folder.body.id as string,
      assetId,
      /** Bytes no upload has sent yet: a second upload of the same bytes answers 200 with the first asset. */
      png: yield* noisyPng(8, 8),
      scheduledPostId: scheduled.body.id as string,
      bystanderId: bystander.id,
      newcomerEmail: email,
      spareKeyId: spareKey.id,
      accountId: account.body.id as string,
      connectId: connect.id,
      postId: post.body.id as string,
      sentUploadId: sent.body.uploadId as string,
      awaitingUploadId: awaiting.body.uploadId as string,
      awaitingUploadUrl: awaiting.body.url as string,
      awaitingBytes,
      importUrl: `${importSource}${importPath}`
    }
  })
  /**
   * A Mastodon account (on the fake) and a post published to it, with credits to read it: what a paid analytics
   * refresh reads. Made only for the cases that need it.
   */
  const publishedToMastodon = Effect.gen(function*() {
    const mastodon = yield* makeMastodonFake()
    yield* sql`UPDATE organizations SET credits_balance = 1000 WHERE id = ${organizationA}`
    const call = (path: string, json: unknown) => raw({ method: "POST", path: `/v1/teams/${teamA}${path}`, token: admin.token, json })
    const account = yield* call("/social-accounts", { provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
    const post = yield* call("/posts", { content: "Published to Mastodon" })
    const sent = yield* call(`/posts/${post.body.id}/post-now`, { socialAccountIds: [account.body.id] })
    if (sent.body.outcome !== "none_failed") return yield* Effect.die(new Error(`publish → ${JSON.stringify(sent.body)}`))
    return { mastodonAccountId: account.body.id as string, mastodonPostId: post.body.id as string }
  })
  return {
    organizationA,
    organizationB,
    teamA,
    teamB,
    tokens,
    storedAsset,
    freshTargets,
    publishedToMastodon,
    /** The ids a caller must never see: the other organization's. */
    foreignIds: (caller: CallerKind) =>
      caller === "outsider" || caller === "foreignKey" ? [organizationA, teamA] : [organizationB, teamB]
  }
})

type World = Effect.Effect.Success<typeof seedWorld>
type Targets = Effect.Effect.Success<World["freshTargets"]> & Partial<Effect.Effect.Success<World["publishedToMastodon"]>>

/**
 * Everything a call could change, in one value: every row of every table the
 * database has, read from the catalog, so that a new table is covered too.
 * An API key's lastUsedAt is recorded on any use, so it is left out.
 */
const fingerprint = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The scheduler's own tables change in the background, whoever calls: they are the engine's, not the API's. So do
  // the events an organization's webhook is sent, and how their deliveries went.
  const tables = yield* sql<{ name: string }>`SELECT tablename AS name FROM pg_tables
    WHERE schemaname = current_schema() AND tablename NOT LIKE 'cluster\_%' AND tablename <> 'event_deliveries'`
  const rows = tables.map(({ name }) =>
    sql`SELECT ${name} || (to_jsonb(t) - 'last_used_at' - 'last_delivered_at' - 'last_error' - 'last_error_at')::text
      FROM ${sql(name)} t`
  )
  const [{ digest }] = yield* sql<{ digest: string }>`SELECT md5(coalesce(string_agg(r, '|' ORDER BY r), '')) AS digest
    FROM (${sql.join(" UNION ALL ", false)(rows)}) AS rows (r)`
  return digest
})

/** How many live analytics reads the organization has paid for. */
const analyticsCharges = (organizationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ count: number }>`SELECT count(*)::int AS count FROM credit_transactions
      WHERE organization_id = ${organizationId} AND kind = 'analytics'`.pipe(Effect.map(([row]) => row!.count)))

/**
 * Forgets the worlds of the cases before: each case seeds its own, and the fingerprint, read before every call,
 * would otherwise read every case's rows so far. The server's own secrets and the migrations' record stay; so
 * do the scheduler engine's tables, which the fingerprint leaves out.
 */
const forgetEarlierWorlds = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ name: string }>`SELECT tablename AS name FROM pg_tables
    WHERE schemaname = current_schema() AND tablename NOT LIKE 'cluster\_%'
      AND tablename NOT IN ('server_secrets', 'postline_migrations')`
  // Row by row, with the foreign keys' triggers off (the whole world goes): TRUNCATE makes each table's files anew.
  // The server's background workers write some of these tables meanwhile: a deadlock with one of them is tried again.
  yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`SET LOCAL session_replication_role = replica`
    for (const { name } of tables) yield* sql`DELETE FROM ${sql(name)}`
  })).pipe(Effect.retry({ times: 5, while: (error) => String(error.cause).includes("deadlock detected") }))
})

interface Call {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  readonly path: string
  readonly json?: unknown
  /** A body of raw bytes (as text) instead. */
  readonly body?: string
  readonly headers?: Record<string, string>
  /** A multipart/form-data body instead: text fields, and files of bytes. */
  readonly form?: Readonly<Record<string, string | { readonly bytes: Uint8Array; readonly fileName: string; readonly type: string }>>
}

/** The call as a client makes it: a form as multipart/form-data (fetch sets its boundary), anything else by `raw`. */
const send = ({ form, ...request }: Call, token: string | undefined) =>
  Effect.gen(function*() {
    if (form === undefined) return yield* raw({ ...request, ...(token !== undefined ? { token } : {}) })
    const body = new FormData()
    for (const [name, value] of Object.entries(form)) {
      if (typeof value === "string") body.append(name, value)
      else body.append(name, new Blob([value.bytes], { type: value.type }), value.fileName)
    }
    const base = yield* serverUrl
    const response = yield* Effect.promise(() =>
      fetch(`${base}${request.path}`, {
        method: request.method,
        headers: token !== undefined ? { authorization: `Bearer ${token}` } : {},
        body
      })
    )
    const text = yield* Effect.promise(() => response.text())
    return { status: response.status, body: response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text }
  })

/** Statuses in the order of `callers`: owner, admin, member, outsider, ownKey, foreignKey, revokedKey, expiredToken, anonymous. */
type Statuses = readonly [number, number, number, number, number, number, number, number, number]

interface Case {
  readonly operation: string
  /** What tells apart two cases of one operation. */
  readonly variant?: string
  readonly call: (world: World, targets: Targets) => Call
  readonly statuses: Statuses
  /** The case acts on a post published to Mastodon (`targets.mastodon…`); an analytics case's call is paid. */
  readonly mastodon?: true
}

// A different list each time, so that a refused replacement would show in the fingerprint.
let slotsReplaced = 0
const nextSlotTime = () => `09:${String(slotsReplaced++ % 60).padStart(2, "0")}`
// A different figure each time, for the same reason.
let billingFigures = 10

// dprint-ignore
const cases: ReadonlyArray<Case> = [
  //                                                                                         owner admin member outsider ownKey foreignKey revoked expired anonymous
  { operation: "organizations.listOrganizations", call: () => ({ method: "GET", path: "/v1/organizations" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "organizations.createOrganization", call: () => ({ method: "POST", path: "/v1/organizations", json: { name: "New org" } }),
    statuses: [201, 201, 201, 201, 403, 403, 401, 401, 401] },
  { operation: "organizations.getOrganization", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "organizations.updateOrganization", call: (w) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}`, json: { name: "Renamed" } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "teams.listTeams", call: () => ({ method: "GET", path: "/v1/teams" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "teams.listTeams", variant: "of organization A", call: (w) => ({ method: "GET", path: `/v1/teams?organizationId=${w.organizationA}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "teams.createTeam", call: (w) => ({ method: "POST", path: "/v1/teams", json: { organizationId: w.organizationA, name: "New team" } }),
    statuses: [201, 201, 403, 404, 201, 404, 401, 401, 401] },
  { operation: "teams.getTeam", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "teams.updateTeam", call: (w) => ({ method: "PATCH", path: `/v1/teams/${w.teamA}`, json: { name: "Renamed" } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "members.listMembers", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/members` }),
    statuses: [200, 200, 200, 404, 403, 404, 401, 401, 401] },
  { operation: "members.addMember", call: (w, t) => ({ method: "POST", path: `/v1/organizations/${w.organizationA}/members`, json: { email: t.newcomerEmail, role: "member" } }),
    statuses: [201, 201, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "members.updateMember", call: (w, t) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}/members/${t.bystanderId}`, json: { role: "admin" } }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "members.updateMember", variant: "to owner", call: (w, t) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}/members/${t.bystanderId}`, json: { role: "owner" } }),
    statuses: [200, 403, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "members.removeMember", call: (w, t) => ({ method: "DELETE", path: `/v1/organizations/${w.organizationA}/members/${t.bystanderId}` }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "apiKeys.createApiKey", call: (w) => ({ method: "POST", path: `/v1/organizations/${w.organizationA}/api-keys`, json: { name: "New key" } }),
    statuses: [201, 201, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "apiKeys.listApiKeys", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/api-keys` }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "apiKeys.revokeApiKey", call: (w, t) => ({ method: "DELETE", path: `/v1/organizations/${w.organizationA}/api-keys/${t.spareKeyId}` }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "agent.getContext", call: () => ({ method: "GET", path: "/v1/agent/context" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "providers.listProviders", call: () => ({ method: "GET", path: "/v1/providers" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "agent.setDefaults", call: (w) => ({ method: "PUT", path: "/v1/agent/context/defaults", json: { organizationId: w.organizationA, teamId: w.teamA } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "socialAccounts.listSocialAccounts", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}/social-accounts` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "socialAccounts.connectSocialAccount", call: (w) => ({ method: "POST", path: `/v1/teams/${w.teamA}/social-accounts`, json: { provider: "webhook", url: "http://127.0.0.1:9/new" } }),
    statuses: [201, 201, 403, 404, 201, 404, 401, 401, 401] },
  // X is not set up on this server: whoever may connect meets 409 provider_not_configured, and nothing is written.
  { operation: "accountConnects.startAccountConnect", call: (w) => ({ method: "POST", path: `/v1/teams/${w.teamA}/social-accounts/connect`, json: { provider: "x" } }),
    statuses: [409, 409, 403, 404, 409, 404, 401, 401, 401] },
  { operation: "accountConnects.getAccountConnect", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/social-accounts/connect/${t.connectId}` }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "socialAccounts.getSocialAccount", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "socialAccounts.updateSocialAccount", call: (w, t) => ({ method: "PATCH", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}`, json: { provider: "webhook", url: "http://127.0.0.1:9/moved" } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "socialAccounts.removeSocialAccount", call: (w, t) => ({ method: "DELETE", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}` }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "socialAccounts.verifySocialAccount", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}/verify` }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.listPosts", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posts` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.createPost", call: (w) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts`, json: { content: "New" } }),
    statuses: [201, 201, 201, 404, 201, 404, 401, 401, 401] },
  { operation: "posts.getPost", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posts/${t.postId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.updatePost", call: (w, t) => ({ method: "PATCH", path: `/v1/teams/${w.teamA}/posts/${t.postId}`, json: { content: "Changed" } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.deletePost", call: (w, t) => ({ method: "DELETE", path: `/v1/teams/${w.teamA}/posts/${t.postId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.postNow", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.postId}/post-now`, json: { socialAccountIds: [t.accountId] } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.schedulePost", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.postId}/schedule`, json: { socialAccountIds: [t.accountId], scheduledAt: new Date(Date.now() + 86_400_000).toISOString() } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.unschedulePost", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.scheduledPostId}/unschedule` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.unpublishPost", variant: "of a post published to Mastodon", mastodon: true, call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.mastodonPostId}/unpublish`, json: {} }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.estimatePost", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.postId}/estimate`, json: { socialAccountIds: [t.accountId] } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "credits.getCredits", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/credits` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "credits.listCreditTransactions", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/credits/transactions` }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "postingSlots.getPostingSlots", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posting-slots` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "postingSlots.setPostingSlots", call: (w) => ({ method: "PUT", path: `/v1/teams/${w.teamA}/posting-slots`, json: { slots: [{ weekday: 1, time: nextSlotTime() }] } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "posts.listPublishAttempts", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posts/${t.postId}/attempts` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "analytics.getPostAnalytics", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posts/${t.postId}/analytics` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "analytics.estimatePostAnalyticsRefresh", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posts/${t.postId}/analytics/refresh/estimate` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  // A draft has no account to read: free, and nothing stored.
  { operation: "analytics.refreshPostAnalytics", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.postId}/analytics/refresh` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  // Published to Mastodon: read now and paid for, by those who may see it; nobody else's call reads or charges anything.
  { operation: "analytics.refreshPostAnalytics", variant: "of a post published to Mastodon, paid", mastodon: true, call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/posts/${t.mastodonPostId}/analytics/refresh` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "analytics.getAccountAnalytics", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}/analytics` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "analytics.estimateAccountAnalyticsRefresh", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}/analytics/refresh/estimate` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  // The world's account is a webhook, which has no analytics: free, and nothing stored.
  { operation: "analytics.refreshAccountAnalytics", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/social-accounts/${t.accountId}/analytics/refresh` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "analytics.refreshAccountAnalytics", variant: "of a Mastodon account, paid", mastodon: true, call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/social-accounts/${t.mastodonAccountId}/analytics/refresh` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "eventWebhooks.getEventWebhook", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/event-webhook` }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "eventWebhooks.setEventWebhook", call: (w) => ({ method: "PUT", path: `/v1/organizations/${w.organizationA}/event-webhook`, json: { url: `http://127.0.0.1:9/events/${randomUUID()}` } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "eventWebhooks.setEventWebhook", variant: "rotating its secret", call: (w) => ({ method: "PUT", path: `/v1/organizations/${w.organizationA}/event-webhook`, json: { url: "http://127.0.0.1:9/events", rotateSecret: true } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "eventWebhooks.deleteEventWebhook", call: (w) => ({ method: "DELETE", path: `/v1/organizations/${w.organizationA}/event-webhook` }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "billing.getBilling", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/billing` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "billing.createCheckout", call: (w) => ({ method: "POST", path: `/v1/organizations/${w.organizationA}/billing/checkout`, json: { purchase: "credits", credits: 1000, returnUrl: "https://app.example/billing" } }),
    statuses: [201, 201, 403, 404, 201, 404, 401, 401, 401] },
  { operation: "billing.createPortal", call: (w) => ({ method: "POST", path: `/v1/organizations/${w.organizationA}/billing/portal`, json: { returnUrl: "https://app.example/billing" } }),
    statuses: [201, 201, 403, 404, 201, 404, 401, 401, 401] },
  { operation: "billing.updateAutoRecharge", call: (w) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}/billing/auto-recharge`, json: { enabled: false, threshold: billingFigures++ } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "billing.updateSpendCap", call: (w) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}/billing/spend-cap`, json: { monthlyCredits: billingFigures++ } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  // Stripe's webhook: the signature is the permission, whatever bearer token comes with it.
  { operation: "billingWebhooks.receiveStripeEvent", call: () => ({ method: "POST", path: "/v1/billing/webhooks/stripe", ...stripeEvent() }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  { operation: "billingWebhooks.receiveStripeEvent", variant: "with a bad signature", call: () => ({ method: "POST", path: "/v1/billing/webhooks/stripe", ...stripeEvent("whsec_forged") }),
    statuses: [400, 400, 400, 400, 400, 400, 400, 400, 400] },
  { operation: "links.listPostLinks", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/posts/${t.postId}/links` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "health.health", call: () => ({ method: "GET", path: "/health" }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  // The device login hands out tokens: what it answers never depends on the bearer token sent with it.
  { operation: "auth.requestDeviceCode", call: () => ({ method: "POST", path: "/v1/auth/device/code", json: { client_id: "matrix-cli" } }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  { operation: "auth.token", call: () => ({ method: "POST", path: "/v1/auth/token", json: { grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: "pld_unknown", client_id: "matrix-cli" } }),
    statuses: [400, 400, 400, 400, 400, 400, 400, 400, 400] },
  { operation: "auth.revoke", call: () => ({ method: "POST", path: "/v1/auth/revoke", json: { token: "plr_unknown", client_id: "matrix-cli" } }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  { operation: "auth.authorizationServerMetadata", call: () => ({ method: "GET", path: "/.well-known/oauth-authorization-server" }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  { operation: "folders.listFolders", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}/folders` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "folders.createFolder", call: (w) => ({ method: "POST", path: `/v1/teams/${w.teamA}/folders`, json: { name: `New ${randomUUID()}` } }),
    statuses: [201, 201, 201, 404, 201, 404, 401, 401, 401] },
  { operation: "folders.getFolder", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/folders/${t.folderId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "folders.updateFolder", call: (w, t) => ({ method: "PATCH", path: `/v1/teams/${w.teamA}/folders/${t.folderId}`, json: { name: `Renamed ${randomUUID()}` } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "folders.deleteFolder", call: (w, t) => ({ method: "DELETE", path: `/v1/teams/${w.teamA}/folders/${t.folderId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "assets.listAssets", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}/assets` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "assets.getAsset", call: (w, t) => ({ method: "GET", path: `/v1/teams/${w.teamA}/assets/${t.assetId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "assets.updateAsset", call: (w, t) => ({ method: "PATCH", path: `/v1/teams/${w.teamA}/assets/${t.assetId}`, json: { altText: "Described", folderId: t.folderId } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "assets.deleteAsset", call: (w, t) => ({ method: "DELETE", path: `/v1/teams/${w.teamA}/assets/${t.assetId}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "assets.createAssetUpload", call: (w) => ({ method: "POST", path: `/v1/teams/${w.teamA}/assets/uploads`, json: { size: 1000, name: "Large" } }),
    statuses: [201, 201, 201, 404, 201, 404, 401, 401, 401] },
  { operation: "assets.completeAssetUpload", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/assets/uploads/${t.sentUploadId}/complete` }),
    statuses: [201, 201, 201, 404, 201, 404, 401, 401, 401] },
  { operation: "assets.cancelAssetUpload", call: (w, t) => ({ method: "DELETE", path: `/v1/teams/${w.teamA}/assets/uploads/${t.awaitingUploadId}` }),
    statuses: [204, 204, 204, 404, 204, 404, 401, 401, 401] },
  { operation: "assets.importAsset", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/assets/import`, json: { url: t.importUrl } }),
    statuses: [201, 201, 201, 404, 201, 404, 401, 401, 401] },
  { operation: "assetUploads.uploadAsset", call: (w, t) => ({ method: "POST", path: `/v1/teams/${w.teamA}/assets`, form: { name: "Upload", file: { bytes: t.png, fileName: "upload.png", type: "image/png" } } }),
    statuses: [201, 201, 201, 404, 201, 404, 401, 401, 401] },
  // A signed download: the signature is the permission, so what it answers never depends on the bearer token sent with it.
  { operation: "assetContent.getAssetContent", call: (w) => ({ method: "GET", path: w.storedAsset.url }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  { operation: "assetContent.getAssetContent", variant: "with a bad signature", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}/assets/${w.storedAsset.id}/content?expires=${Math.floor(Date.now() / 1000) + 3600}&signature=forged` }),
    statuses: [403, 403, 403, 403, 403, 403, 403, 403, 403] },
  { operation: "assetContent.getAssetContent", variant: "of another team's asset", call: (w) => {
      const signed = new URL(w.storedAsset.url, "http://localhost")
      return { method: "GET", path: `/v1/teams/${w.teamB}/assets/${w.storedAsset.id}/content${signed.search}` }
    },
    statuses: [403, 403, 403, 403, 403, 403, 403, 403, 403] },
  // A presigned upload's PUT to this server: the signature is the permission, whatever bearer token comes with it.
  { operation: "assetContent.putAssetUpload", call: (_w, t) => ({ method: "PUT", path: t.awaitingUploadUrl, body: t.awaitingBytes }),
    statuses: [204, 204, 204, 204, 204, 204, 204, 204, 204] },
  { operation: "assetContent.putAssetUpload", variant: "with a bad signature", call: (_w, t) => ({ method: "PUT", path: t.awaitingUploadUrl.replace(/signature=[\w-]+/, "signature=forged"), body: t.awaitingBytes }),
    statuses: [403, 403, 403, 403, 403, 403, 403, 403, 403] }
]

const operationsOfApi = Object.values(PostlineApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => `${group.identifier}.${endpoint.name}`)
)

// The storage sweep changes storage_garbage in the background, whoever calls: here it sweeps once, at the start,
// so that the objects of an asset one case deleted are not swept while a refused call is fingerprinted. Imports
// may reach this machine, where their files are served.
const MatrixSettings = Layer.setConfigProvider(
  ConfigProvider.fromMap(new Map([
    ["MEDIA_SWEEP_SECONDS", String(7 * 86_400)],
    ["OUTBOUND_ALLOW_PRIVATE", "true"],
    ...Object.entries(stripe.settings)
  ])).pipe(
    ConfigProvider.orElse(() => ConfigProvider.fromEnv())
  )
)

layer(TestServer.pipe(Layer.provide(MatrixSettings)), { excludeTestServices: true })("access matrix", (it) => {
  it("covers every endpoint of the API", () => {
    expect([...new Set(cases.map((c) => c.operation))].sort()).toEqual([...operationsOfApi].sort())
  })

  for (const { call, mastodon, operation, statuses, variant } of cases) {
    it.scoped(variant ? `${operation} (${variant})` : operation, () =>
      Effect.gen(function*() {
        yield* forgetEarlierWorlds
        const world = yield* seedWorld
        // A post published anew for each caller, as a call may take it down.
        const freshTargets = Effect.flatMap(world.freshTargets, (fresh) =>
          mastodon
            ? Effect.map(world.publishedToMastodon, (published): Targets => ({ ...fresh, ...published }))
            : Effect.succeed<Targets>(fresh))
        let targets = yield* freshTargets
        // What every table holds before the next caller's call: read once after each call, it is the next one's before.
        let before = yield* fingerprint
        for (const [index, caller] of callers.entries()) {
          const request = call(world, targets)
          const paidBefore = yield* analyticsCharges(world.organizationA)
          const token = world.tokens[caller]
          const response = yield* send(request, token)
          const what = `${caller}: ${request.method} ${request.path}`
          expect(response.status, `${what} → ${JSON.stringify(response.body)}`).toBe(statuses[index])
          const after = yield* fingerprint
          if (response.status >= 400) {
            const isReasoned = reasonsOf[response.body._tag]
            const errorKeys = operation.startsWith("auth.")
              ? ["_tag", "error", "error_description", "message"]
              : isReasoned !== undefined
              ? ["_tag", "message", "reason"]
              : ["_tag", "message"]
            expect(Object.keys(response.body).sort(), what).toEqual(errorKeys)
            if (isReasoned !== undefined) expect(isReasoned(response.body.reason), `${what}: reason ${response.body.reason}`).toBe(true)
            expect(after, `${what} was refused but changed something`).toBe(before)
          } else {
            const text = JSON.stringify(response.body)
            for (const id of world.foreignIds(caller)) expect(text, `${what} shows another organization's ${id}`).not.toContain(id)
            if (mastodon && operation.startsWith("analytics.")) {
              expect(yield* analyticsCharges(world.organizationA), `${what} read Mastodon and paid`).toBe(paidBefore + 1)
            }
            // What an allowed call changed is made again for the next caller; a read, or a refused call, changed nothing.
            if (after === before) continue
            targets = yield* freshTargets
            before = yield* fingerprint
          }
        }
      }))
  }
})
