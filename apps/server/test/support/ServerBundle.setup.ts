import { mkdtempSync, rmSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import type { TestProject } from "vitest/node"
// @ts-expect-error: a plain ESM build script, without types
import { bundleServer } from "../../scripts/build.mjs"

// Vitest's own state does not exist where a global setup runs: nothing here imports the test helpers.
const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

declare module "vitest" {
  export interface ProvidedContext {
    /** The folder of this run's server bundle (main.js, admin.js), built as `pnpm build` builds it. */
    readonly serverBundle: string
  }
}

/**
 * The tests that start the server as a process run it as `pnpm start` does: bundled, under the bounded heap.
 * Each project builds its own copy beside the sources, where the bundle's external packages resolve.
 */
export default async function setup(project: TestProject) {
  const outdir = mkdtempSync(Path.join(serverDir, "dist-test-"))
  await bundleServer(outdir)
  project.provide("serverBundle", outdir)
  return () => rmSync(outdir, { recursive: true, force: true })
}
