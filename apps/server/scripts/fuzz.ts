// `pnpm fuzz` (= pnpm build && tsx apps/server/scripts/fuzz.ts): fuzzes every operation of openapi.json
// against the bundled server, run as a process of its own.
//
//   tsx apps/server/scripts/fuzz.ts [--database embedded|postgres] [--minutes 3] [--seed N] [--concurrency 4]
//
// Requests are mostly mutations of values the document calls valid: wrong types, missing and extra fields,
// lengths at and past the bounds, huge strings, deep nesting, NUL, invalid UTF-8, `__proto__` keys, odd query
// strings, malformed JSON, wrong content types, and ids of the other user's resources, sent as user A, user B,
// A's organization API key, nobody, or with a garbage token. Each answer is checked: no 5xx, errors are JSON
// with a string `_tag` and `message` (RFC 6749 `error` on the OAuth endpoints, HTML on /device), no answer to
// one tenant holds an id of the other's resources, no reset or empty answer, the server stays up.
// Prints requests per operation, statuses, p99 latency and each finding with one (the smallest) example;
// exits 1 if there were findings.
import fc from "fast-check"
import { execFileSync, spawn, type ChildProcess } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, createServer as createHttpServer, request as httpRequest } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import pg from "pg"
import { startNodeFlags } from "./start-flags.mjs"
import { document, edgeValue, type JsonSchema, validValue } from "../test/support/OpenApiDocument.js"

const { values: flags } = parseArgs({
  options: {
    database: { type: "string", default: "embedded" },
    minutes: { type: "string", default: "3" },
    seed: { type: "string" },
    concurrency: { type: "string", default: "4" }
  },
  strict: true
})
const database = flags.database
if (database !== "embedded" && database !== "postgres") throw new Error("--database embedded|postgres")
const minutes = Number(flags.minutes)
const seed = flags.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(flags.seed)
const concurrency = Math.min(8, Math.max(1, Number(flags.concurrency)))

const root = fileURLToPath(new URL("../../../", import.meta.url))
const mainScript = join(root, "apps/server/dist/main.js")
const adminScript = join(root, "apps/server/dist/admin.js")

// Every pick draws from fast-check with a seed derived from --seed (runs interleave, so only roughly repeatable).
let state = seed >>> 0
/** mulberry32: uniform picks (fast-check's own draws lean to small values and edges, which suits values only). */
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0
  let t = state
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
/** Draws one value of `arbitrary`. */
const draw = <A>(arbitrary: fc.Arbitrary<A>): A =>
  fc.sample(arbitrary, { numRuns: 1, seed: Math.floor(random() * 2 ** 31) })[0]!
const int = (max: number) => Math.floor(random() * max)
const pick = <A>(items: ReadonlyArray<A>): A => items[int(items.length)]!
const chance = (p: number) => random() < p

// ---------------------------------------------------------------------------------------------------------------
// The server and its callers

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

const adminUrl = process.env.FUZZ_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const withClient = async <A>(url: string, f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  client.on("error", () => {})
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end().catch(() => {})
  }
}

