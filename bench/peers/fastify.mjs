// Peer of the benchmark: Fastify + pg, as a Fastify user would write S1, S3 and S4 (bench/README.md).
// The requests' SQL, token and role checks and JSON are the baseline's (common.mjs); routing, the
// authentication hook, body parsing, serialization and errors are Fastify's.
//
// Env: PORT, HOST (default 127.0.0.1), DATABASE_URL.
import Fastify from "fastify"
import pg from "pg"
import * as api from "./common.mjs"

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 }) // as the baseline's
pool.on("error", () => {})

/** The database as common.mjs uses it: plain queries on the pool, a transaction on one client. */
const db = {
  query: async (text, values) => (await pool.query(text, values)).rows,
  transaction: async (work) => {
    const client = await pool.connect()
    try {
      await client.query("BEGIN")
      const result = await work(async (text, values) => (await client.query(text, values)).rows)
      await client.query("COMMIT")
      return result
    } catch (error) {
      await client.query("ROLLBACK")
      throw error
    } finally {
      client.release()
    }
  }
}

const app = Fastify({ logger: false })

app.setErrorHandler((error, request, reply) => {
  let known = error
  if (!(error instanceof api.HttpError)) {
    // Fastify's own errors of the request (its body), answered as the baseline answers them.
    if (error.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") known = api.notJson()
    else if (error.code === "FST_ERR_CTP_INVALID_JSON_BODY" || error.code === "FST_ERR_CTP_EMPTY_JSON_BODY") known = api.invalidJson()
    else if (error.statusCode >= 400 && error.statusCode < 500) known = new api.HttpError(error.statusCode, "BadRequest", error.message)
    else {
      console.error(error)
      known = api.internalError()
    }
  }
  if (known.status === 401) reply.headers(api.challenge)
  return reply.code(known.status).send(api.errorBody(known))
})

app.setNotFoundHandler((request, reply) => {
  const error = api.noRoute(request.method, request.url.split("?")[0])
  return reply.code(404).send(api.errorBody(error))
})

app.get("/health", async () => {
  await pool.query(api.healthQuery)
  return api.healthBody
})

// The API: every route of this plugin authenticates its caller first.
app.register(async (v1) => {
  v1.decorateRequest("user", null)
  v1.addHook("onRequest", async (request) => {
    request.user = await api.authenticate(db, request.headers.authorization)
  })

  v1.get("/organizations", async (request) => api.listOrganizations(db, request.user, request.query))

  v1.get("/teams", async (request) => api.listTeams(db, request.user, request.query))

  v1.patch("/teams/:teamId", async (request) => {
    if (!api.isJson(request.headers["content-type"])) throw api.notJson()
    const { teamId } = request.params
    if (!api.isUuid(teamId)) throw new api.HttpError(400, "BadRequest", "teamId must be a UUID")
    return api.updateTeam(db, request.user, teamId, api.checkTeamChanges(request.body))
  })
}, { prefix: "/v1" })

const { rows: [secret] } = await pool.query(api.cursorSecretQuery)
api.setCursorSecret(secret.value)
const port = Number(process.env.PORT ?? 3002)
const host = process.env.HOST ?? "127.0.0.1"
await app.listen({ port, host })
console.log(JSON.stringify({ message: `fastify peer listening on http://${host}:${port}` }))

const shutdown = () => {
  app.close().then(() => pool.end()).finally(() => process.exit(0))
  setTimeout(() => process.exit(0), 2000).unref()
}
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)
