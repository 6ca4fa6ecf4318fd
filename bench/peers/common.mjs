// What the peers of the benchmark share: the requests of S1, S3 and S4 as bench/baseline/server.mjs serves
// them (the same SQL text, parameters, token check, role check, pagination and JSON), with the database
// access left to each peer. A peer passes `db`, `{ query(text, values) -> rows, transaction(work) }`:
// `transaction(work)` runs `work(query)` between BEGIN and COMMIT (ROLLBACK when it throws) on one
// connection, as the baseline's updateTeam does. The HTTP side (routing, hooks or guards, body parsing,
// serialization, errors) is each framework's own.
//
// A copy of the baseline's logic, not an import, so that the baseline stays a single file. When the
// baseline's SQL or JSON changes, change this file the same way: the parity check of `node bench/run.mjs`
// compares each peer's statements and bytes with the baseline's.
import { createHash, createHmac, timingSafeEqual } from "node:crypto"

// ---------------------------------------------------------------- SQL (same text as the baseline's)

const isoOf = (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
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
const roleOf = "SELECT m.role FROM memberships m WHERE m.user_id = $1 AND m.organization_id = $2"
const teamWithRole = `SELECT ${teamColumns(1)}, m.role FROM teams t
        JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = $2
        WHERE t.id = $3 FOR KEY SHARE OF m`

/** The statement of the baseline's cursor secret, read once at start. */
export const cursorSecretQuery = "SELECT value FROM server_secrets WHERE name = 'cursor'"
/** GET /health's statement. */
export const healthQuery = "SELECT 1"
export const healthBody = { status: "ok", database: "up" }

// ---------------------------------------------------------------- errors

export class HttpError extends Error {
  constructor(status, tag, message) {
    super(message)
    this.status = status
    this.tag = tag
  }
}

/** The error body, as the baseline's sendError writes it. */
export const errorBody = (error) => ({ message: error.message, _tag: error.tag })
/** RFC 6750: a 401 names the scheme the caller should use. */
export const challenge = { "www-authenticate": "Bearer realm=\"postline\"" }
export const notJson = () => new HttpError(400, "BadRequest", "The request body must be JSON: send `Content-Type: application/json`")
export const invalidJson = () => new HttpError(400, "BadRequest", "The request body is not valid JSON")
export const noRoute = (method, path) => new HttpError(404, "NotFound", `No route for ${method} ${path}`)
export const internalError = () => new HttpError(500, "InternalError", "Internal server error")

// ---------------------------------------------------------------- authentication

const bearer = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/** The caller of `authorization` (the header's value), or a 401. */
export const authenticate = async (db, header) => {
  if (header === undefined) {
    throw new HttpError(401, "Unauthorized", "Missing Authorization header: send `Authorization: Bearer <token>`")
  }
  const token = bearer.exec(header)?.[1]
  if (token === undefined) throw new HttpError(401, "Unauthorized", "Malformed Authorization header: expected `Bearer <token>`")
  const hash = createHash("sha256").update(token).digest("hex")
  const rows = await db.query(userByTokenHash, [hash])
  if (rows.length === 0) throw new HttpError(401, "Unauthorized", "Invalid or revoked access token")
  if (rows[0].expired) throw new HttpError(401, "Unauthorized", "The access token has expired: refresh it or log in again")
  return rows[0]
}

// ---------------------------------------------------------------- URL parameters

/**
 * The framework's parsed query (an object whose repeated keys are arrays) read as the baseline reads its
 * URLSearchParams: `get` gives the first value or null.
 */
const paramsOf = (query) => ({
  keys: () => Object.keys(query ?? {}),
  get: (key) => {
    const value = query?.[key]
    return value === undefined ? null : Array.isArray(value) ? String(value[0]) : String(value)
  }
})

// ---------------------------------------------------------------- keyset pagination

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const isUuid = (s) => typeof s === "string" && uuid.test(s)
const sortFields = new Set(["createdAt", "updatedAt", "name"])
const badCursor = () =>
  new HttpError(400, "BadRequest", "Invalid cursor: pass nextCursor or prevCursor of a previous page of this list, unchanged")

let cursorSecret
/** The installation's cursor secret (`cursorSecretQuery`'s value): set once at start. */
export const setCursorSecret = (value) => {
  cursorSecret = value
}
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

const checkListParams = (params, extra) => {
  for (const key of params.keys()) {
    if (!listParams.has(key) && !extra.has(key)) throw new HttpError(400, "BadRequest", `Unknown parameter ${key}`)
  }
}

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

/** The baseline's paginate: one statement for a page with rows, a second one only for an empty page. */
const paginate = async (db, request, columns, { select, selectValues, rowsFrom, keysFrom, value }) => {
  const column = columns[request.sortBy]
  const id = columns.id
  const cursor = request.cursor
  const direction = cursor?.direction ?? "after"
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
  const found = await db.query(
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
    const [row] = await db.query(`SELECT ${alone.total} AS total, ${alone.otherSide} AS "otherSide"`, alone.values)
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

// ---------------------------------------------------------------- S1: GET /v1/organizations

export const listOrganizations = async (db, user, query) => {
  const params = paramsOf(query)
  checkListParams(params, new Set())
  const request = pageRequest(`organizations for user ${user.id}`, params)
  return paginate(db, request, membershipSortColumns, {
    select: orgColumns,
    selectValues: [],
    rowsFrom: (n) => `FROM memberships m JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = $${n}`,
    keysFrom: (n) => `FROM memberships m WHERE m.user_id = $${n}`,
    value: user.id
  })
}

// ---------------------------------------------------------------- S3: GET /v1/teams[?organizationId=]

const requireMember = async (db, user, organizationId) => {
  const rows = await db.query(roleOf, [user.id, organizationId])
  if (rows.length === 0) throw new HttpError(404, "NotFound", `Organization ${organizationId} not found`)
  return rows[0].role
}

export const listTeams = async (db, user, query) => {
  const params = paramsOf(query)
  checkListParams(params, new Set(["organizationId"]))
  const organizationId = params.get("organizationId") ?? undefined
  if (organizationId === undefined) {
    const request = pageRequest(`teams for user ${user.id}`, params)
    return paginate(db, request, accessSortColumns, {
      select: teamColumns(1),
      selectValues: [planLinkTracking],
      rowsFrom: (n) => `FROM team_access a JOIN teams t ON t.id = a.team_id WHERE a.user_id = $${n}`,
      keysFrom: (n) => `FROM team_access a WHERE a.user_id = $${n}`,
      value: user.id
    })
  }
  if (!uuid.test(organizationId)) throw new HttpError(400, "BadRequest", "organizationId must be a UUID")
  await requireMember(db, user, organizationId)
  const request = pageRequest(`teams organizationId=${organizationId.toLowerCase()} for user ${user.id}`, params)
  const from = (n) => `FROM teams t WHERE t.organization_id = $${n}`
  return paginate(db, request, teamSortColumns, {
    select: teamColumns(1),
    selectValues: [planLinkTracking],
    rowsFrom: from,
    keysFrom: from,
    value: organizationId
  })
}

// ---------------------------------------------------------------- S4: PATCH /v1/teams/{teamId}

const json = /^application\/json\s*(?:;|$)/i
/** The baseline's test of the Content-Type header. */
export const isJson = (contentType) => contentType !== undefined && json.test(contentType)
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

/** The baseline's checks of a team's changes (the parsed body), before any statement. */
export const checkTeamChanges = (changes) => {
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
  return changes
}

/** The change in one transaction: the locked role check, then the UPDATE (none when nothing changes). */
export const updateTeam = (db, user, teamId, changes) =>
  db.transaction(async (query) => {
    const [found] = await query(teamWithRole, [planLinkTracking, user.id, teamId])
    if (found === undefined) throw new HttpError(404, "NotFound", `Team ${teamId} not found`)
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
    if (assignments.length === 0) return teamOf(found)
    values.push(teamId, planLinkTracking)
    const [updated] = await query(
      `UPDATE teams t SET ${assignments.join(", ")}, updated_at = now()
          WHERE t.id = $${values.length - 1} RETURNING ${teamColumns(values.length)}`,
      values
    )
    return updated
  })