const databaseEnv: Record<string, string> = {}
let cleanup: () => Promise<void> = async () => {}
if (database === "embedded") {
  const dataDir = mkdtempSync(join(tmpdir(), "postline-fuzz-"))
  databaseEnv.DATA_DIR = dataDir
  cleanup = async () => rmSync(dataDir, { recursive: true, force: true })
} else {
  const name = `postline_fuzz_${randomBytes(5).toString("hex")}`
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = "/" + name
  databaseEnv.DATABASE_URL = url.toString()
  cleanup = async () => {
    await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
}
databaseEnv.CREDENTIALS_KEY = randomBytes(32).toString("base64")
const baseEnv = { ...process.env, LOG_LEVEL: "WARN", ...databaseEnv }

interface User {
  readonly id: string
  readonly email: string
  readonly token: string
}
const createUser = (email: string, name: string): User =>
  JSON.parse(
    execFileSync("node", [adminScript, "users", "create", "--email", email, "--name", name], { env: baseEnv, encoding: "utf8" })
  )
const userA = createUser("fuzz-a@example.com", "Fuzz A")
const userB = createUser("fuzz-b@example.com", "Fuzz B")
// C belongs to neither tenant: either may add C as a member (request bodies' emails are often C's).
const userC = createUser("fuzz-c@example.com", "Fuzz C")

// A webhook receiver, so that connecting webhook accounts and publishing to them succeed.
const receiver = createHttpServer((req, res) => {
  req.resume()
  req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
})
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
const receiverAddress = receiver.address()
const webhookUrl = `http://127.0.0.1:${typeof receiverAddress === "object" && receiverAddress !== null ? receiverAddress.port : 0}/hook`

const port = await freePort()
const serverLog: Array<string> = []
const server: ChildProcess = spawn(
  "node",
  [...startNodeFlags(), mainScript],
  {
    env: {
      ...baseEnv,
      PORT: String(port),
      HOST: "127.0.0.1",
      RATE_LIMIT_REQUESTS: "1000000",
      RATE_LIMIT_ANONYMOUS_REQUESTS: "1000000",
      RATE_LIMIT_TRANSFER_REQUESTS: "1000000",
      APPROVAL_MAX_FAILURES: "1000000",
      // Webhook accounts call the receiver below, on this machine.
      OUTBOUND_ALLOW_PRIVATE: "true"
    },
    stdio: ["ignore", "pipe", "pipe"]
  }
)
const keepLog = (chunk: Buffer) => {
  serverLog.push(chunk.toString("utf8"))
  if (serverLog.length > 200) serverLog.splice(0, serverLog.length - 200)
}
server.stdout!.on("data", keepLog)
server.stderr!.on("data", keepLog)
let serverExit: string | undefined
server.on("exit", (code, signal) => {
  serverExit = `code ${code} signal ${signal}`
})
let stopping = false

const agent = new Agent({ keepAlive: true, maxSockets: concurrency })

interface Request {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Buffer | undefined
}
interface Response {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: Buffer
  readonly ms: number
}

const send = (req: Request, timeoutMs = 30_000): Promise<Response> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const headers: Record<string, string> = { ...req.headers }
    if (req.body !== undefined) headers["content-length"] = String(req.body.length)
    const r = httpRequest({ host: "127.0.0.1", port, method: req.method, path: req.path, headers, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - started })
      )
      res.on("error", reject)
    })
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    r.on("error", reject)
    r.end(req.body)
  })

const json = (method: string, path: string, token: string | undefined, body?: unknown) =>
  send({
    method,
    path,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    body: body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  })

// Ready when /health answers 200.
const startedAt = Date.now()
for (;;) {
  if (serverExit !== undefined) throw new Error(`the server exited (${serverExit}):\n${serverLog.join("")}`)
  const health = await send({ method: "GET", path: "/health", headers: {} }, 2000).catch(() => undefined)
  if (health?.status === 200) break
  if (Date.now() - startedAt > 60_000) throw new Error(`the server did not start:\n${serverLog.join("")}`)
  await new Promise((r) => setTimeout(r, 200))
}

// Each tenant's resources, by kind: the ids the other tenant must never see.
type Kind = "organization" | "team" | "user" | "apiKey" | "socialAccount" | "post"
type Tenant = "A" | "B"
const ids: Record<Tenant, Record<Kind, Array<string>>> = {
  A: { organization: [], team: [], user: [userA.id], apiKey: [], socialAccount: [], post: [] },
  B: { organization: [], team: [], user: [userB.id], apiKey: [], socialAccount: [], post: [] }
}
/** Resources made by the set-up, which the fuzzer's own callers do not delete or demote. */
const protectedIds = new Set<string>([userA.id, userB.id])
const setupFailures: Array<string> = []

