import { Layer } from "effect"
import { MigrationsLive } from "./Migrations.js"
import { SqlLive } from "./Sql.js"

/** The configured database, migrated to the current schema. */
export const DatabaseLive = MigrationsLive.pipe(Layer.provideMerge(SqlLive))
