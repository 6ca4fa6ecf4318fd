// The peers of the benchmark (bench/peers, a workspace package): other stacks serving S1, S3 and S4 with the
// baseline's statements and bytes, measured beside ours and the baseline. See bench/README.md.
import { closeSync, existsSync, openSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { join } from "node:path"
import { run } from "./processes.mjs"

/** The scenarios the peers serve. */
export const peerScenarios = ["S1", "S3", "S4"]

/** Each peer: `script` is run with the baseline's Node.js flags; `build` (if any) makes it from the project's files. */
export const peerDefs = (root) => [
  { id: "fastify", name: "Fastify + pg", script: join(root, "bench/peers/fastify.mjs") },
  { id: "nest", name: "NestJS (Express) + Prisma 7", script: join(root, "bench/peers/nest/dist/main.js"), build: buildNest }
]

const peersDir = (root) => join(root, "bench/peers")

/** The installed versions of the peers' packages, for the results. */
export const peerVersions = (root) => {
  const versions = {}
  const modules = join(peersDir(root), "node_modules")
  const versionIn = (dir) => existsSync(join(dir, "package.json")) ? JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version : undefined
  for (const name of ["fastify", "pg", "@nestjs/core", "@nestjs/platform-express", "prisma", "@prisma/client", "@prisma/adapter-pg"]) {
    const version = versionIn(join(modules, name))
    if (version) versions[name] = version
  }
  // Express, as @nestjs/platform-express resolves it (beside it in pnpm's store).
  const adapter = join(modules, "@nestjs/platform-express")
  if (existsSync(adapter)) {
    const version = versionIn(join(realpathSync(adapter), "../../express"))
    if (version) versions.express = version
  }
  return versions
}

/** Runs `node script args` in `cwd`, its output to `logFile`; on failure the error carries the log's end. */
const step = async (name, script, args, { cwd, env, logFile }) => {
  const fd = openSync(logFile, "a")
  try {
    await run(process.execPath, [script, ...args], { cwd, env: { ...process.env, ...env }, stdio: ["ignore", fd, fd] })
  } catch (error) {
    const tail = readFileSync(logFile, "utf8").split("\n").slice(-20).join("\n")
    throw new Error(`${name} failed: ${error.message}; log ${logFile}:\n${tail}`)
  } finally {
    closeSync(fd)
  }
}

/**
 * The NestJS peer: `prisma generate` (the `prisma-client` generator, into nest/src/generated, ignored by git),
 * then `tsc -p bench/peers/nest` (into nest/dist, ignored). Offline: generate needs Prisma's WebAssembly
 * schema tools only, but the CLI would first fetch its schema-engine binary (for migrations, which the
 * benchmark never runs) unless PRISMA_SCHEMA_ENGINE_BINARY names one; it names a stub that fails if run.
 */
async function buildNest(root, logFile) {
  const nest = join(peersDir(root), "nest")
  const modules = join(peersDir(root), "node_modules")
  for (const name of ["prisma", "typescript", "@nestjs/core", "@prisma/client"]) {
    if (!existsSync(join(modules, name, "package.json"))) {
      throw new Error(`bench/peers/node_modules/${name} is missing: run \`pnpm install\` (bench/peers is a workspace package)`)
    }
  }
  rmSync(join(nest, "dist"), { recursive: true, force: true })
  rmSync(join(nest, "src/generated"), { recursive: true, force: true })
  await step("prisma generate", join(modules, "prisma/build/index.js"), ["generate", "--schema", "prisma/schema.prisma"], {
    cwd: nest,
    env: {
      PRISMA_SCHEMA_ENGINE_BINARY: join(nest, "prisma/no-schema-engine"),
      CHECKPOINT_DISABLE: "1",
      PRISMA_HIDE_UPDATE_MESSAGE: "1"
    },
    logFile
  })
  await step("tsc -p bench/peers/nest", join(modules, "typescript/bin/tsc"), ["-p", nest], { cwd: nest, env: {}, logFile })
}

/** Builds every peer that needs it; returns the time taken in ms. */
export const buildPeers = async (root, logFile) => {
  const t = performance.now()
  for (const peer of peerDefs(root)) if (peer.build) await peer.build(root, logFile)
  for (const peer of peerDefs(root)) if (!existsSync(peer.script)) throw new Error(`${peer.name}: ${peer.script} is missing after the build`)
  return performance.now() - t
}
