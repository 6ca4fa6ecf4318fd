import { HttpServerResponse } from "@effect/platform"

/** The pages' icon: a browser asks every page for one, and would log the 404 of `/favicon.ico` as an error. */
export const faviconPath = "/favicon.svg"

const icon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
  `<rect width="32" height="32" rx="7" fill="#1f4fd1"/>` +
  `<path d="M11 25V8h6.5a5 5 0 0 1 0 10H11" fill="none" stroke="#fff" stroke-width="3.5" stroke-linejoin="round"/>` +
  `</svg>`

export const favicon = HttpServerResponse.text(icon, {
  contentType: "image/svg+xml",
  headers: { "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" }
})
