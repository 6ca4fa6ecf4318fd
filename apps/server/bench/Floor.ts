/**
 * The floor of the stack (issue 14, "attribute before changing"): the smallest Effect HttpApi server that answers
 * S3, `GET /v1/teams?organizationId=…`, with the three statements the real server sends for it and the same bytes,
 * on the same packages (HttpApi, NodeHttpServer, @effect/sql-pg over a `pg` pool configured as
 * src/Database/Postgres.ts's). `bench/attribution.mjs` runs it once per step; see bench/README.md.
 *
 * FLOOR_STEPS (comma-separated, empty for the floor) adds back, each on its own:
 *   auth        the token lookup in an HttpApiMiddleware (the domain's `Authentication`: HttpApiSecurity.bearer),
 *               providing the caller, as src/Users/Authentication.ts does
 *   policy      the role check through an Effect.Service, as src/Access/Access.ts `roleIn`
 *   schema      the URL parameters decoded by the real `TeamListQuery`, and `TeamList` declared as the success
 *   log         the access log (HttpMiddleware.logger through the server's JsonLogger, at LOG_LEVEL Info)
 *   select1     one more statement per request, `SELECT 1`, through @effect/sql-pg
 *   select1raw  one more statement per request, `SELECT 1`, through the same `pg` pool directly
 *   tracer      Effect's default tracer left on: a span per request and per statement. Without it the floor turns
 *               tracing off as src/Tracing.ts does when no OTLP endpoint is configured (the bench's case)
 * Without `auth` the handler looks the token up itself; without `schema` it reads organizationId and limit from the
 * raw URL. It serves the first page only (no cursor, default sort), which is all S3 asks.
 *
 * Env: DATABASE_URL (required), PORT (3000), HOST (127.0.0.1), FLOOR_STEPS.
 */
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpMiddleware,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import {
  Authentication,
  Caller,
  CurrentCaller,
  NotFound,
  TeamList,
  TeamListQuery,
  Unauthorized,
  type User
} from "@postline/domain"
import { Config, Context, Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { createHash, createHmac } from "node:crypto"
import { createServer } from "node:http"
import Pg from "pg"
import { JsonLogger } from "../src/Logging.js"

const knownSteps = ["auth", "policy", "schema", "log", "select1", "select1raw", "tracer"]
const steps = new Set((process.env.FLOOR_STEPS ?? "").split(",").map((s) => s.trim()).filter(Boolean))
for (const step of steps) {
  if (!knownSteps.includes(step)) throw new Error(`FLOOR_STEPS: unknown step ${step} (known: ${knownSteps.join(", ")})`)
}

// ---------------------------------------------------------------- database: the server's pool, kept at hand for select1raw

class RawPool extends Context.Tag("RawPool")<RawPool, Pg.Pool>() {}

/** As src/Database/Postgres.ts makePool (pg's default size, 10). */
const PoolLive = Layer.scoped(
  RawPool,
  Effect.flatMap(Config.string("DATABASE_URL"), (url) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new Pg.Pool({
          connectionString: url,
          connectionTimeoutMillis: 5_000,
          statement_timeout: 15_000,
          query_timeout: 16_000,
          keepAlive: true,
          application_name: "@effect/sql-pg"
        })
        pool.on("error", () => {})
        return pool
      }),
      (pool) => Effect.promise(() => pool.end())
    )).pipe(Effect.orDie)
)

const SqlLive = Layer.unwrapEffect(Effect.map(RawPool, (pool) => PgClient.layerFromPool({ acquire: Effect.succeed(pool) })))
  .pipe(Layer.provideMerge(PoolLive))

// ---------------------------------------------------------------- the statements (same text as the server's)

const isoUtc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

interface TeamRow {
  readonly id: string
  readonly createdAt: string
}

const statements = (sql: SqlClient.SqlClient) => {
  // As src/Teams/Repo.ts columns through src/Database/Columns.ts selectFields; `true` is the plan's link tracking.
  const teamColumns = sql.csv([
    sql.literal(`t.id AS "id", t.organization_id AS "organizationId", t.name AS "name", t.website AS "website"`),
    sql`${sql`coalesce(t.link_tracking_override, ${true})`} AS ${sql.literal(`"linkTrackingDefault"`)}`,
    sql.literal(`t.timezone AS "timezone", ${isoUtc("t.created_at")} AS "createdAt", ${isoUtc("t.updated_at")} AS "updatedAt"`)
  ])
  return {
    // src/Users/Repo.ts findByTokenHash
    userByTokenHash: (tokenHash: string) =>
      sql<{ id: string; email: string; name: string; expired: boolean }>`SELECT u.id, u.email, u.name, coalesce(t.expires_at <= now(), false) AS expired
            FROM access_tokens t JOIN users u ON u.id = t.user_id
            WHERE t.token_hash = ${tokenHash}`.pipe(Effect.orDie),
    // src/Access/Repo.ts roleOf, unlocked
    roleOf: (userId: string, organizationId: string) =>
      sql<{ role: string }>`SELECT m.role FROM memberships m
        WHERE m.user_id = ${userId} AND m.organization_id = ${organizationId}`.pipe(Effect.orDie),
    // src/Pagination/Keyset.ts paginate over src/Teams/Repo.ts listOfOrganization: first page, createdAt desc,
    // each row with the list's total and whether anything lies before the cursor (FALSE: no cursor came in).
    page: (organizationId: string, limit: number) =>
      sql<TeamRow & { _total: number; _otherSide: boolean }>`SELECT ${teamColumns},
        (SELECT count(*)::int FROM teams t WHERE t.organization_id = ${organizationId}) AS "_total", FALSE AS "_otherSide"
        FROM teams t WHERE t.organization_id = ${organizationId} AND TRUE
        ORDER BY t.created_at DESC, t.id DESC LIMIT ${limit + 1}`.pipe(Effect.orDie)
  }
}
type Statements = ReturnType<typeof statements>

