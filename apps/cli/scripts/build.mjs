// Bundles the CLI into <outdir> (default: dist): the command postline.js and the bundle it loads, with every
// dependency inside, so that `npm install -g ./apps/cli` after a build installs a command that needs nothing else.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const cliDir = join(dirname(fileURLToPath(import.meta.url)), "..")

/** The version `postline --version` prints, from package.json. */
const version = JSON.parse(readFileSync(join(cliDir, "package.json"), "utf8")).version

/**
 * The command: it turns on Node's compile cache, then loads the bundle, whose compiled code is then kept on disk
 * (in the system's temporary folder) so that later runs do not compile its megabytes again.
 */
const command = [
  "#!/usr/bin/env node",
  `import { enableCompileCache, flushCompileCache } from "node:module"`,
  "enableCompileCache()",
  `await import("./postline-bundle.js")`,
  "flushCompileCache()",
  ""
].join("\n")

export const bundleCli = async (outdir = join(cliDir, "dist")) => {
  const { build } = await import("esbuild")
  mkdirSync(outdir, { recursive: true })
  await build({
    absWorkingDir: cliDir,
    entryPoints: ["src/main.ts"],
    outfile: join(outdir, "postline-bundle.js"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    logLevel: "warning",
    define: { POSTLINE_CLI_VERSION: JSON.stringify(version) },
    // Some dependencies still call require(): the bundle gives them one (named apart from their own imports).
    banner: { js: "import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);" }
  })
  const outfile = join(outdir, "postline.js")
  writeFileSync(outfile, command)
  chmodSync(outfile, 0o755)
  return outdir
}

/** `build.mjs [outdir]` */
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await bundleCli(process.argv.slice(2).find((arg) => !arg.startsWith("--")))
}
