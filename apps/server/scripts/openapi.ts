import { OpenApi } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** The OpenAPI document as committed: derived from the API definition alone. */
export const renderOpenApi = () => JSON.stringify(OpenApi.fromApi(PostlineApi), null, 2) + "\n"

export const openApiPath = fileURLToPath(new URL("../../../openapi.json", import.meta.url))

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(openApiPath, renderOpenApi())
  console.log(`Wrote ${openApiPath}`)
}