// ---------------------------------------------------------------- the handler's work

const bearerScheme = /^bearer $/i
const b64token = /^ *([A-Za-z0-9\-._~+/]+=*) *$/
const hashToken = (token: string) => createHash("sha256").update(token).digest("hex")

const unauthorized = (message: string) => new Unauthorized({ message })
const organizationNotFound = (organizationId: string) => new NotFound({ message: `Organization ${organizationId} not found` })

/** The token's user (src/Users/Authentication.ts asUser, with a plain statement instead of SqlSchema). */
const callerOf = (run: Statements, header: string | undefined, credential: string) =>
  Effect.gen(function*() {
    if (header === undefined) return yield* unauthorized("Missing Authorization header: send `Authorization: Bearer <token>`")
    const token = b64token.exec(credential)?.[1]
    if (!bearerScheme.test(header.slice(0, 7)) || token === undefined) {
      return yield* unauthorized("Malformed Authorization header: expected `Bearer <token>`")
    }
    const [found] = yield* run.userByTokenHash(hashToken(token))
    if (found === undefined) return yield* unauthorized("Invalid or revoked access token")
    if (found.expired) return yield* unauthorized("The access token has expired: refresh it or log in again")
    const { expired: _expired, ...user } = found
    return Caller.User({ user: user as User })
  })

/** +auth: the lookup as the API's security middleware. */
const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const run = statements(sql)
    return {
      bearerAuth: (credential: Redacted.Redacted) =>
        Effect.flatMap(
          HttpServerRequest.HttpServerRequest,
          (request) => callerOf(run, request.headers.authorization, Redacted.value(credential))
        )
    }
  })
)

/** +policy: the role check as a service reading the current caller, as src/Access/Access.ts roleIn. */
class FloorAccess extends Effect.Service<FloorAccess>()("FloorAccess", {
  effect: Effect.gen(function*() {
    const run = statements(yield* SqlClient.SqlClient)
    const roleIn = (organizationId: string) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        if (caller._tag !== "User") return yield* organizationNotFound(organizationId)
        const [row] = yield* run.roleOf(caller.user.id, organizationId)
        if (row === undefined) return yield* organizationNotFound(organizationId)
        return row.role
      })
    return { roleIn } as const
  })
}) {}

interface Query {
  readonly organizationId: string
  readonly limit: number
}

class Handlers extends Effect.Service<Handlers>()("FloorHandlers", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pool = yield* RawPool
    const access = yield* FloorAccess
    const run = statements(sql)
    const [{ value: secret }] = yield* sql<{ value: string }>`SELECT value FROM server_secrets WHERE name = 'cursor'`.pipe(
      Effect.orDie
    )
    // src/Pagination/Cursor.ts encode
    const encodeCursor = (scope: string, position: object) => {
      const body = Buffer.from(JSON.stringify(position)).toString("base64url")
      const signature = createHmac("sha256", secret).update(scope).update("\n").update(body).digest().subarray(0, 16)
      return `${body}.${signature.toString("base64url")}`
    }

    /** The role check, then the page: needs the caller. */
    const listTeams = ({ limit, organizationId }: Query) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        if (caller._tag !== "User") return yield* organizationNotFound(organizationId)
        if (steps.has("policy")) yield* access.roleIn(organizationId)
        else if ((yield* run.roleOf(caller.user.id, organizationId)).length === 0) {
          return yield* organizationNotFound(organizationId)
        }
        // S3's pages are never empty (an organization of the bench has ten teams), so the total is on every row.
        const found = yield* run.page(organizationId, limit)
        const total = found[0]?._total ?? 0
        const rows = found.map(({ _otherSide, _total, ...team }) => team)
        if (steps.has("select1")) yield* sql`SELECT 1`.pipe(Effect.orDie)
        if (steps.has("select1raw")) yield* Effect.promise(() => pool.query("SELECT 1"))
        const data = rows.slice(0, limit)
        const last = data.at(-1)
        const scope = `teams organizationId=${organizationId.toLowerCase()} for user ${caller.user.id}`
        const nextCursor = rows.length > limit && last !== undefined
          ? encodeCursor(scope, { sortBy: "createdAt", sortOrder: "desc", direction: "after", value: last.createdAt, id: last.id })
          : null
        // No cursor came in: nothing lies before the first page (otherSide is FALSE).
        return HttpServerResponse.unsafeJson({ data, total, nextCursor, prevCursor: null })
      })

    /** Without `auth`: the token lookup in the handler, the caller handed on by hand. */
    const lookingUp = <A, E, R>(self: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const header = (yield* HttpServerRequest.HttpServerRequest).headers.authorization
        const caller = yield* callerOf(run, header, header?.slice(7) ?? "")
        return yield* Effect.provideService(self, CurrentCaller, caller)
      })

    /** Without `schema`: the query read from the raw URL. */
    const rawQuery = Effect.map(HttpServerRequest.HttpServerRequest, (request): Query => {
      const q = request.url.indexOf("?")
      const params = new URLSearchParams(q === -1 ? "" : request.url.slice(q + 1))
      const limit = Number(params.get("limit") ?? 25)
      return { organizationId: params.get("organizationId") ?? "", limit: Math.min(limit > 0 ? limit : 25, 100) }
    })

    return { listTeams, lookingUp, rawQuery } as const
  }),
  dependencies: [FloorAccess.Default]
}) {}

