// The operator's deployment kit (Dockerfile, compose.yaml, deploy/postline.service) against what the server
// reads and what `pnpm start` runs: each file is parsed, nothing is built or started (there may be no Docker
// and no systemd). It touches no database, so it runs in the embedded project only.
import { Ajv } from "ajv"
import { validate as lintDockerfile } from "dockerfile-utils"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { parse } from "yaml"
import { startNodeFlags } from "../scripts/start-flags.mjs"

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8")

/** The README's Configuration table: each variable's name and default, as written (`3000`, or "(unset)"). */
const configuration = (() => {
  const section = read("README.md").split(/^## Configuration$/m)[1]!.split(/^## /m)[0]!
  const rows = new Map<string, string>()
  for (const [, names, defaultValue] of section.matchAll(/^\| (`[A-Z0-9_]+`(?:, `[A-Z0-9_]+`)*) \| ([^|]*) \|/gm)) {
    for (const [, name] of names!.matchAll(/`([A-Z0-9_]+)`/g)) rows.set(name!, defaultValue!.trim().replace(/^`(.*)`$/, "$1"))
  }
  return rows
})()
const defaultSeconds = (name: string) => Number(configuration.get(name))

/** `30s`, `1min 30s`, `30` (seconds): systemd's and compose's durations, as far as the kit uses them. */
const seconds = (duration: string) =>
  [...duration.matchAll(/(\d+)\s*(min|m|s)?/g)].reduce((sum, [, n, unit]) => sum + Number(n) * (unit?.startsWith("m") ? 60 : 1), 0)

interface ComposeService {
  readonly build?: unknown
  readonly image?: string
  readonly environment?: Record<string, string | number | boolean | null> | Array<string>
  readonly volumes?: Array<string>
  readonly depends_on?: Record<string, { readonly condition?: string }> | Array<string>
  readonly healthcheck?: { readonly test?: unknown }
  readonly stop_grace_period?: string
}

const environmentOf = (service: ComposeService): Record<string, string> =>
  Array.isArray(service.environment)
    ? Object.fromEntries(service.environment.map((entry) => [entry.split("=")[0]!, entry.slice(entry.indexOf("=") + 1)]))
    : Object.fromEntries(Object.entries(service.environment ?? {}).map(([name, value]) => [name, String(value)]))

/** A Dockerfile's instructions: continuation lines joined, comments dropped, ARG defaults substituted. */
const dockerfileInstructions = (text: string) => {
  const args = new Map<string, string>()
  return text.replace(/\\\n/g, " ").split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const keyword = line.split(/\s/, 1)[0]!.toUpperCase()
      const rest = line.slice(keyword.length).trim()
      const arg = keyword === "ARG" ? /^(\w+)=(\S+)$/.exec(rest) : null
      if (arg) args.set(arg[1]!, arg[2]!)
      return { keyword, rest: keyword === "FROM" ? rest.replace(/\$\{(\w+)\}/g, (_, name: string) => args.get(name) ?? "") : rest }
    })
}

/** A systemd unit's `Key=value` lines, every value of a key kept in order. */
const unitSettings = (text: string) => {
  const settings = new Map<string, Array<string>>()
  for (const [, key, value] of text.matchAll(/^(\w+)=(.*)$/gm)) settings.set(key!, [...settings.get(key!) ?? [], value!.trim()])
  return settings
}

