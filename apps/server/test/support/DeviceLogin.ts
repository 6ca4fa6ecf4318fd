import { Effect, Redacted } from "effect"
import { expect } from "vitest"
import { UsersRepo } from "../../src/Users/Repo.js"
import { raw, signUp } from "./TestServer.js"

export const clientId = "postline-cli"
export const deviceCodeGrant = "urn:ietf:params:oauth:grant-type:device_code"
export const password = "correct horse battery"

/** A form-encoded POST, as OAuth clients and the approval page send them. */
export const postForm = (path: string, params: Record<string, string> | string, headers: Record<string, string> = {}) =>
  raw({
    method: "POST",
    path,
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: typeof params === "string" ? params : new URLSearchParams(params).toString()
  })

export const requestCode = (params: Record<string, string> = { client_id: clientId }) =>
  postForm("/v1/auth/device/code", params)

/** The waiting program's token request. */
export const poll = (deviceCode: string, client = clientId) =>
  postForm("/v1/auth/token", { grant_type: deviceCodeGrant, device_code: deviceCode, client_id: client })

/** A new user who has a password, as the approval page needs. */
export const userWithPassword = Effect.gen(function*() {
  const account = yield* signUp("Dev Ice")
  const users = yield* UsersRepo
  expect(yield* users.setPassword(account.user.email, Redacted.make(password))).toBe(true)
  return account
})

/** A device login the program started, as it was answered. */
export const newCode = Effect.gen(function*() {
  const response = yield* requestCode()
  expect(response.status).toBe(200)
  return response.body as { device_code: string; user_code: string; verification_uri_complete: string }
})
