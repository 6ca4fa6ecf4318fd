import { PGlite } from "@electric-sql/pglite"
const dir = process.argv[2]
if (process.argv[3] === "create") { await PGlite.create(dir); console.log("created"); process.exit(0) }
try { const db = await PGlite.create(dir); console.log("opened", (await db.query("select 1 as x")).rows); } catch (e) { console.log("FAILED", String(e)) }