const setup = async (tenant: Tenant, user: User) => {
  const created = async (kind: Kind, method: string, path: string, body: unknown) => {
    const res = await json(method, path, user.token, body)
    if (res.status >= 300) {
      setupFailures.push(`${tenant} ${method} ${path}: ${res.status} ${res.body.toString("utf8").slice(0, 300)}`)
      return undefined
    }
    const value = JSON.parse(res.body.toString("utf8"))
    ids[tenant][kind].push(value.id)
    protectedIds.add(value.id)
    return value
  }
  const org = await created("organization", "POST", "/v1/organizations", { name: `Org ${tenant}` })
  const team = await created("team", "POST", "/v1/teams", { organizationId: org.id, name: `Team ${tenant}`, timezone: "Europe/Paris" })
  const account = await created("socialAccount", "POST", `/v1/teams/${team.id}/social-accounts`, {
    provider: "webhook",
    url: webhookUrl
  })
  await created("post", "POST", `/v1/teams/${team.id}/posts`, {
    content: `Hello from ${tenant}`,
    ...(account === undefined ? {} : { socialAccountIds: [account.id] })
  })
  if (tenant === "A") {
    const key = await created("apiKey", "POST", `/v1/organizations/${org.id}/api-keys`, { name: "Fuzz key" })
    return key?.key as string | undefined
  }
  return undefined
}
const apiKey = await setup("A", userA)
await setup("B", userB)

// ---------------------------------------------------------------------------------------------------------------
// Operations and requests

interface Operation {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly parameters: ReadonlyArray<JsonSchema>
  readonly json: JsonSchema | undefined
  readonly form: JsonSchema | undefined
  readonly oauth: boolean
}
const operations: Array<Operation> = Object.entries(document.paths as Record<string, JsonSchema>).flatMap(
  ([path, methods]) =>
    Object.entries(methods).map(([method, operation]): Operation => ({
      id: operation.operationId,
      method: method.toUpperCase(),
      path,
      parameters: operation.parameters ?? [],
      json: operation.requestBody?.content?.["application/json"]?.schema,
      form: operation.requestBody?.content?.["application/x-www-form-urlencoded"]?.schema,
      oauth: path.startsWith("/v1/auth/")
    }))
)
// The device-login page is outside the document (it is HTML for a browser).
const deviceForm: JsonSchema = {
  type: "object",
  properties: {
    email: { type: "string", examples: ["fuzz-a@example.com"] },
    password: { type: "string" },
    user_code: { type: "string", pattern: "^[B-DF-HJ-NP-TV-Z]{4}-[B-DF-HJ-NP-TV-Z]{4}$" },
    action: { type: "string", enum: ["approve", "deny"] }
  }
}
operations.push(
  { id: "devicePage.show", method: "GET", path: "/device", parameters: [{ in: "query", name: "user_code", schema: { type: "string" } }], json: undefined, form: undefined, oauth: false },
  { id: "devicePage.decide", method: "POST", path: "/device", parameters: [], json: undefined, form: deviceForm, oauth: false }
)

const kindOfParameter: Record<string, Kind> = {
  organizationId: "organization",
  teamId: "team",
  userId: "user",
  apiKeyId: "apiKey",
  socialAccountId: "socialAccount",
  postId: "post",
  socialAccountIds: "socialAccount"
}

type Caller = "A" | "B" | "key" | "none" | "garbage"
const tenantOf = (caller: Caller): Tenant | undefined => (caller === "A" || caller === "key" ? "A" : caller === "B" ? "B" : undefined)
const other = (tenant: Tenant): Tenant => (tenant === "A" ? "B" : "A")

const garbageTokens = [
  "Bearer plt_" + "x".repeat(43),
  "Bearer plk_abcdefgh_" + "y".repeat(40),
  "Bearer ",
  "Bearer " + "a".repeat(8000),
  "Basic Zm9vOmJhcg==",
  "bearer\tplt_x",
  "Bearer plt_\u00e9\u00e9",
  "Bearer plr_" + randomBytes(32).toString("base64url"),
  "Bearer " + "plt_" + "%00"
]

/** An id for a parameter of `kind`: mostly the caller's own, sometimes the other tenant's, a random UUID or junk. */
const idFor = (kind: Kind | undefined, caller: Caller, schema: JsonSchema, destructive: boolean): unknown => {
  const tenant = tenantOf(caller) ?? pick<Tenant>(["A", "B"])
  const roll = int(100)
  if (kind === "user" && roll < 30) return userC.id
  if (kind !== undefined && roll < 60) {
    const own = ids[tenant][kind].filter((id) => !(destructive && protectedIds.has(id)))
    if (own.length > 0) return pick(own)
  }
  if (kind !== undefined && roll < 80) {
    const theirs = ids[other(tenant)][kind]
    if (theirs.length > 0) return pick(theirs)
  }
  if (roll < 90) return randomUUID()
  return draw(edgeValue(schema, { extraProperties: true }))
}

