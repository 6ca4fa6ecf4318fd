import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import fc from "fast-check"
import { readFileSync } from "node:fs"
import { openApiPath } from "../../scripts/openapi.js"

/**
 * The committed `openapi.json` read as a third party reads it: its inputs per
 * operation, a JSON Schema 2020-12 validator for them, and generators of values
 * the document calls valid and of values near its edges.
 */

export type JsonSchema = Record<string, any>

export const document = JSON.parse(readFileSync(openApiPath, "utf8"))

const ajv = new Ajv2020({ strict: false, allErrors: false, unicodeRegExp: true })
addFormats(ajv)
ajv.addSchema({ $id: "openapi", components: document.components })

const validators = new Map<JsonSchema, (value: unknown) => boolean>()

/** Whether `value` is valid for `schema`, a schema of the document whose refs point into it. */
export const isValid = (schema: JsonSchema, value: unknown): boolean => {
  let validate = validators.get(schema)
  if (validate === undefined) {
    const compiled = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll("\"#/components/", "\"openapi#/components/")))
    validate = (candidate) => compiled(candidate) as boolean
    validators.set(schema, validate)
  }
  return validate(value)
}

// Resolved once per schema, so that each keeps one compiled validator.
const resolved = new WeakMap<JsonSchema, JsonSchema>()

const resolve = (schema: JsonSchema): JsonSchema => {
  if (typeof schema.$ref !== "string") return schema
  let result = resolved.get(schema)
  if (result === undefined) {
    const { $ref, ...siblings } = schema
    const target = $ref.replace("#/components/schemas/", "")
    result = { ...resolve(document.components.schemas[target]), ...siblings }
    resolved.set(schema, result)
  }
  return result
}

/** One operation's inputs: path and query parameters as objects of strings, and its JSON body. */
export interface Operation {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly pathParameters: JsonSchema | undefined
  readonly query: JsonSchema | undefined
  readonly body: JsonSchema | undefined
}

const parametersIn = (operation: JsonSchema, where: "path" | "query"): JsonSchema | undefined => {
  const parameters = (operation.parameters ?? []).filter((parameter: JsonSchema) => parameter.in === where)
  if (parameters.length === 0) return undefined
  return {
    type: "object",
    properties: Object.fromEntries(parameters.map((parameter: JsonSchema) => [parameter.name, parameter.schema])),
    required: parameters.filter((parameter: JsonSchema) => parameter.required).map((parameter: JsonSchema) => parameter.name)
  }
}

export const operations: ReadonlyArray<Operation> = Object.entries(document.paths as Record<string, JsonSchema>)
  .flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]): Operation => ({
      id: operation.operationId,
      method,
      path,
      pathParameters: parametersIn(operation, "path"),
      query: parametersIn(operation, "query"),
      body: operation.requestBody?.content?.["application/json"]?.schema
    }))
  )

const patternsOf = (schema: JsonSchema): Array<string> =>
  [schema.pattern, ...(schema.allOf ?? []).map((part: JsonSchema) => part.pattern)].filter((p) => p !== undefined)

const anyString = (minLength = 0, maxLength = minLength + 40) =>
  fc.oneof(
    fc.string({ unit: "binary", minLength, maxLength }),
    fc.string({ unit: fc.constantFrom(" ", "\u0000", "\u200B", "\t", "a", "😀"), minLength, maxLength })
  )

/** Values the document calls valid for `schema`. */
export const validValue = (schema: JsonSchema): fc.Arbitrary<unknown> => {
  const resolved = resolve(schema)
  if (resolved.anyOf) return fc.oneof(...resolved.anyOf.map(validValue))
  if (resolved.enum) return fc.constantFrom(...resolved.enum)
  if ("const" in resolved) return fc.constant(resolved.const)
  switch (resolved.type) {
    case "null":
      return fc.constant(null)
    case "boolean":
      return fc.boolean()
    case "integer":
      return fc.integer({ min: resolved.minimum ?? -1000, max: resolved.maximum ?? 1000 })
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true })
    case "string": {
      const [pattern] = patternsOf(resolved)
      const generated = pattern !== undefined
        ? fc.stringMatching(new RegExp(pattern, "u"))
        : anyString(resolved.minLength ?? 0, Math.min(resolved.maxLength ?? 40, (resolved.minLength ?? 0) + 80))
      const withExamples = resolved.examples ? fc.oneof(fc.constantFrom(...resolved.examples), generated) : generated
      return withExamples.filter((value) => isValid(schema, value))
    }
    case "array": {
      const items = validValue(resolved.items ?? {})
      const constraints = { minLength: resolved.minItems ?? 0, maxLength: Math.min(resolved.maxItems ?? 8, 8) }
      return resolved.uniqueItems
        ? fc.uniqueArray(items, { ...constraints, selector: (item) => JSON.stringify(item) })
        : fc.array(items, constraints)
    }
    case "object": {
      const properties: Record<string, JsonSchema> = resolved.properties ?? {}
      return fc.record(
        Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, validValue(property)])),
        { requiredKeys: resolved.required ?? [] }
      )
    }
    default:
      return fc.jsonValue()
  }
}

