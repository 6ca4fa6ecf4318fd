// What the tests of @postline/sdk need around a server process: a user with a password for the device page, the
// page's approval, and a proxy in front of the server that can fail, drop or slow down chosen requests.
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { request as httpRequest } from "node:http"
import type { IncomingHttpHeaders, ServerResponse } from "node:http"
import { makeLocalServer } from "./LocalServer.js"
import { bundled, serverDir } from "./ServerProcess.js"

export const devicePassword = "correct horse battery"

/** Runs the admin command on the database of `env` (through its server, when one runs), `input` on its stdin. */
const admin = (args: ReadonlyArray<string>, env: Record<string, string>, input = "") =>
  Effect.async<string>((resume) => {
    const child = execFile(
      process.execPath,
      [bundled("admin"), ...args],
      { cwd: serverDir, env: { PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) =>
        resume(error ? Effect.die(new Error(`admin ${args.join(" ")} failed: ${stderr}`)) : Effect.succeed(stdout))
    )
    child.stdin?.end(input)
  })

/** A new user with a personal access token and the password `devicePassword`, for the device approval page. */
export const userWithPassword = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const email = `${Math.random().toString(36).slice(2)}@example.com`
    const created = JSON.parse(yield* admin(["users", "create", "--email", email, "--name", "Sdk User"], env)) as {
      readonly id: string
      readonly token: string
    }
    yield* admin(["users", "set-password", "--email", email], env, `${devicePassword}\n`)
    return { ...created, email, password: devicePassword }
  })

/** The user's decision on the device page, as its form sends it; the page's status. */
export const decideOnDevicePage = (
  base: string,
  fields: { readonly email: string; readonly password: string; readonly userCode: string; readonly action: "approve" | "deny" }
) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}/device`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        email: fields.email,
        password: fields.password,
        user_code: fields.userCode,
        action: fields.action
      }).toString()
    })
    await response.text()
    return response.status
  })

/** What the proxy does with one request. */
export type ProxyAction =
  | { readonly _tag: "Forward" }
  /** Answers this status itself, with a `{ _tag, message }` body and these headers; the server sees nothing. */
  | { readonly _tag: "Answer"; readonly status: number; readonly headers?: Record<string, string> }
  /** Forwards the request, waits for the server's whole answer, then closes the connection without answering. */
  | { readonly _tag: "Drop" }

export const forward: ProxyAction = { _tag: "Forward" }
export const answer = (status: number, headers?: Record<string, string>): ProxyAction =>
  headers === undefined ? { _tag: "Answer", status } : { _tag: "Answer", status, headers }
export const drop: ProxyAction = { _tag: "Drop" }

export interface ProxiedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** When it arrived, in ms of performance.now(). */
  readonly at: number
  readonly action: ProxyAction["_tag"]
  /** The server's status and Idempotent-Replayed, when it was forwarded. */
  server?: { readonly status: number; readonly replayed: string | undefined }
}

const statusTags: Record<number, string> = {
  429: "TooManyRequests",
  500: "InternalError",
  502: "BadGateway",
  503: "ServiceUnavailable"
}

/**
 * A proxy in front of `target` on 127.0.0.1. `plan(request, seen)` decides what becomes of each request (`seen`:
 * the earlier requests with the same method and path); it forwards by default. `requests` lists them all.
 */
export const makeProxy = (target: string) =>
  Effect.gen(function*() {
    const requests: Array<ProxiedRequest> = []
    let plan: (request: ProxiedRequest, seen: ReadonlyArray<ProxiedRequest>) => ProxyAction = () => forward
    const targetUrl = new URL(target)

    const send = (proxied: ProxiedRequest, body: Buffer, response: ServerResponse | undefined, onDone: () => void) => {
      const headers = { ...proxied.headers, host: targetUrl.host }
      const upstream = httpRequest({
        host: targetUrl.hostname,
        port: targetUrl.port,
        method: proxied.method,
        path: proxied.path,
        headers
      }, (answer) => {
        const chunks: Array<Buffer> = []
        answer.on("data", (chunk: Buffer) => chunks.push(chunk))
        answer.on("end", () => {
          const replayed = answer.headers["idempotent-replayed"]
          proxied.server = { status: answer.statusCode ?? 0, replayed: typeof replayed === "string" ? replayed : undefined }
          if (response !== undefined) {
            const { connection: _c, "keep-alive": _k, "transfer-encoding": _t, ...rest } = answer.headers
            response.writeHead(answer.statusCode ?? 502, rest).end(Buffer.concat(chunks))
          }
          onDone()
        })
      })
      upstream.on("error", () => {
        response?.socket?.destroy()
        onDone()
      })
      upstream.end(body)
    }

    const url = yield* makeLocalServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = Buffer.concat(chunks)
        const proxied: ProxiedRequest = {
          method: request.method ?? "GET",
          path: request.url ?? "/",
          headers: request.headers,
          at: performance.now(),
          action: "Forward"
        }
        const seen = requests.filter((earlier) => earlier.method === proxied.method && earlier.path === proxied.path)
        requests.push(proxied)
        const action = plan(proxied, seen)
        ;(proxied as { action: ProxyAction["_tag"] }).action = action._tag
        switch (action._tag) {
          case "Forward":
            return send(proxied, body, response, () => {})
          case "Drop":
            return send(proxied, body, undefined, () => request.socket.destroy())
          case "Answer": {
            const text = JSON.stringify({ _tag: statusTags[action.status] ?? "Error", message: `The proxy answered ${action.status}` })
            response.writeHead(action.status, { "content-type": "application/json", ...action.headers }).end(text)
          }
        }
      })
    })

    return {
      url,
      requests,
      /** Replaces the plan; the requests seen so far are forgotten. */
      setPlan: (next: typeof plan) => {
        plan = next
        requests.length = 0
      }
    }
  })