/** Replaces generated ids in a body by known ones (recursively, by property name). */
const withKnownIds = (value: unknown, caller: Caller, destructive: boolean): unknown => {
  if (Array.isArray(value)) return value.map((item) => withKnownIds(item, caller, destructive))
  if (value === null || typeof value !== "object") return value
  const result: Record<string, unknown> = {}
  for (const [name, field] of Object.entries(value)) {
    const kind = kindOfParameter[name]
    if (name === "url" && typeof field === "string" && chance(0.7)) result[name] = webhookUrl
    else if (name === "email" && typeof field === "string" && chance(0.5)) result[name] = userC.email
    else if (kind !== undefined && typeof field === "string" && chance(0.8)) result[name] = idFor(kind, caller, { type: "string" }, destructive)
    else if (kind !== undefined && Array.isArray(field) && chance(0.8)) {
      result[name] = field.map(() => idFor(kind, caller, { type: "string" }, destructive))
    } else result[name] = withKnownIds(field, caller, destructive)
  }
  return result
}

const hugeString = () => pick(["a", "é", "😀", "\u0000", "<>&\"'"]).repeat(int(200_000) + 100_000)
const deepNesting = () => {
  const depth = pick([100, 1000, 10_000, 100_000])
  return pick(["[", "{\"a\":"]) === "[" ? "[".repeat(depth) + "]".repeat(depth) : "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)
}
const invalidUtf8 = [Buffer.from([0xff, 0xfe]), Buffer.from([0xc0, 0x80]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe2, 0x82])]

/** A JSON body: a valid value or one near the edges, sometimes broken on the wire. */
const jsonBody = (schema: JsonSchema, caller: Caller, destructive: boolean): { body: Buffer; contentType: string | undefined } => {
  const roll = int(100)
  const value = withKnownIds(
    roll < 35 ? draw(validValue(schema)) : draw(edgeValue(schema, { extraProperties: true })),
    caller,
    destructive
  )
  let text = JSON.stringify(value) ?? "null"
  const contentType = "application/json"
  if (roll < 60) return { body: Buffer.from(text), contentType }
  switch (int(16)) {
    case 0:
      return { body: Buffer.from(text.slice(0, int(text.length + 1))), contentType } // truncated
    case 1:
      return { body: Buffer.from(text), contentType: pick([undefined, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", "application/xml", "application/json-patch+json"]) }
    case 2:
      return { body: Buffer.from(deepNesting()), contentType }
    case 3: {
      if (typeof value === "object" && value !== null && !Array.isArray(value)) {
        const key = Object.keys(value)[0]
        if (key !== undefined) {
          const huge = { ...value, [key]: hugeString() }
          return { body: Buffer.from(JSON.stringify(huge)), contentType }
        }
      }
      return { body: Buffer.from(JSON.stringify(hugeString())), contentType }
    }
    case 4:
      text = text.startsWith("{") && text.length > 2 ? `{"__proto__":{"admin":true,"role":"owner"},${text.slice(1)}` : `{"__proto__":{"x":1}}`
      return { body: Buffer.from(text), contentType }
    case 5:
      text = text.startsWith("{") && text.length > 2 ? `{"constructor":{"prototype":{"x":1}},${text.slice(1)}` : `{"constructor":null}`
      return { body: Buffer.from(text), contentType }
    case 6: {
      // invalid UTF-8 inside a string
      const at = text.indexOf("\"", 1)
      const bad = pick(invalidUtf8)
      if (at > 0) return { body: Buffer.concat([Buffer.from(text.slice(0, at)), bad, Buffer.from(text.slice(at))]), contentType }
      return { body: Buffer.concat([Buffer.from("\""), bad, Buffer.from("\"")]), contentType }
    }
    case 7:
      return { body: Buffer.from(pick(["", " ", "null", "[]", "{}", "{", "}", "\"x\"", "1e999", "-0", "NaN", "{\"a\":1,}", "\ufeff{}", "{'a':1}", "[1,2", "true"])), contentType }
    case 8:
      // duplicate keys: the later one wins in JSON.parse
      return { body: Buffer.from(text.startsWith("{") && text.length > 2 ? `${text.slice(0, -1)},${text.slice(1)}` : text), contentType }
    case 9:
      return { body: Buffer.from(text.replaceAll("\"", "'")), contentType }
    case 10:
      // numbers out of range
      return { body: Buffer.from(text.replace(/:(-?\d+)/g, () => ":" + pick(["1e308", "-1e308", "9007199254740993", "1e-400", "0.1", "-1"]))), contentType }
    case 11:
      // a body over the 1 MiB limit (rarely)
      return chance(0.2) ? { body: Buffer.alloc(1024 * 1024 + 10, "a"), contentType } : { body: Buffer.from(text), contentType }
    case 12:
      return { body: Buffer.from(text.replace(/"([^"\\]*)"/, "\"$1\\u0000\\ud800\"")), contentType }
    case 13:
      return { body: Buffer.from(JSON.stringify(pick([[value], { value }, { data: value }, value, [1, "a", null]]))), contentType }
    case 14:
      return { body: Buffer.from(text), contentType: "application/json; charset=utf-16" }
    default:
      return { body: Buffer.from(text + pick(["x", " garbage", "\u0000", "{}", "\n\n"])), contentType }
  }
}

const formValue = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value) ?? "")

