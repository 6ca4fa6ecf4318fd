import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { TestServer } from "./support/TestServer.js"

const refusal = "must not contain a user name or password"
const password = "s3cret-pw"

/** A 400 naming the field, with nothing of the password in it. */
const expectRefused = (response: { status: number; body: any }, field: string) => {
  expect(response.status).toBe(400)
  expect(response.body._tag).toBe("HttpApiDecodeError")
  expect(response.body.issues).toEqual([{ path: [field], message: refusal }])
  expect(response.body.message).toContain(`${field}: ${refusal}`)
  expect(JSON.stringify(response.body)).not.toContain(password)
}

// An HTTP client will not send a request to a URL with a user name or password: an account with one could
// never publish, so it is refused when it is connected or updated.
layer(TestServer, { excludeTestServices: true })("addresses of social accounts", (it) => {
  it.scoped("a user name or password in any provider's address is refused at connect, and nothing is kept", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call } = yield* publishingTeam()
      const withUserInfo = (url: string, userInfo = `hook-user:${password}`) => url.replace("://", `://${userInfo}@`)
      const cases = [
        ["url", { provider: "webhook", url: withUserInfo(`${receiver.url}/hook`) }],
        ["url", { provider: "webhook", url: withUserInfo(`${receiver.url}/hook`, "hook-user") }],
        ["url", { provider: "webhook", url: withUserInfo(`${receiver.url}/hook`, `:${password}`) }],
        // An empty one still is one to the URL parser.
        ["url", { provider: "webhook", url: withUserInfo(`${receiver.url}/hook`, "") }],
        ["url", { provider: "webhook", url: withUserInfo(`${receiver.url}/hook`).replace("://", ":////") }],
        ["instanceUrl", { provider: "mastodon", instanceUrl: withUserInfo("https://mastodon.example"), accessToken: "token" }],
        ["serviceUrl", {
          provider: "bluesky",
          handle: "alice.example",
          appPassword: "abcd-efgh-ijkl-mnop",
          serviceUrl: withUserInfo("https://pds.example")
        }]
      ] as const
      for (const [field, json] of cases) expectRefused(yield* call("POST", "/social-accounts", json), field)
      expect((yield* call("GET", "/social-accounts")).body.data).toEqual([])
      expect(receiver.received).toEqual([])
    }))

  it.scoped("updating an account's address to one with a user name or password is refused, and it keeps its own", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const update = { provider: "webhook", url: receiver.url.replace("://", `://hook-user:${password}@`) }
      expectRefused(yield* call("PATCH", `/social-accounts/${hook.id}`, update), "url")

      const post = yield* draft("Still reaches the receiver")
      expect((yield* postNow(post.id, [hook.id])).body.outcome).toBe("none_failed")
      expect(receiver.received).toHaveLength(1)
      expect(receiver.received[0]!.headers.authorization).toBeUndefined()
    }))
})
