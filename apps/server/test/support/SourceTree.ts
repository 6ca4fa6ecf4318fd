import { readdirSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import ts from "typescript"

/** The TypeScript files under `folder`, as paths relative to it, in a stable order. */
export const sourceFiles = (folder: string): ReadonlyArray<string> =>
  readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
    .sort()

/**
 * The relative imports of a file (static, dynamic and `export … from`), resolved to the file they name, relative to
 * `root`; imports of packages, and of files outside `root`, are left out.
 */
const importsOf = (root: string, file: string): ReadonlyArray<string> => {
  const source = readFileSync(Path.join(root, file), "utf8")
  return ts.preProcessFile(source, true, true).importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => Path.normalize(Path.join(Path.dirname(file), specifier.replace(/\.js$/, ".ts"))))
    .filter((target) => !target.startsWith(".."))
}

/** Where a file belongs in the folder graph: its first folder under `root`, or the file itself at the top. */
const unitOf = (file: string) => file.includes(Path.sep) ? `${file.split(Path.sep)[0]}/` : file

/** The import graph of `root`'s folders: each folder (a top-level file counts as one) and the folders it imports. */
export const folderGraph = (root: string): ReadonlyMap<string, ReadonlySet<string>> => {
  const graph = new Map<string, Set<string>>()
  for (const file of sourceFiles(root)) {
    const from = unitOf(file)
    const edges = graph.get(from) ?? new Set<string>()
    graph.set(from, edges)
    for (const target of importsOf(root, file)) if (unitOf(target) !== from) edges.add(unitOf(target))
  }
  return graph
}

/** The strongly connected components of a graph (Tarjan's algorithm): the knots of mutually importing nodes. */
export const knots = (graph: ReadonlyMap<string, ReadonlySet<string>>): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const lowest = new Map<string, number>()
  const stack: Array<string> = []
  const components: Array<Array<string>> = []
  const visit = (node: string) => {
    index.set(node, index.size)
    lowest.set(node, index.get(node)!)
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        lowest.set(node, Math.min(lowest.get(node)!, lowest.get(next)!))
      } else if (stack.includes(next)) {
        lowest.set(node, Math.min(lowest.get(node)!, index.get(next)!))
      }
    }
    if (lowest.get(node) === index.get(node)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        component.push(member)
      } while (member !== node)
      components.push(component.sort())
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return components
}

/** How many lines a file has. */
export const lineCount = (file: string) => readFileSync(file, "utf8").replace(/\n$/, "").split("\n").length
