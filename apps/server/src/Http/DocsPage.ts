import { HttpApi, HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import { Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { faviconPath } from "./Favicon.js"

/**
 * Scalar's settings (its 1.39 configuration; @effect/platform types only some of them) that keep every request
 * of the page on this server.
 */
const scalar = {
  favicon: faviconPath,
  // Its fonts come from fonts.scalar.com: the system's serve instead.
  withDefaultFonts: false,
  // Its API client reports every request it sends to api.scalar.com.
  telemetry: false,
  // The toolbar shown on localhost offers to upload the document to Scalar's registry.
  showToolbar: "never",
  // The document's one scheme is chosen at the start, so that a token typed once goes with every "Test Request".
  authentication: { preferredSecurityScheme: "bearerAuth" }
}

const inlineScripts = /<script>([\s\S]*?)<\/script>/g

/**
 * Nothing but this server may be reached from the page: its own inline scripts run (allowed by their hashes),
 * the styles Scalar writes into it apply, and its API client sends requests here only.
 */
const contentSecurityPolicy = (html: string) => {
  const hashes = Array.from(html.matchAll(inlineScripts), ([, script]) =>
    `'sha256-${createHash("sha256").update(script).digest("base64")}'`)
  return [
    "default-src 'none'",
    // WebAssembly: Scalar hashes the document with it.
    `script-src 'wasm-unsafe-eval' ${hashes.join(" ")}`,
    "style-src 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'"
  ].join("; ")
}

const secured = (page: HttpServerResponse.HttpServerResponse) =>
  page.body._tag === "Uint8Array"
    ? HttpServerResponse.setHeaders(page, {
      "content-security-policy": contentSecurityPolicy(new TextDecoder().decode(page.body.body)),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer"
    })
    : page

/**
 * Scalar's page for `api`, made once and kept: Http/Docs.ts loads this module when `/docs` is first asked for.
 * The page is the same for every request.
 */
export const makeDocsPage = (api: Context.Tag.Service<HttpApi.Api>) =>
  Layer.build(
    HttpApiScalar.layer({ path: "/docs", scalar }).pipe(
      Layer.provideMerge(HttpApiBuilder.Router.Live),
      Layer.provide(Layer.succeed(HttpApi.Api, api))
    )
  ).pipe(
    Effect.flatMap((context) => Context.get(context, HttpApiBuilder.Router).router),
    Effect.flatMap((router) => Effect.cached(Effect.map(router, secured))),
    Effect.scoped
  )
