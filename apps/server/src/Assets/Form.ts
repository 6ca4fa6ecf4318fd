import { HttpApiError, type Multipart } from "@effect/platform"
import { BadRequest, FolderName, PayloadTooLarge, UploadAssetFields } from "@postline/domain"
import { Effect, Predicate, Schema, Stream } from "effect"
import * as Path from "node:path"
import { type SizeLimits, spool, type Spooled } from "./Spool.js"

export interface UploadForm {
  readonly file: Spooled
  /** The file's own name, as the form gave it, reduced to something a name may be; null when it has none. */
  readonly fileName: string | null
  readonly fields: UploadAssetFields
}

const decodeFields = Schema.decodeUnknown(UploadAssetFields, { errors: "all", onExcessProperty: "error" })

const isName = Schema.is(FolderName)

/** A file's name without its folders, control characters or excess (255 characters at most); null if no name is left. */
export const nameFromFile = (name: string) => {
  const base = [...Path.basename(name.replaceAll("\\", "/")).replace(/[\u0000-\u001f\u007f]/g, "").trim()].slice(0, 255).join("")
  return base !== "." && base !== ".." && isName(base) ? base : null
}

// The parser's own grammar for a Content-Type's parameters, without its non-ASCII: what passes here, it reads
// (a boundary it cannot read is thrown from inside it, a 500).
const contentTypeParameter = /; *([!#$%&'*+.^\w`|~-]+)=("(?:[\u0020\u0021\u0023-\u005b\u005d-\u007e]|\\[\u0020-\u007e])*"|[!#$%&'*+.^\w`|~-]+) */y

// RFC 2046: 1 to 70 of these characters, the last not a space.
const boundaryValue = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/

const notAForm = "An upload is a multipart/form-data form: send the file in its part named file"
const badBoundary = "The Content-Type's boundary is missing or malformed: 1 to 70 letters, digits, spaces or '()+_,-./:=? " +
  "(the last not a space), in quotes unless a token, given once"

const invalidForm = (message: string) => new BadRequest({ message, reason: "invalid_form" })

/** Why an upload's Content-Type cannot be read as a form before a byte of its body is; undefined when it can. */
export const formContentTypeRefusal = (header = ""): BadRequest | undefined => {
  const semicolon = header.indexOf(";")
  if ((semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase() !== "multipart/form-data") {
    return new BadRequest({ message: notAForm, reason: "wrong_content_type" })
  }
  const boundaries: Array<string> = []
  let index = semicolon === -1 ? header.length : semicolon
  while (index < header.length) {
    contentTypeParameter.lastIndex = index
    const parameter = contentTypeParameter.exec(header)
    if (parameter === null) return invalidForm(badBoundary)
    if (parameter[1]!.toLowerCase() === "boundary") boundaries.push(parameter[2]!.replace(/^"(.*)"$/, "$1"))
    index = contentTypeParameter.lastIndex
  }
  return boundaries.length === 1 && boundaryValue.test(boundaries[0]!) ? undefined : invalidForm(badBoundary)
}

const refusal = (error: Multipart.MultipartError) => {
  switch (error.reason) {
    case "FileTooLarge":
    case "BodyTooLarge":
      return new PayloadTooLarge({ message: "The file is larger than the server takes" })
    case "FieldTooLarge":
      return invalidForm("A text field of the form is longer than 8192 bytes")
    case "TooManyParts":
      return invalidForm("The form has more than 8 parts")
    default:
      return endedEarly(error)
        ? invalidForm("The form ends without its closing boundary (--boundary-- after the last part)")
        : invalidForm("The request body is not a readable multipart/form-data form")
  }
}

// The parser's own error for a body that ended inside a part: a form sent incomplete.
const endedEarly = (error: Multipart.MultipartError) =>
  Predicate.hasProperty(error.cause, "_tag") && error.cause._tag === "EndNotReached"

/**
 * Reads an upload's form: its one `file` spooled to `path` (see `spool`), its text fields decoded. A second
 * file, a field given twice, a form without a file, or one that is not multipart get 400.
 */
export const readUploadForm = (
  parts: Stream.Stream<Multipart.Part, Multipart.MultipartError>,
  path: string,
  limits: SizeLimits
) =>
  Effect.gen(function*() {
    let file: Spooled | undefined
    let fileName: string | null = null
    const fields = new Map<string, string>()
    yield* Stream.runForEach(parts, (part) =>
      Effect.gen(function*() {
        if (part._tag === "Field") {
          if (fields.has(part.key)) return yield* invalidForm(`The form gives ${part.key} more than once`)
          fields.set(part.key, part.value)
          return
        }
        if (part.key !== "file" || file !== undefined) {
          return yield* invalidForm("The form must have one file, in the part named file")
        }
        fileName = nameFromFile(part.name)
        file = yield* spool(part.content, path, limits)
      })).pipe(Effect.catchTag("MultipartError", (error) => Effect.fail(refusal(error))))
    if (file === undefined) return yield* invalidForm("The form has no file: send it in the part named file")
    // The platform's own decode error, which the edge answers as every endpoint's.
    const decoded = yield* Effect.catchTag(decodeFields(Object.fromEntries(fields)), "ParseError", HttpApiError.HttpApiDecodeError.refailParseError)
    return { file, fileName, fields: decoded } satisfies UploadForm
  })
