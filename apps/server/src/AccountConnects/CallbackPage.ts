import { HttpServerResponse } from "@effect/platform"
import { document, escape, respond } from "../Http/Page.js"
import { displayNameOf } from "../Providers/Rules.js"
import type { CallbackOutcome } from "./Service.js"

/** Where the browser goes back to, with what happened in its query; the address was checked when the connect started. */
const back = (returnTo: string, connectId: string, status: "connected" | "failed") => {
  const url = new URL(returnTo)
  url.searchParams.set("connectId", connectId)
  url.searchParams.set("status", status)
  return HttpServerResponse.empty({ status: 303, headers: { location: url.toString(), "cache-control": "no-store", "referrer-policy": "no-referrer" } })
}

/** The page a network's redirect back ends on (or the redirect to the caller's `returnTo`). */
export const callbackAnswer = (outcome: CallbackOutcome) => {
  switch (outcome._tag) {
    case "Connected": {
      if (outcome.returnTo !== null) return back(outcome.returnTo, outcome.connectId, "connected")
      const { account } = outcome
      const name = displayNameOf(account.provider)
      return respond(
        200,
        document(
          "Account connected",
          `<h1>Account connected</h1>
<p>The ${escape(name)} account <strong>${escape(account.handle)}</strong>${
            account.displayName === null ? "" : ` (${escape(account.displayName)})`
          } is connected to Postline: posts can now be published to it. You can close this page and return to the program.</p>`
        )
      )
    }
    case "Failed":
      if (outcome.returnTo !== null) return back(outcome.returnTo, outcome.connectId, "failed")
      return respond(
        400,
        document(
          "Not connected",
          `<h1>Not connected</h1>\n<p class="error" role="alert">${escape(outcome.message)}</p>\n<p>Start connecting the account again from the program.</p>`
        )
      )
    case "Refused":
      return respond(
        400,
        document("Not connected", `<h1>Not connected</h1>\n<p class="error" role="alert">${escape(outcome.message)}</p>`)
      )
  }
}
