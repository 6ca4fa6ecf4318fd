// Makes the embedded database's template (DataDirTemplate.ts): a new PGlite database with every migration run,
// as a gzipped tar of its data folder. A new data folder is unpacked from it instead of running initdb in
// WebAssembly in the server's process (a second PGlite instance, about 770 MB) and then the migrations. Built and
// run by the build (scripts/build.mjs) in a process of its own.
//
//   node pgdata-template.js <file.tar.gz>
import { renameSync, writeFileSync } from "node:fs"
import { migratedDataDirTar } from "./TemplateMaking.js"

const file = process.argv[2]
if (!file) throw new Error("usage: node pgdata-template.js <file.tar.gz>")
const tar = await migratedDataDirTar("gzip")
// Written whole or not at all: builds running at once may make it together.
const partial = `${file}.${process.pid}.partial`
writeFileSync(partial, tar)
renameSync(partial, file)
