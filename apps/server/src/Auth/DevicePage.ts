import { HttpApiBuilder, HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { TooManyRequests } from "@postline/domain"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { formContentType } from "../Http/ContentTypes.js"
import { refusalIn, refusalsToEdge } from "../Http/RequestBody.js"
import { ClientAddress } from "../RateLimits/ClientAddress.js"
import { RequestLimits } from "../RateLimits/RequestLimits.js"
import { approvalForm, confirmation, failurePage } from "./DevicePageHtml.js"
import { Approval, DeviceLogin } from "./Service.js"
import { normalizeUserCode } from "./UserCodes.js"

const decisions = { approve: "approved", deny: "denied" } as const

// Longer input is no email, password or code of ours; it is refused before any work.
const maxFieldLength = 1024

/**
 * A page never fails: what went wrong unexpectedly is logged and answered with an HTML page. A body refused
 * for its size or encoding gets the edge's answer, as on every route.
 */
const neverFailing = <E, R>(page: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  page.pipe(
    Effect.catchAllCause((cause) =>
      Option.match(refusalIn(cause), {
        onSome: Effect.die,
        onNone: () => Effect.as(Effect.logError("The device page failed", cause), failurePage)
      })
    )
  )

/**
 * `GET /device`, the page where a user approves or denies a device login,
 * and `POST /device`, its form. Plain routes beside the API: HTML, not JSON,
 * and not in the OpenAPI document. Passwords and codes are never logged.
 */
export const DevicePageLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const login = yield* DeviceLogin
    const limits = yield* RequestLimits
    const clientAddress = yield* ClientAddress

    /** Every request of the page counts against its address's limit, as the API's other anonymous endpoints do. */
    const limited = <E, R>(page: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const counted = yield* Effect.either(limits.count("address", clientAddress.of(request)))
        if (counted._tag === "Left") {
          return HttpServerResponse.unsafeJson(yield* encodeTooManyRequests(counted.left), { status: 429 })
        }
        return yield* page
      })

    /**
     * The form, with the code of the link prefilled. When that code is a pending login's, the page names the
     * client asking and its scope (RFC 8628 §5.4); for any other code it shows nothing more.
     */
    const show = Effect.gen(function*() {
      const query = yield* HttpServerRequest.ParsedSearchParams
      const userCode = typeof query.user_code === "string" ? query.user_code.slice(0, maxFieldLength) : ""
      const asking = yield* Option.match(normalizeUserCode(userCode), {
        onNone: () => Effect.succeedNone,
        onSome: login.pendingLogin
      })
      return approvalForm(200, { userCode, asking: Option.getOrUndefined(asking) })
    })

    const decide = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!formContentType.test(request.headers["content-type"] ?? "")) {
        return approvalForm(415, { error: "Send the form from this page." })
      }
      const params = yield* Effect.either(refusalsToEdge(request.urlParamsBody))
      if (params._tag === "Left") return approvalForm(400, { error: "The form could not be read: send it again." })
      const field = (name: string) => Option.getOrElse(UrlParams.getFirst(params.right, name), () => "")
      const email = field("email").trim()
      const password = field("password")
      const typedCode = field("user_code").trim()
      const action = field("action")
      const retry = (status: number, error: string, headers?: Record<string, string>) =>
        approvalForm(status, { email, userCode: typedCode, error }, headers)

      if (action !== "approve" && action !== "deny") return retry(400, "Choose Approve or Deny.")
      if (email === "" || password === "" || typedCode === "") {
        return retry(400, "Enter your email, your password and the code shown by the program.")
      }
      const userCode = normalizeUserCode(typedCode)
      if (Option.isNone(userCode)) return retry(400, "That is not a code: a code is eight letters, like BCDF-GHJK.")
      // No user has such an email or password; PostgreSQL could not even compare a NUL.
      if ([email, password].some((value) => value.length > maxFieldLength || value.includes("\0"))) {
        return retry(403, "Wrong email or password.")
      }

      const decision = decisions[action]
      const approval = yield* login.decide({
        address: clientAddress.of(request),
        email,
        password: Redacted.make(password),
        userCode: userCode.value,
        decision
      })
      return yield* Approval.$match(approval, {
        RateLimited: ({ retryAfterSeconds }) =>
          retry(429, `Too many failed attempts: try again in ${Math.ceil(retryAfterSeconds / 60)} minutes.`, {
            "retry-after": String(retryAfterSeconds)
          }),
        WrongCredentials: () => retry(403, "Wrong email or password."),
        UnknownCode: () => retry(400, "No login is waiting for this code: check it against the program."),
        ExpiredCode: () => retry(400, "This code has expired: start the login again in the program."),
        Decided: ({ clientId }) => confirmation(decision, clientId)
      })
    })

    yield* router.get("/device", neverFailing(limited(show)))
    yield* router.post("/device", neverFailing(limited(decide)))
  })
).pipe(Layer.provide([DeviceLogin.Default, RequestLimits.Default, ClientAddress.Default]))

const encodeTooManyRequests = Schema.encode(TooManyRequests)
