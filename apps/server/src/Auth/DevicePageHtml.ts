import { document, escape, respond } from "../Http/Page.js"
import type { Asking } from "./DeviceAuthorizationsRepo.js"

// The client names itself (no registration), so the page says so rather than vouch for it.
const askingParagraph = (asking: Asking | undefined) =>
  asking === undefined ? "" : `<p class="client">The program calls itself <strong>${escape(asking.clientId)}</strong>${
    asking.scope === null ? "" : ` and asks for <strong>${escape(asking.scope)}</strong>`
  }.</p>
`

/**
 * The approval form; after a failure it says what went wrong and keeps what was typed, except the password.
 * `asking` is the client of the prefilled code's pending login, if it has one.
 */
export const approvalForm = (
  status: number,
  fields: {
    readonly email?: string
    readonly userCode?: string
    readonly error?: string
    readonly asking?: Asking | undefined
  },
  headers?: Record<string, string>
) =>
  respond(
    status,
    document(
      "Log in a device",
      `<h1>Log in a device</h1>
<p>A program asks to act as you on Postline. Approve only if you started the login and the code matches the one it shows.</p>
${askingParagraph(fields.asking)}${fields.error === undefined ? "" : `<p class="error" role="alert">${escape(fields.error)}</p>`}
<form method="post" action="/device">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escape(fields.email ?? "")}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<label for="user_code">Code shown by the program</label>
<input id="user_code" name="user_code" autocomplete="off" placeholder="XXXX-XXXX" required value="${
        escape(fields.userCode ?? "")
      }">
<div class="actions">
<button class="primary" type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny">Deny</button>
</div>
</form>`
    ),
    headers
  )

export const confirmation = (decision: "approved" | "denied", clientId: string) =>
  respond(
    200,
    document(
      decision === "approved" ? "Device approved" : "Device denied",
      decision === "approved"
        ? `<h1>Device approved</h1>
<p>${escape(clientId)} is now logged in as you. You can close this page and return to it.</p>`
        : `<h1>Device denied</h1>
<p>${escape(clientId)} was not let in. You can close this page.</p>`
    )
  )

export const failurePage = respond(
  500,
  document("Something went wrong", "<h1>Something went wrong</h1>\n<p>Please try again in a moment.</p>")
)
