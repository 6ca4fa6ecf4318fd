import Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import Zlib from "node:zlib"

/**
 * The template of a new embedded database, made by the build beside the bundle
 * (TemplateMain.ts): the data folder of a new PGlite database with every migration run, as
 * PGlite's `dumpDataDir` writes it (a gzipped tar). Absent when the server runs from its sources.
 */
export const templateFile = fileURLToPath(new URL("./pgdata-template.tar.gz", import.meta.url))

// Left by the running database the template was taken from; PGlite makes its own.
const skipped = new Set(["postmaster.pid"])

const text = (block: Buffer, offset: number, length: number) => {
  const end = block.indexOf(0, offset)
  return block.toString("utf8", offset, end === -1 || end > offset + length ? offset + length : end)
}

/**
 * Writes the template's files into `dataDir` (empty but for Postline's own files). Only
 * folders and plain files, whose paths stay inside `dataDir`; anything else is an error.
 * The template is about 40 MB unpacked and is read once: this takes a fraction of what
 * PGlite's initdb takes.
 */
export const unpackTemplate = (file: string, dataDir: string) => {
  const tar = Zlib.gunzipSync(Fs.readFileSync(file))
  const root = Path.resolve(dataDir)
  for (let offset = 0; offset + 512 <= tar.length;) {
    const header = tar.subarray(offset, offset + 512)
    if (header.every((byte) => byte === 0)) break
    const name = Path.posix.join(text(header, 345, 155), text(header, 0, 100))
    const size = Number.parseInt(text(header, 124, 12).trim() || "0", 8)
    const mode = Number.parseInt(text(header, 100, 8).trim() || "0", 8) & 0o777
    const type = header[156] === 0 ? "0" : String.fromCharCode(header[156])
    const target = Path.resolve(root, `.${Path.posix.sep}${name.replace(/^\/+/, "")}`)
    if (target !== root && !target.startsWith(root + Path.sep)) throw new Error(`The template holds a path outside the folder: ${name}`)
    const body = tar.subarray(offset + 512, offset + 512 + size)
    offset += 512 + Math.ceil(size / 512) * 512
    if (type === "5") {
      Fs.mkdirSync(target, { recursive: true, mode: mode || 0o700 })
    } else if (type === "0") {
      if (skipped.has(Path.relative(root, target))) continue
      Fs.mkdirSync(Path.dirname(target), { recursive: true, mode: 0o700 })
      Fs.writeFileSync(target, body, { mode: mode || 0o600 })
    } else {
      throw new Error(`The template holds an entry of tar type ${type}: ${name}`)
    }
  }
  if (!Fs.existsSync(Path.join(root, "PG_VERSION"))) throw new Error(`The template ${file} holds no database`)
}
