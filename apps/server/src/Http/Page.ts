import { HttpServerResponse } from "@effect/platform"
import { createHash } from "node:crypto"
import { faviconPath } from "./Favicon.js"

/**
 * The frame of the server's few HTML pages (the device login, a connect's end): one inline stylesheet, no script,
 * and a policy that lets nothing else load, run or frame them.
 */

const entities: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Every piece of text that came from a request or the database goes through here. */
export const escape = (text: string) => text.replace(/[&<>"']/g, (character) => entities[character])

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

export const document = (title: string, body: string) =>
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

export const respond = (status: number, html: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(html, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: { ...securityHeaders, ...headers }
  })

