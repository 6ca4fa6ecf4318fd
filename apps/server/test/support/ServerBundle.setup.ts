import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import type { TestProject } from "vitest/node"
// @ts-expect-error: a plain ESM build script, without types
import { bundleCli } from "../../../cli/scripts/build.mjs"
// @ts-expect-error: a plain ESM build script, without types
import { bundleServer } from "../../scripts/build.mjs"

// Vitest's own state does not exist where a global setup runs: nothing here imports the test helpers.
const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

declare module "vitest" {
  export interface ProvidedContext {
    /** The folder of this run's server bundle (main.js, admin.js), built as `pnpm build` builds it. */
    readonly serverBundle: string
    /** The folder of this run's CLI bundle (postline.js), built as `pnpm --filter @postline/cli build` builds it. */
    readonly cliBundle: string
  }
}

/**
 * The tests that start the server as a process run it as `pnpm start` does: bundled, under the bounded heap.
 * Each project builds its own copy beside the sources, where the bundle's external packages resolve. The CLI's
 * bundle holds all it needs, so it goes to a temporary folder, as an installed command would be anywhere.
 */
export default async function setup(project: TestProject) {
  const outdir = mkdtempSync(Path.join(serverDir, "dist-test-"))
  const cliOutdir = mkdtempSync(Path.join(tmpdir(), "postline-cli-test-"))
  await Promise.all([bundleServer(outdir), bundleCli(cliOutdir)])
  project.provide("serverBundle", outdir)
  project.provide("cliBundle", cliOutdir)
  return () => {
    rmSync(outdir, { recursive: true, force: true })
    rmSync(cliOutdir, { recursive: true, force: true })
  }
}