/** A form-encoded body (OAuth endpoints and /device), sometimes as JSON or broken. */
const formBody = (schema: JsonSchema, caller: Caller, op: Operation): { body: Buffer; contentType: string | undefined } => {
  if (op.json !== undefined && chance(0.2)) return jsonBody(op.json, caller, false)
  const value = draw(chance(0.4) ? validValue(schema) : edgeValue(schema, { extraProperties: true }))
  const entries: Array<[string, string]> =
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? Object.entries(value).map(([k, v]) => [k, formValue(v)])
      : [["value", formValue(value)]]
  if (chance(0.2) && entries.length > 0) entries.push([entries[0]![0], "duplicate"])
  if (chance(0.1)) entries.push(["__proto__", "x"], ["constructor", "y"])
  const contentType = "application/x-www-form-urlencoded"
  let body = Buffer.from(new URLSearchParams(entries).toString())
  switch (int(12)) {
    case 0:
      body = Buffer.concat([body, Buffer.from("&broken=%zz%"), pick(invalidUtf8)])
      break
    case 1:
      body = Buffer.from(body.toString() + "&x=" + "a".repeat(int(600_000)))
      break
    case 2:
      return { body, contentType: pick([undefined, "text/plain", "application/json", "multipart/form-data; boundary=x"]) }
    case 3:
      body = Buffer.from(pick(["", "&&&", "=", "a", "a=%", "%00=%00", "grant_type", "grant_type=&grant_type=", "a=b;c=d"]))
      break
    case 4:
      body = Buffer.concat([body, Buffer.from("&x="), pick(invalidUtf8)])
      break
    default:
  }
  return { body, contentType }
}

const oddQuery = (): string =>
  pick([
    "__proto__=x",
    "__proto__[admin]=true",
    "constructor.prototype.x=1",
    "limit=1&limit=2",
    "limit[]=1",
    "limit=%zz",
    "cursor=%00",
    "cursor=" + "A".repeat(int(8000)),
    "sortBy=name&sortBy=createdAt",
    "sortOrder=ASC",
    "%E0%A4%A=x",
    "a=%C0%80",
    "=",
    "&&",
    "x",
    "limit=1e3",
    "limit=-0",
    "limit=0x10",
    "limit=%201",
    "organizationId=" + randomUUID().toUpperCase(),
    "organizationId=" + randomUUID() + "%00"
  ])

