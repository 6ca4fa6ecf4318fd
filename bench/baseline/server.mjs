// The reference server of the benchmark: only node:http and pg. It serves the
// requests of scenarios S1, S3 and S4 (and the 401 of S6) with the same SQL,
// the same token check and the same JSON bytes as apps/server, so that the
// ratio ours/baseline measures what the server's own stack costs.
//
// Mirrors: apps/server/src/Users/{Authentication,Repo,Secrets}.ts, Access/Policy.ts,
// Organizations/Repo.ts, Teams/{Repo,Http}.ts, Pagination/{Keyset,Cursor}.ts, Database/Columns.ts.
//
// Env: PORT, HOST (default 127.0.0.1), and DATABASE_URL, or PGLITE_DATA_DIR for the embedded
// baseline: PGlite in this process, queried directly (baseline/pglite.mjs; PGLITE_FSYNC).
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"
import { openPGlite } from "./pglite.mjs"

const pool = process.env.PGLITE_DATA_DIR
  ? await openPGlite(process.env.PGLITE_DATA_DIR)
  : new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 }) // pg's default, as the server's
pool.on("error", () => {})

// ---------------------------------------------------------------- SQL (same text as the server's)

const isoOf = (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
// Database/Columns.ts selectFields: each column named after its field, so rows are sent as they come.
const fields = (record) => Object.entries(record).map(([field, expression]) => `${expression} AS "${field}"`).join(", ")
// The organizations are listed through the caller's membership \`m\`: the payment provider's ids are null for
// members who are not admins or owners, as in the server.
const memberHidden = (column) => `CASE WHEN m.role IN ('admin', 'owner') THEN ${column} END`
const orgColumns = fields({
  id: "o.id",
  name: "o.name",
  billingEmail: "o.billing_email",
  onboardingData: "o.onboarding_data",
  paymentCustomerId: memberHidden("o.payment_customer_id"),
  paymentSubscriptionId: memberHidden("o.payment_subscription_id"),
  paymentPaymentMethodId: memberHidden("o.payment_payment_method_id"),
  paymentMeteredSubscriptionItemId: memberHidden("o.payment_metered_subscription_item_id"),
  creditsBalance: "o.credits_balance::float8",
  reservedCredits: "o.reserved_credits::float8",
  autoRechargeEnabled: "o.auto_recharge_enabled",
  autoRechargeThreshold: "o.auto_recharge_threshold::float8",
  autoRechargeAmount: "o.auto_recharge_amount::float8",
  isSubscribed: "o.is_subscribed",
  subscriptionStatus: "o.subscription_status",
  subscriptionPlan: "o.subscription_plan",
  subscriptionStartedAt: isoOf("o.subscription_started_at"),
  subscriptionEndsAt: isoOf("o.subscription_ends_at"),
  subscriptionCurrentPeriodEnd: isoOf("o.subscription_current_period_end"),
  createdAt: isoOf("o.created_at"),
  updatedAt: isoOf("o.updated_at")
})
// `$n` is planDefaults.linkTracking, a parameter in the server too.
const teamColumns = (n) =>
  fields({
    id: "t.id",
    organizationId: "t.organization_id",
    name: "t.name",
    website: "t.website",
    linkTrackingDefault: `coalesce(t.link_tracking_override, $${n})`,
    timezone: "t.timezone",
    createdAt: isoOf("t.created_at"),
    updatedAt: isoOf("t.updated_at")
  })
const planLinkTracking = true

const userByTokenHash = `SELECT u.id, u.email, u.name, coalesce(t.expires_at <= now(), false) AS expired
            FROM access_tokens t JOIN users u ON u.id = t.user_id
            WHERE t.token_hash = $1`
// Access/Repo.ts roleOf, unlocked, for reading.
const roleOf = "SELECT m.role FROM memberships m WHERE m.user_id = $1 AND m.organization_id = $2"
// Access/Repo.ts teamWithRole, locked: a write checks the role in its own transaction.
const teamWithRole = `SELECT ${teamColumns(1)}, m.role FROM teams t
        JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = $2
        WHERE t.id = $3 FOR KEY SHARE OF m`

// ---------------------------------------------------------------- HTTP helpers

class HttpError extends Error {
  constructor(status, tag, message) {
    super(message)
    this.status = status
    this.tag = tag
  }
}

const send = (res, status, body, headers) => {
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

// RFC 6750: a 401 names the scheme the caller should use (Http/ErrorBodies.ts).
const challenge = { "www-authenticate": "Bearer realm=\"postline\"" }
const sendError = (res, error) =>
  send(res, error.status, JSON.stringify({ message: error.message, _tag: error.tag }), error.status === 401 ? challenge : undefined)

const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = []
    req.on("data", (chunk) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

// ---------------------------------------------------------------- authentication

const bearer = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

const authenticate = async (req) => {
  const header = req.headers.authorization
  if (header === undefined) {
    throw new HttpError(401, "Unauthorized", "Missing Authorization header: send `Authorization: Bearer <token>`")
  }
  const token = bearer.exec(header)?.[1]
  if (token === undefined) throw new HttpError(401, "Unauthorized", "Malformed Authorization header: expected `Bearer <token>`")
  const hash = createHash("sha256").update(token).digest("hex")
  const { rows } = await pool.query(userByTokenHash, [hash])
  if (rows.length === 0) throw new HttpError(401, "Unauthorized", "Invalid or revoked access token")
  if (rows[0].expired) throw new HttpError(401, "Unauthorized", "The access token has expired: refresh it or log in again")
  return rows[0]
}

// ---------------------------------------------------------------- keyset pagination

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const sortFields = new Set(["createdAt", "updatedAt", "name"])
const badCursor = () =>
  new HttpError(400, "BadRequest", "Invalid cursor: pass nextCursor or prevCursor of a previous page of this list, unchanged")

// Cursors are signed with the installation's secret and the list ("scope") they belong to.
let cursorSecret
const sign = (scope, body) => createHmac("sha256", cursorSecret).update(scope).update("\n").update(body).digest().subarray(0, 16)

const encodeCursor = (scope, position) => {
  const body = Buffer.from(JSON.stringify(position)).toString("base64url")
  return `${body}.${sign(scope, body).toString("base64url")}`
}

const decodeCursor = (scope, cursor, sortBy, sortOrder) => {
  const [body, signature, ...rest] = cursor.split(".")
  if (body === undefined || signature === undefined || rest.length > 0) throw badCursor()
  const expected = sign(scope, body)
  const given = Buffer.from(signature, "base64url")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw badCursor()
  let p
  try {
    p = JSON.parse(Buffer.from(body, "base64url").toString("utf8"))
  } catch {
    throw badCursor()
  }
  if (
    typeof p !== "object" || p === null || !sortFields.has(p.sortBy) || (p.sortOrder !== "asc" && p.sortOrder !== "desc") ||
    (p.direction !== "after" && p.direction !== "before") || typeof p.value !== "string" ||
    typeof p.id !== "string" || !uuid.test(p.id)
  ) throw badCursor()
  if (p.sortBy !== sortBy || p.sortOrder !== sortOrder) {
    throw new HttpError(
      400,
      "BadRequest",
      `This cursor belongs to sortBy=${p.sortBy}&sortOrder=${p.sortOrder}; repeat those parameters with it`
    )
  }
  return { sortBy: p.sortBy, sortOrder: p.sortOrder, direction: p.direction, value: p.value, id: p.id }
}

const listParams = new Set(["cursor", "limit", "sortBy", "sortOrder"])

/** Checks the list query (as the server's URL-parameter schema does, before the handler runs). */
const checkListParams = (params, extra) => {
  for (const key of params.keys()) {
    if (!listParams.has(key) && !extra.has(key)) throw new HttpError(400, "BadRequest", `Unknown parameter ${key}`)
  }
}

/** Reads the list query of the list named by `scope`. */
const pageRequest = (scope, params) => {
  const sortBy = params.get("sortBy") ?? "createdAt"
  const sortOrder = params.get("sortOrder") ?? "desc"
  if (!sortFields.has(sortBy) || (sortOrder !== "asc" && sortOrder !== "desc")) {
    throw new HttpError(400, "BadRequest", "Invalid sortBy or sortOrder")
  }
  const rawLimit = params.get("limit")
  let limit = 25
  if (rawLimit !== null) {
    if (!/^[0-9]+$/.test(rawLimit) || !(Number(rawLimit) > 0)) {
      throw new HttpError(400, "BadRequest", "limit must be a positive integer")
    }
    limit = Math.min(Number(rawLimit), 100)
  }
  const rawCursor = params.get("cursor")
  return {
    scope,
    sortBy,
    sortOrder,
    limit,
    cursor: rawCursor === null ? undefined : decodeCursor(scope, rawCursor, sortBy, sortOrder)
  }
}

/** The qualified columns holding each sort key and the tie-breaking id. */
const sortColumnsOf = (alias) => ({
  createdAt: `${alias}.created_at`,
  updatedAt: `${alias}.updated_at`,
  name: `${alias}.name`,
  id: `${alias}.id`
})
const membershipSortColumns = {
  createdAt: "m.organization_created_at",
  updatedAt: "m.organization_updated_at",
  name: "m.organization_name",
  id: "m.organization_id"
}
const teamSortColumns = sortColumnsOf("t")
const accessSortColumns = { ...sortColumnsOf("a"), id: "a.team_id" }

/**
 * One page as Pagination/Keyset.ts `paginate` reads it: one statement, the
 * page's rows (one more than asked), each with the total and whether anything
 * lies on the cursor's other side ("_total", "_otherSide"); an empty page asks
 * for those two on their own.
 * `rowsFrom(n)` / `keysFrom(n)` are `FROM … WHERE …` texts whose one
 * parameter, `value`, is placeholder $n; `select` uses `selectValues` first.
 */
const paginate = async (request, columns, { select, selectValues, rowsFrom, keysFrom, value }) => {
  const column = columns[request.sortBy]
  const id = columns.id
  const cursor = request.cursor
  const direction = cursor?.direction ?? "after"
  // Walking backwards reads in the opposite order and flips the rows afterwards.
  const ascending = (request.sortOrder === "asc") === (direction === "after")
  const order = ascending ? "ASC" : "DESC"
  const [pageSide, otherSide] = ascending ? [">", "<="] : ["<", ">="]
  const comparedToCursor = (op, n) =>
    cursor === undefined
      ? { text: "TRUE", values: [] }
      : {
        text: `(${column}, ${id}) ${op} (${request.sortBy === "name" ? `$${n}` : `$${n}::timestamptz`}, $${n + 1}::uuid)`,
        values: [cursor.value, cursor.id]
      }
  // The total and the other side, their placeholders from $n on.
  const meta = (n) => {
    const otherWhere = comparedToCursor(otherSide, n + 2)
    return {
      total: `(SELECT count(*)::int ${keysFrom(n)})`,
      otherSide: cursor === undefined ? "FALSE" : `EXISTS (SELECT 1 ${keysFrom(n + 1)} AND ${otherWhere.text})`,
      values: cursor === undefined ? [value] : [value, value, ...otherWhere.values]
    }
  }

  const s = selectValues.length
  const pageMeta = meta(s + 1)
  const rowsFromAt = s + 1 + pageMeta.values.length
  const rowsWhere = comparedToCursor(pageSide, rowsFromAt + 1)
  const { rows: found } = await pool.query(
    `SELECT ${select},
        ${pageMeta.total} AS "_total", ${pageMeta.otherSide} AS "_otherSide"
        ${rowsFrom(rowsFromAt)} AND ${rowsWhere.text}
        ORDER BY ${column} ${order}, ${id} ${order} LIMIT $${rowsFromAt + 1 + rowsWhere.values.length}`,
    [...selectValues, ...pageMeta.values, value, ...rowsWhere.values, request.limit + 1]
  )
  let total, anythingOnOtherSide
  if (found.length > 0) {
    total = found[0]._total
    anythingOnOtherSide = found[0]._otherSide
  } else {
    const alone = meta(1)
    const { rows: [row] } = await pool.query(`SELECT ${alone.total} AS total, ${alone.otherSide} AS "otherSide"`, alone.values)
    total = row.total
    anythingOnOtherSide = row.otherSide
  }
  const rows = found.map(({ _total, _otherSide, ...item }) => item)

  const moreAhead = rows.length > request.limit
  const pageRows = rows.slice(0, request.limit)
  const data = direction === "after" ? pageRows : pageRows.reverse()
  const keyOf = (row) => ({ value: row[request.sortBy], id: row.id })
  const cursorFor = (side, { id, value }) =>
    encodeCursor(request.scope, { sortBy: request.sortBy, sortOrder: request.sortOrder, direction: side, value, id })
  // With an empty page, the cursor's own position is the boundary on both sides.
  const start = data.length > 0 ? keyOf(data[0]) : cursor
  const end = data.length > 0 ? keyOf(data[data.length - 1]) : cursor
  const hasPrev = direction === "before" ? moreAhead : anythingOnOtherSide
  const hasNext = direction === "after" ? moreAhead : anythingOnOtherSide
  return {
    data,
    total,
    nextCursor: hasNext && end ? cursorFor("after", end) : null,
    prevCursor: hasPrev && start ? cursorFor("before", start) : null
  }
}

// ---------------------------------------------------------------- handlers

/** Pages walk the user's memberships, which carry their organization's sort keys. */
const listOrganizations = async (user, params) => {
  checkListParams(params, new Set())
  const request = pageRequest(`organizations for user ${user.id}`, params)
  const page = await paginate(request, membershipSortColumns, {
    select: orgColumns,
    selectValues: [],
    rowsFrom: (n) => `FROM memberships m JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = $${n}`,
    keysFrom: (n) => `FROM memberships m WHERE m.user_id = $${n}`,
    value: user.id
  })
  return page
}

/** The caller's role in the organization (Organizations/Repo.ts roleOf); 404 for a non-member. */
const requireMember = async (user, organizationId) => {
  const { rows } = await pool.query(roleOf, [user.id, organizationId])
  if (rows.length === 0) throw new HttpError(404, "NotFound", `Organization ${organizationId} not found`)
  return rows[0].role
}

const listTeams = async (user, params) => {
  checkListParams(params, new Set(["organizationId"]))
  const organizationId = params.get("organizationId") ?? undefined
  let page
  if (organizationId === undefined) {
    // The teams of every organization the user belongs to, through their access rows.
    const request = pageRequest(`teams for user ${user.id}`, params)
    page = await paginate(request, accessSortColumns, {
      select: teamColumns(1),
      selectValues: [planLinkTracking],
      rowsFrom: (n) => `FROM team_access a JOIN teams t ON t.id = a.team_id WHERE a.user_id = $${n}`,
      keysFrom: (n) => `FROM team_access a WHERE a.user_id = $${n}`,
      value: user.id
    })
  } else {
    if (!uuid.test(organizationId)) throw new HttpError(400, "BadRequest", "organizationId must be a UUID")
    await requireMember(user, organizationId)
    const request = pageRequest(`teams organizationId=${organizationId.toLowerCase()} for user ${user.id}`, params)
    const from = (n) => `FROM teams t WHERE t.organization_id = $${n}`
    page = await paginate(request, teamSortColumns, {
      select: teamColumns(1),
      selectValues: [planLinkTracking],
      rowsFrom: from,
      keysFrom: from,
      value: organizationId
    })
  }
  return page
}

const json = /^application\/json\s*(?:;|$)/i
const teamFields = new Set(["name", "website", "linkTrackingDefault", "timezone"])
const codePoints = (s) => [...s].length
const validName = (s) => typeof s === "string" && codePoints(s) >= 2 && codePoints(s) <= 64 && s.trim().length > 0
const validUrl = (s) => {
  if (!URL.canParse(s)) return false
  const { protocol, hostname } = new URL(s)
  return (protocol === "http:" || protocol === "https:") && hostname.length > 0
}
const timezones = new Set([...Intl.supportedValuesOf("timeZone"), "UTC"])

const teamOf = ({ role: _role, ...team }) => team

const updateTeam = async (user, teamId, req) => {
  const contentType = req.headers["content-type"]
  if (contentType === undefined || !json.test(contentType)) {
    throw new HttpError(400, "BadRequest", "The request body must be JSON: send `Content-Type: application/json`")
  }
  if (!uuid.test(teamId)) throw new HttpError(400, "BadRequest", "teamId must be a UUID")
  let changes
  try {
    changes = JSON.parse(await readBody(req))
  } catch {
    throw new HttpError(400, "BadRequest", "The request body is not valid JSON")
  }
  if (typeof changes !== "object" || changes === null || Array.isArray(changes)) {
    throw new HttpError(400, "BadRequest", "The body must be an object")
  }
  for (const key of Object.keys(changes)) {
    if (!teamFields.has(key)) throw new HttpError(400, "BadRequest", `Unknown property ${key}`)
  }
  if (changes.name !== undefined && !validName(changes.name)) throw new HttpError(400, "BadRequest", "Invalid name")
  if (changes.website !== undefined && changes.website !== null && !(typeof changes.website === "string" && validUrl(changes.website))) {
    throw new HttpError(400, "BadRequest", "Invalid website")
  }
  if (changes.linkTrackingDefault !== undefined && changes.linkTrackingDefault !== null && typeof changes.linkTrackingDefault !== "boolean") {
    throw new HttpError(400, "BadRequest", "Invalid linkTrackingDefault")
  }
  if (changes.timezone !== undefined && changes.timezone !== null && !timezones.has(changes.timezone)) {
    throw new HttpError(400, "BadRequest", "Invalid timezone")
  }

  const notFound = () => new HttpError(404, "NotFound", `Team ${teamId} not found`)
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const { rows: [found] } = await client.query(teamWithRole, [planLinkTracking, user.id, teamId])
    if (found === undefined) throw notFound()
    if (found.role !== "owner" && found.role !== "admin") {
      throw new HttpError(403, "Forbidden", "Only an admin or owner of the organization may do this")
    }

    const assignments = []
    const values = []
    const assign = (column, value) => {
      values.push(value)
      assignments.push(`${column} = $${values.length}`)
    }
    if (changes.name !== undefined) assign("name", changes.name)
    if (changes.website !== undefined) assign("website", changes.website)
    if (changes.linkTrackingDefault !== undefined) assign("link_tracking_override", changes.linkTrackingDefault)
    if (changes.timezone !== undefined) assign("timezone", changes.timezone)
    // With no changes, the team is returned as it is.
    if (assignments.length === 0) {
      await client.query("COMMIT")
      return teamOf(found)
    }
    values.push(teamId, planLinkTracking)
    const { rows: [updated] } = await client.query(
      `UPDATE teams t SET ${assignments.join(", ")}, updated_at = now()
          WHERE t.id = $${values.length - 1} RETURNING ${teamColumns(values.length)}`,
      values
    )
    await client.query("COMMIT")
    return updated
  } catch (error) {
    await client.query("ROLLBACK")
    throw error
  } finally {
    client.release()
  }
}

// ---------------------------------------------------------------- routing

const teamPath = /^\/v1\/teams\/([^/]+)$/

const handle = async (req, res) => {
  const q = req.url.indexOf("?")
  const path = q === -1 ? req.url : req.url.slice(0, q)
  if (path === "/health" && req.method === "GET") {
    await pool.query("SELECT 1")
    return send(res, 200, "{\"status\":\"ok\",\"database\":\"up\"}")
  }
  const isOrgs = path === "/v1/organizations" && req.method === "GET"
  const isTeams = path === "/v1/teams" && req.method === "GET"
  const teamMatch = req.method === "PATCH" ? teamPath.exec(path) : null
  if (!isOrgs && !isTeams && teamMatch === null) {
    return sendError(res, new HttpError(404, "NotFound", `No route for ${req.method} ${path}`))
  }
  const user = await authenticate(req)
  const params = new URLSearchParams(q === -1 ? "" : req.url.slice(q + 1))
  if (isOrgs) return send(res, 200, JSON.stringify(await listOrganizations(user, params)))
  if (isTeams) return send(res, 200, JSON.stringify(await listTeams(user, params)))
  return send(res, 200, JSON.stringify(await updateTeam(user, decodeURIComponent(teamMatch[1]), req)))
}

const server = createServer((req, res) => {
  handle(req, res).catch((error) => {
    if (error instanceof HttpError) return sendError(res, error)
    console.error(error)
    sendError(res, new HttpError(500, "InternalError", "Internal server error"))
  })
})

const port = Number(process.env.PORT ?? 3001)
const host = process.env.HOST ?? "127.0.0.1"
const { rows: [secret] } = await pool.query("SELECT value FROM server_secrets WHERE name = 'cursor'")
cursorSecret = secret.value
server.listen(port, host, () => console.log(JSON.stringify({ message: `baseline listening on http://${host}:${port}` })))

const shutdown = () => {
  server.close()
  server.closeAllConnections?.()
  pool.end().finally(() => process.exit(0))
  setTimeout(() => process.exit(0), 2000).unref()
}
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)
