// Makes the embedded database's template: a new PGlite database (initdb), as a gzipped tar of its
// data folder. The server unpacks it into a new data folder instead of running initdb in WebAssembly
// in its own process, which takes a second PGlite instance, a copy of its memory and about 770 MB
// (Database/DataDirTemplate.ts). Run by the build (scripts/build.mjs) in a process of its own.
//
//   node scripts/pgdata-template.mjs <file.tar.gz>
import { PGlite } from "@electric-sql/pglite"
import { renameSync, writeFileSync } from "node:fs"

const file = process.argv[2]
if (!file) throw new Error("usage: node scripts/pgdata-template.mjs <file.tar.gz>")
const db = await PGlite.create()
// Everything on the disk pages: a new folder starts from this checkpoint with nothing to redo.
await db.exec("CHECKPOINT")
const tar = await db.dumpDataDir("gzip")
await db.close()
// Written whole or not at all: builds running at once may make it together.
const partial = `${file}.${process.pid}.partial`
writeFileSync(partial, Buffer.from(await tar.arrayBuffer()))
renameSync(partial, file)