/** Percent-encodes the UTF-8 bytes of `text` (lone surrogates too), sometimes with invalid UTF-8 or a stray `%`. */
const percentEncode = (text: string): string => {
  let encoded = ""
  for (const byte of Buffer.from(text, "utf8")) {
    const c = String.fromCharCode(byte)
    encoded += /[A-Za-z0-9\-._~]/.test(c) ? c : "%" + byte.toString(16).toUpperCase().padStart(2, "0")
  }
  if (chance(0.03)) encoded += pick(["%FF", "%C0%80", "%ED%A0%80", "%", "%zz", "%00"])
  return encoded
}

const encodeSegment = (value: unknown): string => {
  const text = formValue(value)
  if (chance(0.1)) {
    // raw printable characters, where Node's client allows them
    const raw = text.replace(/[^\x21-\x7e]|[/?#%]/g, (c) => percentEncode(c))
    return raw === "" ? "%20" : raw
  }
  const encoded = percentEncode(text)
  return encoded === "" ? pick(["", "%20"]) : encoded
}

interface Built {
  readonly request: Request
  readonly caller: Caller
}

const build = (op: Operation): Built => {
  const caller: Caller = pick<Caller>(["A", "A", "A", "B", "B", "key", "key", "none", "garbage"])
  const destructive = op.method === "DELETE" || op.id === "members.updateMember" || op.id === "apiKeys.revokeApiKey"
  const headers: Record<string, string> = {}
  if (caller === "A") headers.authorization = `Bearer ${userA.token}`
  else if (caller === "B") headers.authorization = `Bearer ${userB.token}`
  else if (caller === "key" && apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`
  else if (caller === "garbage") headers.authorization = pick(garbageTokens).replace(/[^\x20-\x7e\t]/g, "?")
  let path = op.path
  const query: Array<string> = []
  for (const parameter of op.parameters) {
    const schema: JsonSchema = parameter.schema ?? {}
    const kind = kindOfParameter[parameter.name]
    if (parameter.in === "path") {
      path = path.replace(`{${parameter.name}}`, encodeSegment(idFor(kind, caller, schema, destructive)))
    } else if (parameter.in === "query") {
      if (!parameter.required && chance(parameter.name === "cursor" ? 0.85 : 0.4)) continue
      const value = kind !== undefined && chance(0.7)
        ? idFor(kind, caller, schema, false)
        : draw(chance(0.6) ? validValue(schema) : edgeValue(schema, { extraProperties: true }))
      if (value === undefined) continue
      query.push(`${percentEncode(parameter.name)}=${percentEncode(formValue(value))}`)
    } else if (parameter.in === "header") {
      if (chance(0.5)) continue
      const value = formValue(draw(chance(0.6) ? validValue(schema) : edgeValue(schema, { extraProperties: true })))
      headers[parameter.name] = value.replace(/[^\x20-\x7e\t]/g, "?")
    }
  }
  if (chance(0.15)) query.push(oddQuery())
  if (query.length > 0) path += "?" + query.join("&")
  let body: Buffer | undefined
  let contentType: string | undefined
  if (op.form !== undefined) ({ body, contentType } = formBody(op.form, caller, op))
  else if (op.json !== undefined) ({ body, contentType } = jsonBody(op.json, caller, destructive))
  else if (chance(0.1)) {
    body = Buffer.from(pick(["{}", "garbage", "{\"a\":1}", "x".repeat(5000)]))
    contentType = pick(["application/json", "text/plain"])
  }
  if (contentType !== undefined) headers["content-type"] = contentType
  if (chance(0.05)) headers.accept = pick(["text/html", "application/xml", "*/*", "application/json;q=0"])
  // Now and then a method the path does not have.
  const method = chance(0.03) ? pick(["GET", "PUT", "PATCH", "DELETE", "POST", "OPTIONS", "PROPFIND"]) : op.method
  return { request: { method, path, headers, body }, caller }
}

// ---------------------------------------------------------------------------------------------------------------
// Checks

interface Finding {
  readonly class: string
  count: number
  example: Request
  answer: string
}
const findings = new Map<string, Finding>()
const requestSize = (r: Request) => r.path.length + (r.body?.length ?? 0) + JSON.stringify(r.headers).length
const record = (cls: string, request: Request, answer: string) => {
  const found = findings.get(cls)
  if (found === undefined) findings.set(cls, { class: cls, count: 1, example: request, answer })
  else {
    found.count++
    if (requestSize(request) < requestSize(found.example)) {
      found.example = request
      found.answer = answer
    }
  }
}

const statusesByOperation = new Map<string, Map<number | string, number>>()
const statusesOverall = new Map<number | string, number>()
const latencies: Array<number> = []
const count = (op: string, status: number | string) => {
  const byOp = statusesByOperation.get(op) ?? new Map<number | string, number>()
  statusesByOperation.set(op, byOp)
  byOp.set(status, (byOp.get(status) ?? 0) + 1)
  statusesOverall.set(status, (statusesOverall.get(status) ?? 0) + 1)
}

const uuidPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

/** Ids in a successful answer of a tenant's caller become that tenant's (a created post, key, ...). */
const learnIds = (op: Operation, tenant: Tenant, value: unknown) => {
  if (op.method !== "POST" || value === null || typeof value !== "object" || Array.isArray(value)) return
  const id = (value as Record<string, unknown>).id
  if (typeof id !== "string") return
  const kind: Kind | undefined = op.id.startsWith("organizations.")
    ? "organization"
    : op.id.startsWith("teams.")
    ? "team"
    : op.id === "apiKeys.createApiKey"
    ? "apiKey"
    : op.id === "socialAccounts.connectSocialAccount"
    ? "socialAccount"
    : op.id === "posts.createPost"
    ? "post"
    : undefined
  if (kind !== undefined && !ids.A[kind].includes(id) && !ids.B[kind].includes(id)) ids[tenant][kind].push(id)
}

const check = (op: Operation, built: Built, res: Response) => {
  const { request, caller } = built
  const text = res.body.toString("utf8")
  const answer = `${res.status} ${String(res.headers["content-type"] ?? "")} ${text.slice(0, 400)}`
  const contentType = String(res.headers["content-type"] ?? "")
  if (res.status >= 500) {
    let tag = ""
    try {
      tag = String(JSON.parse(text)._tag ?? "")
    } catch {}
    record(`${res.status} ${tag} on ${op.id}`, request, answer)
  }
  let parsed: unknown
  let parsedOk = false
  if (text.length > 0 && contentType.includes("json")) {
    try {
      parsed = JSON.parse(text)
      parsedOk = true
    } catch {}
  }
  if (res.status >= 300 && res.status < 500) {
    const isObject = parsedOk && typeof parsed === "object" && parsed !== null
    const body = (isObject ? parsed : {}) as Record<string, unknown>
    const tagged = typeof body._tag === "string" && typeof body.message === "string"
    const oauthShape = typeof body.error === "string"
    const html = op.path === "/device" && contentType.startsWith("text/html")
    if (!(tagged || (op.oauth && oauthShape) || html)) {
      record(`error without JSON _tag/message (${res.status}) on ${op.id}`, request, answer)
    }
  }
  // RFC 7009: revocation answers 200 with no body.
  if (res.status < 300 && res.status !== 204 && op.id !== "auth.revoke" && text.length === 0) {
    record(`empty ${res.status} answer on ${op.id}`, request, answer)
  }
  // Cross-tenant: ids of the other tenant's resources, other than those the request itself named.
  const tenant = tenantOf(caller)
  if (tenant !== undefined) {
    const requestText = decodeURIComponentSafe(request.path) + (request.body?.toString("utf8") ?? "")
    const theirs = new Set(Object.values(ids[other(tenant)]).flat())
    for (const match of text.matchAll(uuidPattern)) {
      const id = match[0].toLowerCase()
      if (theirs.has(id) && !requestText.toLowerCase().includes(id)) {
        record(`answer to ${caller} holds an id of ${other(tenant)}'s resources on ${op.id}`, request, answer)
        break
      }
    }
    if (res.status < 300 && parsedOk) learnIds(op, tenant, parsed)
  }
}
const decodeURIComponentSafe = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

