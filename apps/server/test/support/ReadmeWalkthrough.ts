// The README's walkthrough as data: its shell blocks split into commands, each with the output comment that
// follows it, and the comparison of an output with such a comment. readme.test.ts runs them; the rules are
// written out at the top of that file.

/** A command of a block: its text as written (continuation lines included) and what its output should look like. */
export interface WalkthroughCommand {
  readonly text: string
  /** The README's line number of the command's first line. */
  readonly line: number
  readonly expected: ExpectedOutput | undefined
}

export interface WalkthroughBlock {
  /** The heading of the section it is in ("Using the API > Media library"). */
  readonly section: string
  /** The README's line number of its opening fence. */
  readonly line: number
  readonly commands: ReadonlyArray<WalkthroughCommand>
}

/** An output comment: an HTTP status (when given) and the shape of the JSON (when given). */
export interface ExpectedOutput {
  readonly comment: string
  readonly status: number | undefined
  readonly shape: Shape | undefined
}

/** The fence info strings: `sh` blocks run; `console` blocks are shown to the reader and never run. */
export const runnableFence = "sh"

/**
 * A walkthrough: the fenced blocks of a `## ` section (its subsections included; `## Using the API` unless
 * another is named), in order, those whose info string is `sh`.
 */
export const walkthroughBlocks = (readme: string, section = "Using the API"): ReadonlyArray<WalkthroughBlock> => {
  const lines = readme.split("\n")
  const start = lines.findIndex((line) => line === `## ${section}`)
  if (start === -1) throw new Error(`The README has no "## ${section}" section`)
  const end = lines.findIndex((line, index) => index > start && /^## /.test(line))
  const blocks: Array<WalkthroughBlock> = []
  const headings: Array<string> = []
  for (let index = start; index < (end === -1 ? lines.length : end); index++) {
    const heading = /^(#{2,4}) (.*)$/.exec(lines[index]!)
    if (heading) {
      headings.length = heading[1]!.length - 2
      headings.push(heading[2]!)
      continue
    }
    const fence = /^```(\S*)/.exec(lines[index]!)
    if (!fence) continue
    const close = lines.findIndex((line, after) => after > index && line === "```")
    if (close === -1) throw new Error(`README line ${index + 1}: a block that never closes`)
    if (fence[1] === runnableFence) {
      blocks.push({
        section: headings.join(" > "),
        line: index + 1,
        commands: splitCommands(lines.slice(index + 1, close), index + 2)
      })
    }
    index = close
  }
  return blocks
}

/**
 * Splits a block into commands: a command runs to the end of a line that is not continued (a trailing `\`) and
 * not inside quotes. `#` lines right after a command whose text begins with `{`, `[` or a three-digit status are
 * its output comment, continued on the following `#` lines until the JSON closes; other `#` lines are prose.
 */
export const splitCommands = (lines: ReadonlyArray<string>, firstLine: number): Array<WalkthroughCommand> => {
  const commands: Array<{ text: string; line: number; comment: Array<string> | undefined }> = []
  let current: { lines: Array<string>; line: number } | undefined
  let quote: "'" | "\"" | undefined
  let lastCommandEnded = false
  let commentOpen = false
  for (const [offset, line] of lines.entries()) {
    if (current === undefined) {
      const comment = /^#(?: (.*))?$/.exec(line)
      if (comment) {
        const text = comment[1] ?? ""
        const last = commands[commands.length - 1]
        if (commentOpen && last?.comment !== undefined) {
          last.comment.push(text)
          commentOpen = !isComplete(last.comment.join("\n"))
        } else if (lastCommandEnded && last !== undefined && last.comment === undefined && startsOutput(text)) {
          last.comment = [text]
          commentOpen = !isComplete(text)
        }
        lastCommandEnded = false
        continue
      }
      if (commentOpen) throw new Error(`README line ${firstLine + offset - 1}: an output comment whose JSON never closes`)
      lastCommandEnded = false
      if (line.trim() === "") continue
      current = { lines: [], line: firstLine + offset }
    }
    current.lines.push(line)
    let escaped = false
    let ended = false
    for (let at = 0; at < line.length && !ended; at++) {
      const char = line[at]!
      if (escaped) escaped = false
      else if (quote === "'") quote = char === "'" ? undefined : quote
      else if (char === "\\") escaped = true
      else if (quote === "\"") quote = char === "\"" ? undefined : quote
      else if (char === "'" || char === "\"") quote = char
      else if (char === "#" && (at === 0 || /\s/.test(line[at - 1]!))) ended = true // a comment to the line's end
    }
    const continued = quote !== undefined || (!ended && line.endsWith("\\"))
    if (!continued) {
      commands.push({ text: current.lines.join("\n"), line: current.line, comment: undefined })
      current = undefined
      lastCommandEnded = true
    }
  }
  if (current !== undefined) throw new Error(`README line ${current.line}: a command whose quotes never close`)
  if (commentOpen) throw new Error(`README line ${firstLine + lines.length - 1}: an output comment whose JSON never closes`)
  return commands.map(({ comment, line, text }) => ({
    text,
    line,
    expected: comment === undefined ? undefined : parseExpected(comment.join("\n"), line)
  }))
}

const statusPrefix = /^(\d{3})(?:$|\s+)/

const startsOutput = (text: string) => /^[{[]/.test(text) || statusPrefix.test(text)

/** Whether the brackets of a comment's JSON are all closed (strings skipped). */
const isComplete = (text: string) => {
  let depth = 0
  let inString = false
  let escaped = false
  for (const char of text.replace(statusPrefix, "")) {
    if (inString) {
      if (escaped) escaped = false
      else if (char === "\\") escaped = true
      else if (char === "\"") inString = false
    } else if (char === "\"") inString = true
    else if (char === "{" || char === "[") depth++
    else if (char === "}" || char === "]") depth--
  }
  return depth <= 0
}

const parseExpected = (comment: string, line: number): ExpectedOutput => {
  const status = statusPrefix.exec(comment)
  const rest = status ? comment.slice(status[0].length) : comment
  try {
    return {
      comment,
      status: status ? Number(status[1]) : undefined,
      shape: rest.trim() === "" ? undefined : parseShape(rest)
    }
  } catch (error) {
    throw new Error(`README: the output comment of the command on line ${line}: ${(error as Error).message}`)
  }
}

// ---- Shapes: JSON with `…` ----

export type Shape =
  | { readonly _tag: "Any" }
  | { readonly _tag: "Literal"; readonly value: number | boolean | null }
  | { readonly _tag: "String"; readonly value: string }
  | { readonly _tag: "Array"; readonly before: ReadonlyArray<Shape>; readonly after: ReadonlyArray<Shape> | undefined }
  | { readonly _tag: "Object"; readonly members: ReadonlyMap<string, Shape>; readonly open: boolean }

const ellipsis = "…"

/** Parses a shape: JSON in which `…` also stands alone, for any value, more members, or more elements. */
export const parseShape = (text: string): Shape => {
  let at = 0
  const fail = (message: string): never => {
    throw new Error(`${message} at character ${at + 1} of ${JSON.stringify(text)}`)
  }
  const space = () => {
    while (at < text.length && /\s/.test(text[at]!)) at++
  }
  const isEllipsis = () => (space(), text.startsWith(ellipsis, at))
  const expect = (token: string) => {
    space()
    if (!text.startsWith(token, at)) fail(`expected ${token}`)
    at += token.length
  }
  const string = (): string => {
    space()
    const match = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(at))
    if (!match) return fail("expected a string")
    at += match[0].length
    return JSON.parse(match[0]) as string
  }
  const value = (): Shape => {
    space()
    if (isEllipsis()) return (at += ellipsis.length, { _tag: "Any" })
    const char = text[at]
    if (char === "\"") return { _tag: "String", value: string() }
    if (char === "{") {
      at++
      const members = new Map<string, Shape>()
      let open = false
      space()
      if (text[at] === "}") return (at++, { _tag: "Object", members, open })
      for (;;) {
        if (isEllipsis()) {
          if (open) fail("a second … in one object")
          at += ellipsis.length
          open = true
        } else {
          const key = string()
          if (members.has(key)) fail(`the key ${key} twice`)
          expect(":")
          members.set(key, value())
        }
        space()
        if (text[at] === ",") at++
        else if (text[at] === "}") return (at++, { _tag: "Object", members, open })
        else fail("expected , or }")
      }
    }
    if (char === "[") {
      at++
      const before: Array<Shape> = []
      let after: Array<Shape> | undefined
      space()
      if (text[at] === "]") return (at++, { _tag: "Array", before, after })
      for (;;) {
        if (isEllipsis() && /^…\s*[,\]]/.test(text.slice(at))) {
          if (after !== undefined) fail("a second … in one array")
          at += ellipsis.length
          after = []
        } else (after ?? before).push(value())
        space()
        if (text[at] === ",") at++
        else if (text[at] === "]") return (at++, { _tag: "Array", before, after })
        else fail("expected , or ]")
      }
    }
    const literal = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(at))
    if (!literal) return fail("expected a value")
    at += literal[0].length
    return { _tag: "Literal", value: JSON.parse(literal[0]) as number | boolean | null }
  }
  const shape = value()
  space()
  if (at < text.length) fail("unexpected text after the value")
  return shape
}

const typeOf = (value: unknown) => value === null ? "null" : Array.isArray(value) ? "array" : typeof value

const show = (value: unknown) => {
  const text = JSON.stringify(value)
  return text.length > 120 ? `${text.slice(0, 117)}…` : text
}

/** A string with `…` in it: its literal parts, in order, around anything. */
const stringPattern = (pattern: string) =>
  new RegExp(`^${pattern.split(ellipsis).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*")}$`)

/** Where `value` differs from `shape`: one message per difference, each with its path (`$.results[1].status`). */
export const mismatches = (shape: Shape, value: unknown, path = "$"): Array<string> => {
  switch (shape._tag) {
    case "Any":
      return []
    case "Literal":
      return value === shape.value ? [] : [`${path}: expected ${show(shape.value)}, got ${show(value)}`]
    case "String":
      if (typeof value !== "string") return [`${path}: expected a string, got ${show(value)}`]
      return (shape.value.includes(ellipsis) ? stringPattern(shape.value).test(value) : value === shape.value)
        ? []
        : [`${path}: expected ${show(shape.value)}, got ${show(value)}`]
    case "Array": {
      if (!Array.isArray(value)) return [`${path}: expected an array, got ${show(value)}`]
      const { after, before } = shape
      const least = before.length + (after?.length ?? 0)
      if (after === undefined ? value.length !== least : value.length < least) {
        return [`${path}: expected ${after === undefined ? "" : "at least "}${least} elements, got ${value.length}: ${show(value)}`]
      }
      const tail = after ?? []
      return [
        ...before.flatMap((element, index) => mismatches(element, value[index], `${path}[${index}]`)),
        ...tail.flatMap((element, index) => {
          const at = value.length - tail.length + index
          return mismatches(element, value[at], `${path}[${at}]`)
        })
      ]
    }
    case "Object": {
      if (typeOf(value) !== "object") return [`${path}: expected an object, got ${show(value)}`]
      const record = value as Record<string, unknown>
      const problems = [...shape.members].flatMap(([key, member]) =>
        key in record ? mismatches(member, record[key], `${path}.${key}`) : [`${path}: no key ${JSON.stringify(key)} in ${show(value)}`]
      )
      const extra = Object.keys(record).filter((key) => !shape.members.has(key))
      return shape.open || extra.length === 0
        ? problems
        : [...problems, `${path}: keys the comment does not list (end it with …, if more may follow): ${extra.join(", ")}`]
    }
  }
}

/**
 * Where a command's standard output differs from its comment. With a status, the output begins with it: an
 * HTTP status line (`curl -i`: headers, a blank line, then the body) or the code alone on the first line
 * (`curl -o /dev/null -w '%{http_code}\n'`). The body is then JSON that matches the shape, or nothing when the
 * comment gives a status alone.
 */
export const outputProblems = (expected: ExpectedOutput, stdout: string): Array<string> => {
  let body = stdout
  if (expected.status !== undefined) {
    let status: number | undefined
    if (stdout.startsWith("HTTP/")) {
      // Interim answers (100 Continue) come first, each with its own blank line.
      const responses = stdout.split(/\r?\n\r?\n/)
      let index = 0
      while (/^HTTP\/\S+ 1\d\d/.test(responses[index] ?? "") && index < responses.length - 1) index++
      status = Number(/^HTTP\/\S+ (\d{3})/.exec(responses[index]!)?.[1])
      body = responses.slice(index + 1).join("\n\n")
    } else {
      const code = /^(\d{3})\r?\n?/.exec(stdout)
      if (!code) return [`expected the status ${expected.status} first (curl -i, or -w '%{http_code}\\n'), got ${show(stdout)}`]
      status = Number(code[1])
      body = stdout.slice(code[0].length)
    }
    if (status !== expected.status) return [`expected the status ${expected.status}, got ${status}: ${show(body)}`]
  }
  if (expected.shape === undefined) return body.trim() === "" ? [] : [`expected no body, got ${show(body)}`]
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return [`expected JSON, got ${show(body)}`]
  }
  return mismatches(expected.shape, value)
}
