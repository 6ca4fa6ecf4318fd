import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { Page } from "playwright-core"
import { Chromium, inPage, type PageProblems, screenshot, watchedPage, withChromium } from "./support/Browser.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const Server = Layer.merge(TestServer, Chromium.Live)

const expectNoProblems = (problems: PageProblems) =>
  expect(problems).toEqual({ consoleErrors: [], pageErrors: [], requestsElsewhere: [], documentErrorStatuses: [] })

interface Operation {
  readonly tags: ReadonlyArray<string>
}

/** Each tag of the document the server serves, with its operations: "METHOD path". */
const operationsByTag = Effect.gen(function*() {
  const document = yield* raw({ method: "GET", path: "/openapi.json" })
  const groups = new Map<string, Array<string>>(document.body.tags.map((tag: { name: string }) => [tag.name, []]))
  for (const [path, operations] of Object.entries<Record<string, Operation>>(document.body.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      expect(operation.tags).toHaveLength(1)
      groups.get(operation.tags[0])!.push(`${method.toUpperCase()} ${path}`)
    }
  }
  return groups
})

/**
 * The page's sections of tags, each with its title and the operations it lists ("METHOD path"). An operation's
 * own section is drawn inside its tag's as it comes into view (`…/tag/<tag>/<method>/<path>`): not counted.
 */
const tagSections = (page: Page, lastTag: string) =>
  inPage(async () => {
    // Scalar draws them one after the other once the document is read, with its tags' names as slugs.
    await page.locator(`section[id$='/tag/${lastTag.toLowerCase().replaceAll(" ", "-")}']`).waitFor()
    return page.locator("section[id*='/tag/']").evaluateAll((elements) =>
      elements.filter((section) => /\/tag\/[^/]+$/.test(section.id)).map((section) => ({
        // Scalar breaks long words with zero-width spaces.
        title: section.innerText.split("\n")[0].replaceAll("\u200b", "").trim() as string,
        operations: Array.from(section.querySelectorAll("a.endpoint"), (endpoint: any) =>
          `${endpoint.querySelector(".endpoint-method").textContent.trim().toUpperCase()} ${
            endpoint.querySelector(".endpoint-path").textContent.trim()
          }`
        )
      }))
    )
  })

/** /docs, fully drawn: its sidebar lists the document's title's groups. */
const openDocs = (page: Page, origin: string) =>
  inPage(async () => {
    await page.goto(`${origin}/docs`, { waitUntil: "networkidle" })
    await page.getByRole("navigation").getByText("Introduction").waitFor()
  })

describe.skipIf(!withChromium)("the API reference, /docs, in a browser", () => {
  layer(Server, { excludeTestServices: true })("Scalar's page", (it) => {
    it.scoped("draws every group of the document with each of its operations, from this server alone", () =>
      Effect.gen(function*() {
        const expected = yield* operationsByTag
        const { origin, page, problems } = yield* watchedPage({ viewport: { width: 1280, height: 800 } })
        yield* openDocs(page, origin)
        yield* screenshot(page, "docs-1-reference", false)
        const sections = yield* tagSections(page, [...expected.keys()].at(-1)!)
        expect(sections.map((section) => section.title)).toEqual([...expected.keys()])
        for (const section of sections) expect(section.operations.sort(), section.title).toEqual(expected.get(section.title)!.sort())
        // Every group of the document was compared, and the document has them all.
        expect(expected.size).toBe(22)
        expectNoProblems(problems)
      }))

    it.scoped("sends \"Test Request\" to this server with the bearer token given under Authentication", () =>
      Effect.gen(function*() {
        const account = yield* signUp("Docs Reader")
        yield* account.client.organizations.createOrganization({ payload: { name: "Tried From The Docs" } })
        const { origin, page, problems } = yield* watchedPage({ viewport: { width: 1280, height: 800 } })
        yield* openDocs(page, origin)
        const sent = yield* inPage(async () => {
          // The document's one scheme is chosen from the start: its field asks for the token (the API client's
          // own field is there too, hidden until the client opens).
          await page.getByPlaceholder("Token").filter({ visible: true }).fill(account.token)
          await page.getByRole("button", { name: "Test Request (get /v1/organizations)" }).click()
          const [response] = await Promise.all([
            page.waitForResponse((response) => response.url() === `${origin}/v1/organizations`),
            page.getByRole("button", { name: /^Send get request to / }).click()
          ])
          await page.getByText("Tried From The Docs").last().waitFor()
          return {
            authorization: await response.request().headerValue("authorization"),
            status: response.status(),
            body: await response.json()
          }
        })
        expect(sent.authorization).toBe(`Bearer ${account.token}`)
        expect(sent.status).toBe(200)
        expect(sent.body.data.map((organization: { name: string }) => organization.name)).toEqual(["Tried From The Docs"])
        yield* screenshot(page, "docs-2-test-request", false)
        expectNoProblems(problems)
      }))
  })
})
