import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Either, Exit } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { inject } from "vitest"
import { ImageJobModule } from "../src/Assets/ImageJobs.js"
import { SharpModule } from "../src/Providers/SharpModule.js"
import { S3StorageModule } from "../src/Assets/StorageConfig.js"
import { StripeModule } from "../src/Billing/PaymentProvider.js"
import { DocsPageModule } from "../src/Http/Docs.js"
import { type LazyModule, lazyModule, LazyModuleMismatch } from "../src/LazyModule.js"
import { AtProtoModule } from "../src/Providers/Bluesky.js"
import { AtprotoOAuthModule } from "../src/Providers/BlueskyOAuthClient.js"
import { RedisStoreModule } from "../src/RateLimits/Store.js"
import { TracingSdkModule } from "../src/Tracing.js"

class Agent {}
const post = () => "posted"

interface Client {
  readonly Agent: typeof Agent
  readonly post: typeof post
  readonly version: string
}

const client = (namespace: unknown) =>
  lazyModule("client", () => Promise.resolve(namespace as Client), { Agent: "function", post: "function", version: "string" })

const defectOf = <A>(module: LazyModule<A>) =>
  Effect.map(Effect.exit(module.load), (exit) => Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined)

describe("lazyModule", () => {
  it.effect("takes the named exports of an ES module", () =>
    Effect.gen(function*() {
      const loaded = yield* client({ Agent, post, version: "1", default: "something else" }).load
      expect(loaded.Agent).toBe(Agent)
      expect(loaded.post()).toBe("posted")
    }))

  it.effect("takes a CommonJS module's exports from `default`, which is all a bundle's chunk of one exports", () =>
    Effect.gen(function*() {
      const loaded = yield* client({ default: { Agent, post, version: "1" } }).load
      expect(loaded.Agent).toBe(Agent)
      expect(loaded.version).toBe("1")
    }))

  it.effect("an export missing or of another kind is a defect naming the module and each export", () =>
    Effect.gen(function*() {
      const bundled = yield* defectOf(client({ default: { Agent, version: 1 } }))
      expect(bundled).toBeInstanceOf(LazyModuleMismatch)
      expect((bundled as LazyModuleMismatch).message).toBe(
        "The lazily loaded module client lacks post (a function, found undefined), version (a string, found number) " +
          "in its default export; its namespace exports default"
      )
      expect(yield* defectOf(client({ Agent: null, post, version: "1" }))).toMatchObject({
        message: "The lazily loaded module client lacks Agent (a function, found null); its namespace exports Agent, post, version"
      })
      expect(yield* defectOf(client({}))).toMatchObject({
        message: "The lazily loaded module client lacks Agent (a function, found undefined), post (a function, found undefined), " +
          "version (a string, found undefined); its namespace exports nothing"
      })
    }))
})

describe("the server's lazily loaded chunks, as built", () => {
  const bundle = inject("serverBundle")
  const chunks: ReadonlyArray<{ importer: string; specifier: string; chunk: string }> = JSON.parse(
    readFileSync(Path.join(bundle, "lazy-chunks.json"), "utf8")
  )
  const declared: ReadonlyArray<LazyModule<unknown>> = [
    AtProtoModule,
    AtprotoOAuthModule,
    DocsPageModule,
    RedisStoreModule,
    TracingSdkModule,
    S3StorageModule,
    SharpModule,
    ImageJobModule,
    StripeModule
  ]
  // A module left outside the bundle (no chunk) is what Node gives the bundle from node_modules.
  const namespaceOf = (specifier: string) => {
    const { chunk } = chunks.find((lazy) => lazy.specifier === specifier)!
    return chunk === undefined
      ? import(/* @vite-ignore */ pathToFileURL(createRequire(Path.join(bundle, "main.js")).resolve(specifier)).href)
      : import(/* @vite-ignore */ pathToFileURL(Path.join(bundle, chunk)).href)
  }

  it("every import() of the server's code is declared with lazyModule", () => {
    expect(chunks.map((lazy) => lazy.specifier).sort()).toEqual(declared.map((module) => module.specifier).sort())
  })

  it("each chunk has the exports its caller declares", async () => {
    for (const module of declared) {
      const loaded = module.fromNamespace(await namespaceOf(module.specifier))
      expect(Either.isRight(loaded), `${module.specifier}: ${Either.isLeft(loaded) ? loaded.left.message : ""}`).toBe(true)
    }
  })

  it("a chunk without the exports its caller declares is refused, naming them", async () => {
    const refused = AtProtoModule.fromNamespace(await namespaceOf("./DocsPage.js"))
    expect(refused).toEqual(Either.left(
      new LazyModuleMismatch({
        message: "The lazily loaded module @atproto/api lacks AtpAgent (a function, found undefined), AtUri (a function, " +
          "found undefined), BlobRef (a function, found undefined), RichText (a function, found undefined), XRPCError " +
          "(a function, found undefined); its namespace exports makeDocsPage"
      })
    ))
  })
})