describe.skipIf(process.env.TEST_DATABASE !== "embedded")("the deployment kit", () => {
  describe("compose.yaml", () => {
    const compose = parse(read("compose.yaml"), { merge: true }) as { services: Record<string, ComposeService> }
    // The server's services are the ones built from this repository.
    const servers = Object.entries(compose.services).filter(([, service]) => service.build !== undefined)

    it("is valid against the Compose specification's schema", () => {
      // The schema dclint ships (the compose-spec project's compose-spec.json).
      const schemaPath = Path.join(Path.dirname(createRequire(import.meta.url).resolve("dclint/package.json")), "schemas/compose.schema.json")
      const { $schema: _, ...schema } = JSON.parse(readFileSync(schemaPath, "utf8"))
      const validate = new Ajv({ allErrors: true, strict: false }).compile(schema)
      expect(validate(compose) ? [] : validate.errors).toEqual([])
    })

    it("runs two server processes, on variables the server reads (the README's Configuration)", () => {
      expect(servers.map(([name]) => name)).toHaveLength(2)
      for (const [name, service] of servers) {
        const unknown = Object.keys(environmentOf(service)).filter((variable) => !configuration.has(variable))
        expect(unknown, `${name}'s environment`).toEqual([])
      }
    })

    it("gives both processes the same database, Redis, credentials key and media folder; the key is never written here", () => {
      const [[, first], [, second]] = servers as [[string, ComposeService], [string, ComposeService]]
      for (const variable of ["DATABASE_URL", "REDIS_URL", "CREDENTIALS_KEY", "MEDIA_DIR"]) {
        expect(environmentOf(first)[variable], variable).toBeDefined()
        expect(environmentOf(second)[variable], variable).toBe(environmentOf(first)[variable])
      }
      expect(environmentOf(first).CREDENTIALS_KEY).toMatch(/^\$\{CREDENTIALS_KEY:\?[^}]*\}$/)
      const mediaDir = environmentOf(first).MEDIA_DIR
      const mediaVolume = (service: ComposeService) => service.volumes?.find((volume) => volume.endsWith(`:${mediaDir}`))
      expect(mediaVolume(first)).toBeDefined()
      expect(mediaVolume(second)).toBe(mediaVolume(first))
    })

    it("starts the servers once PostgreSQL and Redis are healthy, on images pinned to a major version", () => {
      for (const dependency of ["postgres", "redis"]) {
        expect(compose.services[dependency]?.healthcheck?.test, dependency).toBeDefined()
        expect(compose.services[dependency]?.image, dependency).toMatch(new RegExp(`^${dependency}:\\d+(\\.\\d+)*(-[a-z0-9]+)?$`))
        for (const [name, server] of servers) {
          expect((server.depends_on as Record<string, { condition?: string }>)[dependency]?.condition, `${name} on ${dependency}`)
            .toBe("service_healthy")
        }
      }
    })

    it("lets a stopping server finish its requests before Docker kills it", () => {
      for (const [name, server] of servers) {
        expect(seconds(server.stop_grace_period ?? "10s"), name).toBeGreaterThan(defaultSeconds("SHUTDOWN_GRACE_SECONDS"))
      }
    })
  })

  describe("Dockerfile", () => {
    const text = read("Dockerfile")
    const instructions = dockerfileInstructions(text)
    const all = (keyword: string) => instructions.filter((instruction) => instruction.keyword === keyword).map(({ rest }) => rest)
    const runtime = instructions.slice(instructions.findLastIndex(({ keyword }) => keyword === "FROM"))
    const inRuntime = (keyword: string) => runtime.filter((instruction) => instruction.keyword === keyword).map(({ rest }) => rest)

    it("passes a Dockerfile linter (dockerfile-utils)", () => {
      expect(lintDockerfile(text).map((problem) => `line ${problem.range.start.line + 1}: ${problem.message}`)).toEqual([])
    })

    it("builds in stages, and runs on the Node.js major of .nvmrc", () => {
      expect(all("FROM").length).toBeGreaterThanOrEqual(2)
      const image = /^node:(\d+)[.\-\w]*/.exec(inRuntime("FROM")[0]!)
      expect(image?.[1]).toBe(read(".nvmrc").trim().split(".")[0])
    })

    it("runs as a user other than root, and checks /health with Node's fetch", () => {
      const user = inRuntime("USER").at(-1)
      expect(user).toBeDefined()
      expect(user).not.toMatch(/^(root|0)(:|$)/)
      const [healthcheck] = inRuntime("HEALTHCHECK")
      expect(healthcheck).toMatch(/CMD \["node", "-e", ".*fetch\(.*\/health/)
    })

    it("exposes the default PORT, with every ENV a variable the server reads", () => {
      expect(inRuntime("EXPOSE")).toEqual([configuration.get("PORT")])
      const names = inRuntime("ENV").flatMap((rest) => [...rest.matchAll(/(\w+)=/g)].map(([, name]) => name!))
      expect(names.filter((name) => !configuration.has(name))).toEqual([])
    })

    it("starts the bundle with the Node.js flags of `pnpm start`", () => {
      const command = JSON.parse(inRuntime("CMD").at(-1)!) as Array<string>
      expect(command[0]).toBe("node")
      expect(command.at(-1)).toBe("apps/server/dist/main.js")
      expect(command.slice(1, -1)).toEqual(startNodeFlags())
    })
  })

  describe("deploy/postline.service", () => {
    const settings = unitSettings(read("deploy/postline.service"))
    const one = (key: string) => settings.get(key)?.at(-1)

    it("starts the bundle with the Node.js flags of `pnpm start`, as a user other than root", () => {
      const [node, ...args] = one("ExecStart")!.split(/\s+/)
      expect(node).toMatch(/\/node$/)
      expect(args.at(-1)).toMatch(/(^|\/)apps\/server\/dist\/main\.js$/)
      expect(args.slice(0, -1)).toEqual(startNodeFlags())
      expect(one("User")).toBeDefined()
      expect(one("User")).not.toBe("root")
      expect(one("EnvironmentFile")).toBeDefined()
    })

    it("gives the server longer than SHUTDOWN_GRACE_SECONDS to stop after SIGTERM", () => {
      expect(one("KillSignal")).toBe("SIGTERM")
      expect(seconds(one("TimeoutStopSec")!)).toBeGreaterThan(defaultSeconds("SHUTDOWN_GRACE_SECONDS"))
    })

    it("makes the file system read-only but for the data folder", () => {
      expect(one("ProtectSystem")).toBe("strict")
      expect(one("NoNewPrivileges")).toBe("yes")
      const dataDir = settings.get("Environment")?.map((value) => /^DATA_DIR=(\S+)$/.exec(value)?.[1]).find(Boolean)
      expect(dataDir).toBeDefined()
      const writable = one("ReadWritePaths")!.split(/\s+/)
      expect(writable.some((path) => dataDir === path || dataDir!.startsWith(`${path}/`))).toBe(true)
    })
  })
})
