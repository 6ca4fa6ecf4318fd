// Bundles the server and the admin command into one folder (default: dist).
// Used by `pnpm build` and by the tests that run the server as a process.
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { basename, dirname, join, relative } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const serverDir = join(dirname(fileURLToPath(import.meta.url)), "..")

/**
 * The packages the bundle loads from node_modules at run time, all else being inside it: native code (sharp's
 * libvips), WebAssembly (heic-decode's libheif, the embedded database) and pg. The image installs these alone
 * (scripts/runtime-dependencies.mjs).
 */
export const externalPackages = ["pg", "@electric-sql/pglite", "sharp", "heic-decode"]

/** The version the server logs when it starts (src/StartupLog.ts), from package.json. */
const version = JSON.parse(readFileSync(join(serverDir, "package.json"), "utf8")).version

/**
 * V8 keeps a script's source in memory as long as the script runs, two bytes a character if one character
 * needs it. A few regular expressions of dependencies hold non-ASCII characters that esbuild leaves as they
 * are: written as \u escapes, which mean the same there, they halve the bundle's resident source.
 */
const asciiOnly = (file) => {
  const source = readFileSync(file, "utf8")
  const escaped = source.replace(/[^\x00-\x7f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)
  if (escaped !== source) writeFileSync(file, escaped)
}

/**
 * The embedded database's template (src/Database/TemplateMain.ts): a new database with every migration run,
 * beside the bundle, where Database/Sql.ts looks for it. Made once per PGlite version and version of
 * src/Database, and kept in node_modules/.cache; a template older than the migrations is still brought up to
 * date when the server starts.
 */
const pgdataTemplate = async (outdir) => {
  const { version } = JSON.parse(readFileSync(join(serverDir, "node_modules/@electric-sql/pglite/package.json"), "utf8"))
  const database = createHash("sha256")
  for (const file of filesUnder(join(serverDir, "src/Database"))) {
    database.update(relative(serverDir, file)).update("\0").update(readFileSync(file)).update("\0")
  }
  const cacheDir = join(serverDir, "node_modules/.cache/postline")
  const cached = join(cacheDir, `pgdata-template-pglite-${version}-${database.digest("hex").slice(0, 16)}.tar.gz`)
  if (!existsSync(cached)) {
    // Bundled where its external packages (PGlite) resolve, and run in a process of its own.
    mkdirSync(cacheDir, { recursive: true })
    const maker = join(cacheDir, `template-maker-${process.pid}`)
    try {
      await bundle("src/Database/TemplateMain.ts", maker, "pgdata-template")
      // Its progress goes to standard error: `pnpm admin` builds first, and its standard output is its answer alone.
      execFileSync(process.execPath, [join(maker, "pgdata-template.js"), cached], {
        cwd: serverDir,
        stdio: ["ignore", process.stderr, process.stderr]
      })
    } finally {
      rmSync(maker, { recursive: true, force: true })
    }
  }
  copyFileSync(cached, join(outdir, "pgdata-template.tar.gz"))
}

/** Removes the `.js` files of an earlier build, whose chunks' names differ from this one's. */
const clean = (outdir) => {
  if (existsSync(outdir)) for (const file of readdirSync(outdir)) if (file.endsWith(".js")) rmSync(join(outdir, file))
}

/**
 * `<entry>.js` in `outdir`. What it imports with `import()` (the docs page, the Bluesky client, Redis and
 * OpenTelemetry when configured) goes to chunks of its own, so that a start does not parse it. The chunks
 * sit beside the entry: a module finds the files the build puts there (the embedded template) from its own
 * `import.meta.url`. Each entry is built on its own: chunks shared between entries would hold what either
 * one reaches, and the admin command would load the server's. Answers its lazily loaded chunks (lazyChunks).
 */
/**
 * twitter-text calls `require("punycode")`, meaning the npm package it depends on, where Node gives its own, which
 * is deprecated and says so on standard error at every start of the bundle: the bundle takes the package.
 */
const punycodePackage = {
  name: "punycode-package",
  setup(build) {
    const fromTwitterText = createRequire(createRequire(join(serverDir, "package.json")).resolve("twitter-text"))
    build.onResolve({ filter: /^punycode$/ }, () => ({ path: fromTwitterText.resolve("punycode/") }))
  }
}

const bundle = async (entry, outdir, out = basename(entry).replace(/\.ts$/, ""), { served = true } = {}) => {
  // Loaded here: `pnpm start` runs this script to learn that the build is current, and needs no bundler then.
  const { build } = await import("esbuild")
  const { metafile } = await build({
    absWorkingDir: serverDir,
    entryPoints: [{ in: entry, out }],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    external: externalPackages,
    outdir,
    splitting: true,
    metafile: true,
    logLevel: "warning",
    define: { POSTLINE_VERSION: JSON.stringify(version) },
    plugins: [punycodePackage],
    // Some dependencies still call require(): the bundle gives them one (named apart from their own imports).
    banner: { js: "import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);" }
  })
  for (const output of Object.keys(metafile.outputs)) if (output.endsWith(".js")) asciiOnly(join(serverDir, output))
  if (served) assertInputsDeclared(metafile)
  return lazyChunks(metafile)
}

/**
 * The chunk each `import()` in the server's own code became, with the specifier as written there: a test
 * loads every one and checks it has the exports its caller declares (src/LazyModule.ts). A CommonJS module
 * in a chunk exports only `default`, where Node gives its named exports too. An external module (sharp) has no chunk.
 */
const lazyChunks = (metafile) => {
  const chunkOf = new Map(
    Object.entries(metafile.outputs).flatMap(([output, { entryPoint }]) => entryPoint ? [[entryPoint, basename(output)]] : [])
  )
  return Object.entries(metafile.inputs).flatMap(([importer, { imports }]) =>
    importer.startsWith("src/")
      ? imports.filter((imported) => imported.kind === "dynamic-import")
        .map((imported) => ({ importer, specifier: imported.original ?? imported.path, chunk: chunkOf.get(imported.path) }))
      : []
  )
}

/**
 * `<name>.js`, which turns on Node's compile cache and then loads the bundle `<name>-bundle.js`: the bundle's
 * compiled code is kept on disk (in the system's temporary folder) from the first start on, so that later
 * starts do not parse and compile its megabytes again. It must run first: the cache serves what loads after.
 */
const entryWithCompileCache = async (entry, outdir) => {
  const name = basename(entry).replace(/\.ts$/, "")
  const lazy = await bundle(entry, outdir, `${name}-bundle`)
  writeFileSync(
    join(outdir, `${name}.js`),
    [
      `import { enableCompileCache, flushCompileCache } from "node:module"`,
      `enableCompileCache()`,
      `await import("./${name}-bundle.js")`,
      `flushCompileCache()`,
      ``
    ].join("\n")
  )
  return lazy
}

export const bundleServer = async (outdir = join(serverDir, "dist"), { keepEarlierChunks = false } = {}) => {
  if (!keepEarlierChunks) clean(outdir)
  const lazy = [...await entryWithCompileCache("src/main.ts", outdir), ...await entryWithCompileCache("src/admin.ts", outdir)]
  writeFileSync(join(outdir, "lazy-chunks.json"), `${JSON.stringify(lazy, null, 2)}\n`)
  await pgdataTemplate(outdir)
  return outdir
}

/** The benchmark's minimal server (bench/Floor.ts, issue 14), as `Floor.js`: bench/attribution.mjs builds it. */
export const bundleFloor = async (outdir = join(serverDir, "dist-bench")) => {
  clean(outdir)
  await bundle("bench/Floor.ts", outdir, undefined, { served: false })
  return outdir
}

/** What a build is made from: a change to any of these files makes the last build stale. */
const buildInputs = [
  "apps/server/src",
  "packages/domain/src",
  "packages/mcp/src",
  "apps/server/scripts/build.mjs",
  "apps/server/package.json",
  "apps/server/tsconfig.json",
  "packages/domain/package.json",
  "packages/domain/tsconfig.json",
  "packages/mcp/package.json",
  "packages/mcp/tsconfig.json",
  "tsconfig.base.json",
  // What is installed, rather than what the lockfile asks for: a `pnpm start` after a `git pull` and before
  // `pnpm install` bundles the packages that are there.
  "node_modules/.pnpm/lock.yaml"
]

/**
 * Every source file of ours that the bundle holds must be under a build input, or `pnpm start` would keep
 * serving an earlier build after that file changed (the MCP package was bundled without being one). The
 * benchmark's floor is not served by `pnpm start`: it is not checked.
 */
const assertInputsDeclared = (metafile) => {
  const root = join(serverDir, "../..")
  const undeclared = Object.keys(metafile.inputs)
    .map((input) => relative(root, join(serverDir, input)))
    .filter((file) => !file.split("/").includes("node_modules") && !buildInputs.some((input) => file === input || file.startsWith(`${input}/`)))
  if (undeclared.length > 0) throw new Error(`build.mjs: bundled files outside buildInputs: ${undeclared.join(", ")}`)
}

const filesUnder = (path) => {
  if (!existsSync(path)) return []
  return statSync(path).isDirectory() ? readdirSync(path).sort().flatMap((name) => filesUnder(join(path, name))) : [path]
}

/** A SHA-256 of the inputs' paths and contents: a few hundred small files, read in milliseconds. */
const inputsFingerprint = () => {
  const root = join(serverDir, "../..")
  const hash = createHash("sha256")
  for (const file of buildInputs.flatMap((input) => filesUnder(join(root, input)))) {
    hash.update(relative(root, file)).update("\0").update(readFileSync(file)).update("\0")
  }
  return hash.digest("hex")
}

/**
 * `build.mjs [outdir] [--if-stale]`. With `--if-stale` (`pnpm install` and `pnpm start`), nothing is done when
 * the folder holds a build of the current inputs, so that a start does not wait for a build it does not need.
 */
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const ifStale = process.argv.includes("--if-stale")
  const outdir = process.argv.slice(2).find((arg) => !arg.startsWith("--")) ?? join(serverDir, "dist")
  const stamp = join(outdir, "build-inputs.sha256")
  const fingerprint = inputsFingerprint()
  if (!ifStale || !existsSync(stamp) || readFileSync(stamp, "utf8") !== fingerprint) {
    if (existsSync(stamp)) rmSync(stamp)
    // A server still running from this folder loads some of its chunks later: a rebuild it did not ask for
    // (`pnpm admin` after a change) leaves them in place. Their names are their contents' hashes.
    await bundleServer(outdir, { keepEarlierChunks: ifStale })
    writeFileSync(stamp, fingerprint)
  }
}
