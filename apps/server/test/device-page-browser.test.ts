import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { Page } from "playwright-core"
import { Chromium, inPage, type PageProblems, screenshot, watchedPage, withChromium } from "./support/Browser.js"
import { newCode, password, poll, userWithPassword } from "./support/DeviceLogin.js"
import { raw, TestServer } from "./support/TestServer.js"

const Server = Layer.merge(TestServer, Chromium.Live)

const fields = ["Email", "Password", "Code shown by the program"] as const

/** Sends the form with one of its buttons, as a click or as `key` on the focused button; the answer's status. */
const submit = async (page: Page, send: () => Promise<void>) => {
  const [response] = await Promise.all([
    page.waitForResponse((response) => response.request().method() === "POST" && response.url().endsWith("/device")),
    send()
  ])
  await page.waitForLoadState()
  return response.status()
}

const clickToSubmit = (page: Page, button: "Approve" | "Deny") =>
  submit(page, () => page.getByRole("button", { name: button }).click())

/** Fills in the email and the password, and approves with a click. */
const approveAs = async (page: Page, email: string, typedPassword: string) => {
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(typedPassword)
  return clickToSubmit(page, "Approve")
}

const alertText = (page: Page) => page.getByRole("alert").innerText()

/** Nothing went wrong in the page; the pages it was answered with an error status had these. */
const expectNoProblems = (problems: PageProblems, documentErrorStatuses: Array<number> = []) =>
  expect(problems).toEqual({ consoleErrors: [], pageErrors: [], requestsElsewhere: [], documentErrorStatuses })

/** The program's token request succeeds, and the token acts as the user. */
const expectLoggedIn = (deviceCode: string, email: string) =>
  Effect.gen(function*() {
    const granted = yield* poll(deviceCode)
    expect(granted.status).toBe(200)
    const context = yield* raw({ method: "GET", path: "/v1/agent/context", token: granted.body.access_token })
    expect(context.status).toBe(200)
    expect(context.body.user.email).toBe(email)
  })

const expectStillWaiting = (deviceCode: string) =>
  Effect.gen(function*() {
    const waiting = yield* poll(deviceCode)
    expect(waiting.status).toBe(400)
    expect(waiting.body.error).toBe("authorization_pending")
  })

