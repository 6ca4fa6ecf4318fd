import { createClient } from "@hey-api/openapi-ts"
import { fileURLToPath } from "node:url"
import { openApiPath } from "./openapi.js"

/**
 * The third-party client of the parity tests: what @hey-api/openapi-ts makes of openapi.json, with
 * its fetch client and zod validators of every request and answer. Committed, so that `pnpm check`
 * type-checks it; a test fails when it is stale.
 */
export const clientOptions = {
  input: openApiPath,
  plugins: ["@hey-api/client-fetch", "zod", { name: "@hey-api/sdk", validator: true }]
} as const

export const clientFolder = fileURLToPath(new URL("../test/generated/openapi-client", import.meta.url))

export const generateClient = (output: string) => createClient({ ...clientOptions, output })

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await generateClient(clientFolder)
}