const wrongType = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.constant(1.5),
  fc.constant([]),
  fc.constant({}),
  fc.string({ maxLength: 3 })
)

const repeat = (s: string, length: number) => s.repeat(Math.max(0, length))

/** Strings at and just past a string schema's bounds, empty, blank, or holding NUL. */
const edgeStrings = (schema: JsonSchema): fc.Arbitrary<unknown> => {
  const valid = validValue(schema) as fc.Arbitrary<string>
  const min: number = schema.minLength ?? 0
  const max: number | undefined = schema.maxLength
  return fc.oneof(
    fc.constantFrom("", " ", "  ", "\u200B\u200B", "\u3000\u3000", "0", "00", "\u0000"),
    valid.map((s) => s + "\u0000"),
    valid.map((s) => " " + s + " "),
    valid.map((s) => s.toUpperCase()),
    valid.map((s) => s.slice(0, Math.max(0, min - 1))),
    ...(max === undefined ? [] : [
      valid.map((s) => s + repeat("a", max - [...s].length)),
      valid.map((s) => s + repeat("a", max + 1 - [...s].length)),
      valid.map((s) => s + repeat("😀", max + 1 - [...s].length)),
      valid.map((s) => s + repeat("😀", max - [...s].length))
    ])
  )
}

/** Values near the edges of `schema`: wrong types, missing and extra properties, bounds met and passed. */
export const edgeValue = (schema: JsonSchema, options: { readonly extraProperties: boolean }): fc.Arbitrary<unknown> => {
  const resolved = resolve(schema)
  if (resolved.anyOf) return fc.oneof(...resolved.anyOf.map((member: JsonSchema) => edgeValue(member, options)))
  switch (resolved.type) {
    case "string":
      return fc.oneof(wrongType, edgeStrings(resolved))
    case "integer":
      return fc.oneof(
        wrongType,
        fc.constantFrom(resolved.minimum - 1, resolved.maximum + 1, resolved.minimum, resolved.maximum, 2.5)
          .filter(Number.isFinite)
      )
    case "array": {
      const item = validValue(resolved.items ?? {})
      return fc.oneof(
        wrongType,
        fc.array(item, { minLength: (resolved.maxItems ?? 8) + 1, maxLength: (resolved.maxItems ?? 8) + 1 }),
        item.map((value) => [value, value]),
        fc.array(edgeValue(resolved.items ?? {}, options), { minLength: 1, maxLength: 3 })
      )
    }
    case "object": {
      const properties: Record<string, JsonSchema> = resolved.properties ?? {}
      const names = Object.keys(properties)
      const valid = validValue(resolved) as fc.Arbitrary<Record<string, unknown>>
      const mutations: Array<fc.Arbitrary<unknown>> = [
        valid.chain((value) =>
          Object.keys(value).length === 0
            ? fc.constant(value)
            : fc.constantFrom(...Object.keys(value)).map((name) => {
              const { [name]: _dropped, ...rest } = value
              return rest
            })
        )
      ]
      if (names.length > 0) {
        const edges = fc.oneof(
          ...names.map((name) => edgeValue(properties[name], options).map((edge) => [name, edge] as const))
        )
        mutations.push(fc.tuple(valid, edges).map(([value, [name, edge]]) => ({ ...value, [name]: edge })))
      }
      if (options.extraProperties) {
        mutations.push(valid.map((value) => ({ ...value, unexpected: "x" })), wrongType)
      }
      return fc.oneof(...mutations)
    }
    default:
      return wrongType
  }
}