const health = () => Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))

// ---------------------------------------------------------------- the four APIs: with or without auth, schema

const rawList = HttpApiEndpoint.get("listTeams", "/v1/teams").addError(NotFound).addError(Unauthorized)
const decodedList = rawList.setUrlParams(TeamListQuery).addSuccess(TeamList)
const healthEndpoint = HttpApiEndpoint.get("health", "/health")

const FloorApi = HttpApi.make("floor").add(HttpApiGroup.make("teams").add(rawList).add(healthEndpoint))
const AuthApi = HttpApi.make("floor").add(
  HttpApiGroup.make("teams").add(rawList).middlewareEndpoints(Authentication).add(healthEndpoint)
)
const SchemaApi = HttpApi.make("floor").add(HttpApiGroup.make("teams").add(decodedList).add(healthEndpoint))
const AuthSchemaApi = HttpApi.make("floor").add(
  HttpApiGroup.make("teams").add(decodedList).middlewareEndpoints(Authentication).add(healthEndpoint)
)

const fromSchema = (h: typeof Handlers.Service, urlParams: typeof TeamListQuery.Type) =>
  h.listTeams({ organizationId: urlParams.organizationId ?? "", limit: Math.min(urlParams.limit ?? 25, 100) })

const ApiLive = steps.has("auth")
  ? steps.has("schema")
    ? HttpApiBuilder.api(AuthSchemaApi).pipe(
      Layer.provide(HttpApiBuilder.group(AuthSchemaApi, "teams", (handlers) =>
        Effect.map(Handlers, (h) =>
          handlers.handle("listTeams", ({ urlParams }) => fromSchema(h, urlParams)).handle("health", health)))),
      Layer.provide(AuthenticationLive)
    )
    : HttpApiBuilder.api(AuthApi).pipe(
      Layer.provide(HttpApiBuilder.group(AuthApi, "teams", (handlers) =>
        Effect.map(Handlers, (h) =>
          handlers.handle("listTeams", () => Effect.flatMap(h.rawQuery, h.listTeams)).handle("health", health)))),
      Layer.provide(AuthenticationLive)
    )
  : steps.has("schema")
  ? HttpApiBuilder.api(SchemaApi).pipe(
    Layer.provide(HttpApiBuilder.group(SchemaApi, "teams", (handlers) =>
      Effect.map(Handlers, (h) =>
        handlers.handle("listTeams", ({ urlParams }) => h.lookingUp(fromSchema(h, urlParams))).handle("health", health))))
  )
  : HttpApiBuilder.api(FloorApi).pipe(
    Layer.provide(HttpApiBuilder.group(FloorApi, "teams", (handlers) =>
      Effect.map(Handlers, (h) =>
        handlers.handle("listTeams", () => h.lookingUp(Effect.flatMap(h.rawQuery, h.listTeams))).handle("health", health))))
  )

const ServerLive = NodeHttpServer.layerConfig(createServer, {
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
})

/** As src/Tracing.ts withTracing without OTEL_EXPORTER_OTLP_ENDPOINT: no span is built. */
const withoutTracing = <A, E, R>(app: Layer.Layer<A, E, R>) =>
  steps.has("tracer")
    ? app
    : app.pipe(HttpMiddleware.withTracerDisabledWhen(() => true), Layer.provide(Layer.setTracerEnabled(false)))

// As src/main.ts: JSON logs; the access log only at LOG_LEVEL Info (the bench runs the server at Warn).
;(steps.has("log") ? HttpApiBuilder.serve(HttpMiddleware.logger) : HttpApiBuilder.serve()).pipe(
  Layer.provide(ApiLive),
  Layer.provide(Handlers.Default),
  Layer.provide(SqlLive),
  Layer.provide(ServerLive),
  withoutTracing,
  Layer.launch,
  Effect.provide(JsonLogger),
  Effect.provide(Logger.minimumLogLevel(steps.has("log") ? LogLevel.Info : LogLevel.Warning)),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
