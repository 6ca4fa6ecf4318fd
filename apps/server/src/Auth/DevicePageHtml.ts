import { HttpServerResponse } from "@effect/platform"
import { createHash } from "node:crypto"
import { faviconPath } from "../Http/Favicon.js"
import type { Asking } from "./DeviceAuthorizationsRepo.js"

const entities: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Every piece of text that came from a request or the database goes through here. */
const escape = (text: string) => text.replace(/[&<>"']/g, (character) => entities[character])

const styles = "body{font:16px/1.5 system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}" +
  "label{display:block;margin-top:1rem}input{display:block;box-sizing:border-box;width:100%;padding:.5rem;font:inherit}" +
  "#user_code{text-transform:uppercase;letter-spacing:.15em}.actions{display:flex;gap:.75rem;margin-top:1.5rem}" +
  "button{flex:1;padding:.6rem;font:inherit;cursor:pointer;border:1px solid #767676;border-radius:4px;background:#f4f4f4}" +
  "button.primary{background:#1f4fd1;border-color:#1f4fd1;color:#fff}.error{color:#a40000;font-weight:600}"

// The one inline stylesheet is allowed by its hash and the icon by its place; nothing else may load, run or frame
// the page.
const contentSecurityPolicy = [
  "default-src 'none'",
  "img-src 'self'",
  `style-src 'sha256-${createHash("sha256").update(styles).digest("base64")}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'"
].join("; ")

const securityHeaders = {
  "content-security-policy": contentSecurityPolicy,
  "x-frame-options": "DENY",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
}

const document = (title: string, body: string) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Postline</title>
<link rel="icon" href="${faviconPath}">
<style>${styles}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`

const respond = (status: number, html: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(html, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: { ...securityHeaders, ...headers }
  })

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
