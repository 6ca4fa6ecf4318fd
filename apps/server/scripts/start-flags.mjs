// The Node.js flags `pnpm start` runs the server with, read from the root package.json: the benchmark, the
// fuzzer and the tests that run the server as a process use them, so that none of them can drift apart.
import { readFileSync } from "node:fs"

/** @returns {Array<string>} */
export const startNodeFlags = () => {
  const { start } = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")).scripts
  const flags = /\bnode ((?:--\S+ )*)apps\/server\/dist\/main\.js/.exec(start)?.[1].trim().split(" ").filter(Boolean)
  if (flags === undefined) throw new Error(`package.json's start script does not run apps/server/dist/main.js: ${start}`)
  return flags
}