describe.skipIf(!withChromium)("the device page in a browser", () => {
  layer(Server, { excludeTestServices: true })("its states", (it) => {
    it.scoped("opens with the program's code filled in, names the program, and approves: the program gets its token", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage()
        yield* inPage(async () => {
          await page.goto(code.verification_uri_complete)
          expect(await page.title()).toBe("Log in a device · Postline")
          expect(await page.getByLabel("Code shown by the program").inputValue()).toBe(code.user_code)
          expect(await page.getByText("The program calls itself").innerText()).toBe("The program calls itself postline-cli.")
          expect(await page.getByLabel("Email").inputValue()).toBe("")
        })
        yield* screenshot(page, "device-1-prefilled")
        yield* expectStillWaiting(code.device_code)

        const status = yield* inPage(() => approveAs(page, account.user.email, password))
        expect(status).toBe(200)
        expect(yield* inPage(() => page.getByRole("heading", { level: 1 }).innerText())).toBe("Device approved")
        yield* screenshot(page, "device-2-approved")
        yield* expectLoggedIn(code.device_code, account.user.email)
        expectNoProblems(problems)
      }))

    it.scoped("a wrong password is said on the page, which keeps the email and the code but not the password", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage()
        const status = yield* inPage(async () => {
          await page.goto(code.verification_uri_complete)
          return approveAs(page, account.user.email, "not the password")
        })
        expect(status).toBe(403)
        yield* inPage(async () => {
          expect(await alertText(page)).toBe("Wrong email or password.")
          expect(await page.getByLabel("Email").inputValue()).toBe(account.user.email)
          expect(await page.getByLabel("Password").inputValue()).toBe("")
          expect(await page.getByLabel("Code shown by the program").inputValue()).toBe(code.user_code)
        })
        yield* screenshot(page, "device-3-wrong-password")
        yield* expectStillWaiting(code.device_code)
        // Favicon, styles and the error's answer: a page answered 403 loads as cleanly as any.
        expectNoProblems(problems, [403])

        // Typed again, the password approves.
        const retried = yield* inPage(() => approveAs(page, account.user.email, password))
        expect(retried).toBe(200)
        yield* expectLoggedIn(code.device_code, account.user.email)
      }))

    it.scoped("denies: the page says the program was not let in, and the program is refused", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage()
        const status = yield* inPage(async () => {
          await page.goto(code.verification_uri_complete)
          await page.getByLabel("Email").fill(account.user.email)
          await page.getByLabel("Password").fill(password)
          return clickToSubmit(page, "Deny")
        })
        expect(status).toBe(200)
        yield* inPage(async () => {
          expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Device denied")
          expect(await page.locator("main p").innerText()).toBe("postline-cli was not let in. You can close this page.")
        })
        yield* screenshot(page, "device-6-denied")
        const refused = yield* poll(code.device_code)
        expect(refused.status).toBe(400)
        expect(refused.body.error).toBe("access_denied")
        expectNoProblems(problems)
      }))

    it.scoped("a code typed wrong is said on the page; opened without a code, the page asks for one", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const { origin, page, problems } = yield* watchedPage()
        const status = yield* inPage(async () => {
          await page.goto(`${origin}/device`)
          expect(await page.getByLabel("Code shown by the program").inputValue()).toBe("")
          expect(await page.getByText("The program calls itself").count()).toBe(0)
          await page.getByLabel("Code shown by the program").fill("BCDF-GHJK")
          return approveAs(page, account.user.email, password)
        })
        expect(status).toBe(400)
        expect(yield* inPage(() => alertText(page))).toBe("No login is waiting for this code: check it against the program.")
        yield* screenshot(page, "device-7-unknown-code")
        expectNoProblems(problems, [400])
      }))

    it.scoped("works with JavaScript off: the page is a plain form", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage({ javaScriptEnabled: false })
        const status = yield* inPage(async () => {
          await page.goto(code.verification_uri_complete)
          expect(await page.locator("script").count()).toBe(0)
          return approveAs(page, account.user.email, password)
        })
        expect(status).toBe(200)
        yield* expectLoggedIn(code.device_code, account.user.email)
        expectNoProblems(problems)
      }))

    it.scoped("is approved with the keyboard alone: each field has its label, in the order read, with a visible focus", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage()
        yield* inPage(() => page.goto(code.verification_uri_complete))

        /** The label, or the text of a button, of what has the focus, and whether its focus shows. */
        const focused = () =>
          page.locator(":focus").evaluate((element) => {
            const style = element.ownerDocument.defaultView.getComputedStyle(element)
            return {
              name: (element.labels?.[0]?.textContent ?? element.textContent) as string,
              outlined: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0
            }
          })
        const order: Array<string | null> = []
        yield* inPage(async () => {
          for (const name of [...fields, "Approve", "Deny"]) {
            await page.keyboard.press("Tab")
            const now = await focused()
            order.push(now.name)
            expect(now.outlined, `the focus on ${name} shows`).toBe(true)
          }
        })
        expect(order).toEqual([...fields, "Approve", "Deny"])

        const status = yield* inPage(async () => {
          await page.keyboard.press("Shift+Tab")
          await page.keyboard.press("Shift+Tab")
          await page.keyboard.press("Shift+Tab")
          await page.keyboard.press("Shift+Tab")
          expect((await focused()).name).toBe("Email")
          await page.keyboard.type(account.user.email)
          await page.keyboard.press("Tab")
          await page.keyboard.type(password)
          await page.keyboard.press("Tab")
          await page.keyboard.press("Tab")
          expect((await focused()).name).toBe("Approve")
          return submit(page, () => page.keyboard.press("Enter"))
        })
        expect(status).toBe(200)
        yield* expectLoggedIn(code.device_code, account.user.email)
        expectNoProblems(problems)
      }))

    it.scoped("is usable 360 px wide: nothing scrolls sideways, every field and button fits and is big enough to touch", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage({ viewport: { width: 360, height: 740 }, hasTouch: true, isMobile: true })
        yield* inPage(() => page.goto(code.verification_uri_complete))
        const layout = yield* inPage(async () => ({
          scrollWidth: await page.locator("html").evaluate((html) => html.scrollWidth as number),
          controls: await page.locator("input, button").evaluateAll((controls) =>
            controls.map((control) => {
              const box = control.getBoundingClientRect()
              return { left: box.left as number, right: box.right as number, height: box.height as number }
            })
          ),
          fontSize: await page.locator("input").first().evaluate((input) =>
            parseFloat(input.ownerDocument.defaultView.getComputedStyle(input).fontSize)
          )
        }))
        expect(layout.scrollWidth).toBeLessThanOrEqual(360)
        expect(layout.controls).toHaveLength(5)
        for (const control of layout.controls) {
          expect(control.left).toBeGreaterThanOrEqual(0)
          expect(control.right).toBeLessThanOrEqual(360)
          // WCAG 2.2's least target size is 24 px; 16 px text keeps phones from zooming into a field.
          expect(control.height).toBeGreaterThanOrEqual(24)
        }
        expect(layout.fontSize).toBeGreaterThanOrEqual(16)
        yield* screenshot(page, "device-4-360px")

        const status = yield* inPage(async () => {
          await page.getByLabel("Email").fill(account.user.email)
          await page.getByLabel("Password").fill(password)
          return submit(page, () => page.getByRole("button", { name: "Approve" }).tap())
        })
        expect(status).toBe(200)
        yield* expectLoggedIn(code.device_code, account.user.email)
        expectNoProblems(problems)
      }))

    it.scoped("the watch itself sees a Content-Security-Policy violation and a request leaving the machine", () =>
      Effect.gen(function*() {
        const { origin, page, problems } = yield* watchedPage()
        yield* inPage(async () => {
          await page.goto(`${origin}/device`)
          await Promise.all([
            page.waitForEvent("console"),
            page.locator("body").evaluate((body) => {
              const image = body.ownerDocument.createElement("img")
              image.src = "https://cdn.example.com/pixel.png"
              body.append(image)
            })
          ])
          await page.goto("https://cdn.example.com/").catch(() => undefined)
        })
        expect(problems.consoleErrors).toHaveLength(1)
        expect(problems.consoleErrors[0]).toMatch(/violates the following Content Security Policy directive: "img-src 'self'"/)
        expect(problems.requestsElsewhere).toEqual(["https://cdn.example.com/"])
      }))
  })

  // A server of its own: the approval limit counts the failures of each client address, and every test's is 127.0.0.1.
  layer(Server, { excludeTestServices: true })("too many attempts", (it) => {
    it.scoped("after 5 failures the page says how long to wait, and refuses even the right password until then", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const { page, problems } = yield* watchedPage()
        yield* inPage(() => page.goto(code.verification_uri_complete))
        for (let attempt = 1; attempt <= 5; attempt++) {
          const status = yield* inPage(() => approveAs(page, account.user.email, `wrong ${attempt}`))
          expect(status).toBe(403)
        }
        const status = yield* inPage(() => approveAs(page, account.user.email, password))
        expect(status).toBe(429)
        expect(yield* inPage(() => alertText(page))).toBe("Too many failed attempts: try again in 3 minutes.")
        yield* screenshot(page, "device-5-too-many-attempts")
        yield* expectStillWaiting(code.device_code)
        expectNoProblems(problems, [403, 403, 403, 403, 403, 429])
      }))
  })
})
