import { Data, Effect, Either } from "effect"

/** What `typeof` must say of an export: a class is a "function". */
type ExportKind = "function" | "object" | "string" | "number" | "boolean"

type KindOf<T> = T extends Function ? "function" : T extends string ? "string" : T extends number ? "number"
  : T extends boolean ? "boolean"
  : "object"

/** A lazily loaded module that does not have the exports its caller needs: a defect of the build. */
export class LazyModuleMismatch extends Data.TaggedError("LazyModuleMismatch")<{ readonly message: string }> {}

export interface LazyModule<A> {
  /** The specifier as the code imports it. */
  readonly specifier: string
  /** Imports the module (Node keeps it once loaded) and checks its exports; a mismatch is a defect. */
  readonly load: Effect.Effect<A>
  /** What `load` makes of an imported namespace: how a test checks a built chunk. */
  readonly fromNamespace: (namespace: unknown) => Either.Either<A, LazyModuleMismatch>
}

export declare namespace LazyModule {
  /** The exports a lazy module's `load` gives. */
  export type Exports<T> = T extends LazyModule<infer A> ? A : never
}

const kindOf = (value: unknown) => (value === null ? "null" : typeof value)

const problemsOf = (candidate: unknown, exports: Readonly<Record<string, ExportKind>>) =>
  Object.entries(exports).flatMap(([name, kind]) => {
    const found = typeof candidate === "object" || typeof candidate === "function"
      ? kindOf((candidate as Record<string, unknown> | null)?.[name])
      : "undefined"
    return found === kind ? [] : [`${name} (${kind === "object" ? "an" : "a"} ${kind}, found ${found})`]
  })

/**
 * `import()` of a module the server needs only sometimes, so that a start does not load it, with the
 * exports the caller uses checked when it arrives. A CommonJS module imported from the bundle comes as
 * `{ default: module.exports }` only, where Node gives its named exports too: its exports are then taken
 * from `default`. Anything else missing names the module and the export, instead of an `undefined` that
 * fails far from here. `importer` must call `import()` with a literal, for the bundler to find the module.
 */
export const lazyModule = <M, const K extends keyof M & string>(
  specifier: string,
  importer: () => Promise<M>,
  exports: { readonly [P in K]: KindOf<M[P]> }
): LazyModule<Pick<M, K>> => {
  const fromNamespace = (namespace: unknown): Either.Either<Pick<M, K>, LazyModuleMismatch> => {
    const fallback = (namespace as { readonly default?: unknown } | null)?.default
    const inNamespace = problemsOf(namespace, exports)
    const inDefault = fallback === undefined ? undefined : problemsOf(fallback, exports)
    if (inNamespace.length === 0) return Either.right(namespace as Pick<M, K>)
    if (inDefault?.length === 0) return Either.right(fallback as Pick<M, K>)
    // The nearer of the two is the one the caller meant.
    const nearer = inDefault !== undefined && inDefault.length < inNamespace.length
      ? `${inDefault.join(", ")} in its default export`
      : inNamespace.join(", ")
    const exported = typeof namespace === "object" && namespace !== null ? Object.keys(namespace) : []
    return Either.left(
      new LazyModuleMismatch({
        message: `The lazily loaded module ${specifier} lacks ${nearer}; ` +
          `its namespace exports ${exported.length === 0 ? "nothing" : exported.join(", ")}`
      })
    )
  }
  return {
    specifier,
    load: Effect.flatMap(
      Effect.promise(importer),
      (namespace) => Either.match(fromNamespace(namespace), { onLeft: Effect.die, onRight: Effect.succeed })
    ),
    fromNamespace
  }
}
