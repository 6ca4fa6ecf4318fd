import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import fc from "fast-check"
import { isDocumentedException } from "./support/DocumentExceptions.js"
import { edgeValue, isValid, type JsonSchema, operations, validValue } from "./support/OpenApiDocument.js"
import { serverDecoders, serverSchemas } from "./support/ServerDecoders.js"

/**
 * For every operation's path parameters, query and JSON body: a value is valid
 * per openapi.json exactly when the server's decoder accepts it, but for the
 * rules the document cannot state (support/DocumentExceptions.ts).
 */

const inputs = ["pathParameters", "query", "body"] as const

// Path and query parameters arrive as strings.
const onlyStrings = (value: unknown) =>
  value !== null && typeof value === "object" && Object.values(value).every((v) => typeof v === "string")

const numRuns = 150

describe("openapi.json and the server's decoders accept the same inputs", () => {
  it("covers every operation of the document", () => {
    expect(operations.length).toBeGreaterThan(40)
    for (const operation of operations) expect(serverDecoders.has(operation.id), operation.id).toBe(true)
  })

  for (const operation of operations) {
    for (const input of inputs) {
      const schema: JsonSchema | undefined = operation[input]
      if (schema === undefined) continue
      const inUrl = input !== "body"

      describe(`${operation.id} ${input}`, () => {
        const decoder = serverDecoders.get(operation.id)?.[input]

        it("the server decodes it", () => {
          expect(decoder).toBeDefined()
        })

        it("accepts what the document calls valid", () => {
          let exceptions = 0
          fc.assert(
            fc.property(validValue(schema), (value) => {
              expect(isValid(schema, value)).toBe(true)
              if (decoder!(value)) return
              exceptions++
              expect(isDocumentedException(value), JSON.stringify(value)).toBe(true)
            }),
            { numRuns }
          )
          // Exceptions are rare edges, not the rule.
          expect(exceptions).toBeLessThan(numRuns * 0.9)
        })

        it("calls valid what the server's own schema generates (Effect's Arbitrary, encoded)", () => {
          const serverSchema = serverSchemas.get(operation.id)![input]!
          const encode = Schema.encodeSync(serverSchema)
          fc.assert(
            fc.property(Arbitrary.make(serverSchema), (decoded) => {
              const value = encode(decoded)
              expect(isValid(schema, value), JSON.stringify(value)).toBe(true)
            }),
            { numRuns: 50 }
          )
        })

        it("refuses only what the document calls invalid, at edges, wrong types, missing and extra fields", () => {
          const edges = edgeValue(schema, { extraProperties: !inUrl }).filter((value) => !inUrl || onlyStrings(value))
          fc.assert(
            fc.property(edges, (value) => {
              const documented = isValid(schema, value)
              const accepted = decoder!(value)
              if (documented === accepted) return
              expect({ value, documented, accepted }).toEqual({ value, documented: true, accepted: false })
              expect(isDocumentedException(value), JSON.stringify(value)).toBe(true)
            }),
            { numRuns }
          )
        })
      })
    }
  }
})
