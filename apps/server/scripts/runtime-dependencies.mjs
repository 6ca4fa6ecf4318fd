// `runtime-dependencies.mjs <outdir>`: a package.json and a pnpm-lock.yaml in <outdir> that install only the
// packages the bundle loads at run time (build.mjs's externalPackages), at the versions of the workspace's
// lockfile, with everything they need and nothing else. The Dockerfile installs them with
// `pnpm install --frozen-lockfile --prod`: the server's other dependencies are inside the bundle already.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parse, stringify } from "yaml"
import { externalPackages } from "./build.mjs"

const serverDir = join(dirname(fileURLToPath(import.meta.url)), "..")

/** `name@version`, a key of the lockfile's snapshots (the version may carry its peers, `0.35.5(@types/node@24)`). */
const snapshotKey = (name, version) => `${name}@${version}`

/** A snapshot's key without its peers: the key of its package's entry. */
const packageKey = (key) => key.replace(/\(.*$/, "")

export const runtimeLockfile = (lockfile) => {
  const server = lockfile.importers["apps/server"].dependencies
  const dependencies = Object.fromEntries(externalPackages.map((name) => {
    const locked = server[name]
    if (locked === undefined) throw new Error(`${name} is external to the bundle but not a dependency of apps/server`)
    return [name, locked]
  }))
  // Every snapshot the externals reach, through their dependencies and optional ones (sharp's platform binaries).
  const snapshots = {}
  const pending = Object.entries(dependencies).map(([name, { version }]) => snapshotKey(name, version))
  while (pending.length > 0) {
    const key = pending.pop()
    if (key in snapshots) continue
    const snapshot = lockfile.snapshots[key]
    if (snapshot === undefined) throw new Error(`The lockfile has no snapshot ${key}`)
    snapshots[key] = snapshot
    for (const [name, version] of Object.entries({ ...snapshot.dependencies, ...snapshot.optionalDependencies })) {
      pending.push(snapshotKey(name, version))
    }
  }
  const packages = Object.fromEntries(Object.keys(snapshots).map((key) => [packageKey(key), lockfile.packages[packageKey(key)]]))
  return {
    lockfileVersion: lockfile.lockfileVersion,
    settings: lockfile.settings,
    importers: { ".": { dependencies } },
    packages,
    snapshots
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outdir = process.argv[2]
  if (outdir === undefined) throw new Error("Usage: runtime-dependencies.mjs <outdir>")
  const lockfile = runtimeLockfile(parse(readFileSync(join(serverDir, "../../pnpm-lock.yaml"), "utf8")))
  const manifest = {
    name: "@postline/server-runtime",
    private: true,
    dependencies: Object.fromEntries(Object.entries(lockfile.importers["."].dependencies).map(([name, { specifier }]) => [name, specifier]))
  }
  mkdirSync(outdir, { recursive: true })
  writeFileSync(join(outdir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`)
  writeFileSync(join(outdir, "pnpm-lock.yaml"), stringify(lockfile))
}
