import { createConnection } from "node:net"
import { configDefaults, defineWorkspace } from "vitest/config"

const postgresUrl = new URL(process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres")

const reachable = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host, port, timeout: 1000 })
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => (socket.destroy(), resolve(false)))
  })

const withPostgres = await reachable(postgresUrl.hostname, Number(postgresUrl.port || 5432))
if (!withPostgres) {
  const message = `PostgreSQL is not reachable at ${postgresUrl.host}`
  // CI always runs both halves; elsewhere the embedded half still runs.
  if (process.env.CI) throw new Error(`${message}: CI runs the suite on both databases`)
  console.warn(`\n${message}: SKIPPING the PostgreSQL half of the suite; only the embedded database is tested.\n`)
}

/**
 * Tests that open no database of Postline's (the providers against their real or fake servers, the OpenAPI
 * document, pure functions) or test a client of the API (whose rules are tested on both databases): the same on
 * either, so they run once, with the embedded half.
 */
const databaseIndependent = [
  "apps/server/test/providers/**",
  "apps/server/test/clients/**",
  "apps/server/test/architecture.test.ts",
  "apps/server/test/openapi.test.ts",
  "apps/server/test/openapi-parity.test.ts",
  "apps/server/test/lazy-module.test.ts",
  "apps/server/test/text-scaling.test.ts",
  "apps/server/test/wall-clock.test.ts",
  "apps/server/test/deployment-kit.test.ts",
  "apps/server/test/dockerfile-replay.test.ts",
  "apps/server/test/workspace-install.test.ts",
  "apps/server/test/credit-costs.test.ts",
  "apps/server/test/docs-page-browser.test.ts"
]

/**
 * Tests whose figures are the server process's own memory, the same with either database (the embedded
 * database's memory is WebAssembly memory, outside the V8 heap spaces they measure): once, on PostgreSQL when it
 * is there, since they are long.
 */
const processMemoryOnly = ["apps/server/test/scheduling-burst.test.ts"]

/**
 * Tests of one database's own behaviour (the embedded data folder, or a PostgreSQL server that goes away): left out
 * of the other project, where they would only start a worker to skip themselves. Each also skips itself on the other
 * database, for a run of one file with TEST_DATABASE set.
 */
const embeddedOnly = [
  "apps/server/test/readme.test.ts",
  "apps/server/test/data-folder-creation.test.ts",
  "apps/server/test/data-dir-lock.test.ts",
  "apps/server/test/embedded-durability.test.ts"
]
const postgresOnly = ["apps/server/test/database-outages.test.ts"]

/**
 * Where the networks that are reached at a fixed address would be, for every test server that sets no fake of its
 * own: names that never resolve, so that no test can reach the real Telegram or Discord.
 */
const unreachableNetworks = {
  TELEGRAM_API_URL: "https://api.telegram.invalid",
  DISCORD_API_URL: "https://discord.invalid/api"
}

const serverTests = {
  include: ["apps/server/test/**/*.test.ts"],
  globalSetup: ["apps/server/test/support/ServerBundle.setup.ts", "apps/server/test/support/DatabaseTemplate.setup.ts"],
  setupFiles: ["apps/server/test/support/FileCost.setup.ts"],
  // A test's or a hook's time-out only ends what hangs: ten minutes, whatever the test, since a busy machine (other
  // work beside the suite) makes a test of a few seconds take minutes. How long things take is `pnpm bench`'s.
  testTimeout: 600_000,
  hookTimeout: 600_000
}

export default defineWorkspace([
  {
    test: {
      ...serverTests,
      name: "embedded",
      exclude: [...configDefaults.exclude, ...(withPostgres ? [...processMemoryOnly, ...postgresOnly] : [])],
      env: { ...unreachableNetworks, TEST_DATABASE: "embedded" }
    }
  },
  ...(withPostgres
    ? [{ test: { ...serverTests, name: "postgres", exclude: [...configDefaults.exclude, ...databaseIndependent, ...embeddedOnly], env: { ...unreachableNetworks, TEST_DATABASE: "postgres" } } }]
    : [])
])
