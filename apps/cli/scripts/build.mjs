// Bundles the CLI into one executable file, <outdir>/postline.js (default: dist), with every dependency inside:
// `npm install -g ./apps/cli` after a build installs a command that needs nothing else.
import { chmodSync, mkdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const cliDir = join(dirname(fileURLToPath(import.meta.url)), "..")

/** The version `postline --version` prints, from package.json. */
const version = JSON.parse(readFileSync(join(cliDir, "package.json"), "utf8")).version

export const bundleCli = async (outdir = join(cliDir, "dist")) => {
  const { build } = await import("esbuild")
  mkdirSync(outdir, { recursive: true })
  const outfile = join(outdir, "postline.js")
  await build({
    absWorkingDir: cliDir,
    entryPoints: ["src/main.ts"],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    logLevel: "warning",
    define: { POSTLINE_CLI_VERSION: JSON.stringify(version) },
    // Run as a command; some dependencies still call require(): the bundle gives them one (named apart from their own imports).
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);"
    }
  })
  chmodSync(outfile, 0o755)
  return outdir
}

/** `build.mjs [outdir]` */
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await bundleCli(process.argv.slice(2).find((arg) => !arg.startsWith("--")))
}