// The checks must see a leak: B's organizations, as if answered to A.
{
  const listing = await json("GET", "/v1/organizations", userB.token)
  const op = operations.find((o) => o.id === "organizations.listOrganizations")!
  check(op, { caller: "A", request: { method: "GET", path: "/v1/organizations", headers: {} } }, listing)
  if (![...findings.keys()].some((cls) => cls.includes("holds an id of B's"))) throw new Error(`the fuzzer's cross-tenant check missed B's ids in ${listing.body.toString("utf8")}`)
  findings.clear()
  statusesByOperation.clear()
  statusesOverall.clear()
}

// ---------------------------------------------------------------------------------------------------------------
// The run

const deadline = Date.now() + minutes * 60_000
let total = 0
const worker = async () => {
  while (Date.now() < deadline && serverExit === undefined && !stopping) {
    const op = pick(operations)
    let built: Built
    try {
      built = build(op)
    } catch (error) {
      record(`fuzzer could not build a request for ${op.id}: ${String(error).slice(0, 120)}`, { method: op.method, path: op.path, headers: {} }, "")
      continue
    }
    total++
    try {
      const res = await send(built.request)
      latencies.push(res.ms)
      count(op.id, res.status)
      check(op, built, res)
    } catch (error) {
      const message = error instanceof Error ? `${(error as NodeJS.ErrnoException).code ?? ""} ${error.message}` : String(error)
      count(op.id, "error")
      if (serverExit === undefined) record(`no answer (${message.replace(/\d+ ms/, "N ms")}) on ${op.id}`, built.request, message)
    }
  }
}
const progress = setInterval(() => {
  console.error(`[fuzz] ${total} requests, ${findings.size} finding classes, ${Math.round((deadline - Date.now()) / 1000)} s left`)
}, 30_000)
await Promise.all(Array.from({ length: concurrency }, worker))
clearInterval(progress)
if (serverExit !== undefined) {
  record(`the server exited (${serverExit})`, { method: "", path: "", headers: {} }, serverLog.join("").slice(-2000))
}

