import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, type BrowserContextOptions, chromium, type Page } from "playwright-core"

/** Debian's Chromium (`bash .ci/apt-install.sh chromium`); Playwright drives it and downloads no browser. */
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

export const withChromium = existsSync(executablePath)
if (!withChromium) {
  const message = `No Chromium at ${executablePath} (install it with: bash .ci/apt-install.sh chromium)`
  // CI always tests the pages in a browser; elsewhere the rest of the suite still runs.
  if (process.env.CI) throw new Error(`${message}: CI tests the pages in a browser`)
  console.warn(`\n${message}: SKIPPING the tests of the pages in a browser.\n`)
}

/** Where the screenshots of the pages' states go (test artifacts, not part of the project), one folder a database. */
const screenshotsDir = join(
  dirname(fileURLToPath(import.meta.url)),
  "../../../../test-artifacts/pages",
  process.env.TEST_DATABASE ?? "embedded"
)

/**
 * A headless Chromium for the scope. Its own background traffic (updates, safe browsing, sync) is off: this
 * machine reaches nothing outside it, and the tests watch every request the pages make.
 */
const launchChromium = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({
      executablePath,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run"
      ]
    })
  ),
  (browser) => Effect.promise(() => browser.close())
)

/** One Chromium for a layer's tests; each test opens pages in contexts of its own. */
export class Chromium extends Context.Tag("test/Chromium")<Chromium, Browser>() {
  static readonly Live = Layer.scoped(this, launchChromium)
}

/** The in-process test server's address, as a browser reaches it. */
export const serverOrigin = Effect.map(
  HttpServer.HttpServer,
  (server) => `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`
)

/**
 * What a page did that a person should never meet: console errors (the browser's own reports of refused
 * loads and Content-Security-Policy violations among them), uncaught exceptions, and requests to anywhere but
 * `origin`, which are refused before they leave. A page answered with an error status (a form sent with a wrong
 * password) is no problem but a fact for the test to expect: its status is in `documentErrorStatuses`, and the
 * browser's console line that reports it is not among the errors.
 */
export interface PageProblems {
  readonly consoleErrors: Array<string>
  readonly pageErrors: Array<string>
  readonly requestsElsewhere: Array<string>
  readonly documentErrorStatuses: Array<number>
}

/**
 * A page of the test server in a context of its own for the scope (JavaScript and viewport as `options` say), watched;
 * `alsoReachable` are other origins of this machine the page may load from (a network's sign-in page).
 */
export const watchedPage = (options: BrowserContextOptions = {}, alsoReachable: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const browser = yield* Chromium
    const origin = yield* serverOrigin
    const context = yield* Effect.acquireRelease(
      Effect.promise(() => browser.newContext(options)),
      (context) => Effect.promise(() => context.close())
    )
    const problems: PageProblems = { consoleErrors: [], pageErrors: [], requestsElsewhere: [], documentErrorStatuses: [] }
    yield* Effect.promise(() =>
      context.route("**/*", (route) => {
        const url = route.request().url()
        const reachable = [origin, ...alsoReachable].some((allowed) => url.startsWith(`${allowed}/`))
        if (reachable || url.startsWith("data:") || url.startsWith("blob:")) return route.continue()
        problems.requestsElsewhere.push(url)
        return route.abort("blockedbyclient")
      })
    )
    const page = yield* Effect.promise(() => context.newPage())
    const documentsAnsweredWithErrors = new Set<string>()
    page.on("response", (response) => {
      if (response.request().isNavigationRequest() && response.status() >= 400) {
        problems.documentErrorStatuses.push(response.status())
        documentsAnsweredWithErrors.add(`${response.url()} ${response.status()}`)
      }
    })
    page.on("console", (message) => {
      if (message.type() !== "error") return
      const reportedStatus = /^Failed to load resource: the server responded with a status of (\d+) /.exec(message.text())
      if (reportedStatus && documentsAnsweredWithErrors.has(`${message.location().url} ${reportedStatus[1]}`)) return
      problems.consoleErrors.push(message.text())
    })
    page.on("pageerror", (error) => problems.pageErrors.push(error.message))
    return { page, problems, origin }
  })

/** Saves what `page` shows, the whole page unless `fullPage` is false, as `<name>.png` among the test artifacts. */
export const screenshot = (page: Page, name: string, fullPage = true) =>
  Effect.promise(() => {
    mkdirSync(screenshotsDir, { recursive: true })
    return page.screenshot({ path: join(screenshotsDir, `${name}.png`), fullPage })
  })

/** Runs a promise of the page's API as an effect; a failure (a locator not found in time) fails the test. */
export const inPage = <A>(use: () => Promise<A>) => Effect.promise(use)