// ---------------------------------------------------------------------------------------------------------------
// Report

stopping = true
agent.destroy()
server.kill("SIGTERM")
await new Promise((r) => (serverExit !== undefined ? r(undefined) : server.once("exit", r)))
await cleanup()
receiver.close()

const sorted = [...latencies].sort((a, b) => a - b)
const percentile = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!)
const formatStatuses = (m: Map<number | string, number>) =>
  [...m.entries()].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([s, n]) => `${s}:${n}`).join(" ")

console.log(`\nPostline fuzz: database ${database}, ${minutes} min, seed ${seed}, concurrency ${concurrency}`)
if (setupFailures.length > 0) console.log(`set-up failures:\n  ${setupFailures.join("\n  ")}`)
console.log(`${total} requests; statuses ${formatStatuses(statusesOverall)}`)
console.log(`latency ms: p50 ${percentile(50).toFixed(1)}, p99 ${percentile(99).toFixed(1)}, max ${percentile(100).toFixed(1)}`)
console.log("\nper operation:")
for (const op of operations) {
  const m = statusesByOperation.get(op.id) ?? new Map()
  const n = [...m.values()].reduce((a, b) => a + b, 0)
  console.log(`  ${op.id.padEnd(40)} ${String(n).padStart(6)}  ${formatStatuses(m)}`)
}
const showRequest = (r: Request) => {
  const body = r.body === undefined
    ? ""
    : r.body.length > 600
    ? ` body (${r.body.length} bytes): ${JSON.stringify(r.body.subarray(0, 300).toString("latin1"))}…`
    : ` body: ${JSON.stringify(r.body.toString("latin1"))}`
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${v.length > 120 ? v.slice(0, 120) + "…" : v}`)
    .join("; ")
  return `${r.method} ${r.path.length > 400 ? r.path.slice(0, 400) + "…" : r.path} [${headers}]${body}`
}
console.log(`\nfindings: ${findings.size === 0 ? "none" : ""}`)
for (const finding of findings.values()) {
  console.log(`- ${finding.class} (${finding.count}x)\n    request: ${showRequest(finding.example)}\n    answer:  ${finding.answer.replaceAll("\n", " ").slice(0, 500)}`)
}
process.exit(findings.size > 0 ? 1 : 0)
