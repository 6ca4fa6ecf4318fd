import { Layer } from "effect"
import { MigrationsLive } from "./Migrations.js"
import { SqlLive } from "./Sql.js"
import { StartupTurnLive } from "./StartupTurn.js"

/** The configured database, migrated to the current schema in this process's start-up turn. */
export const DatabaseLive = MigrationsLive.pipe(Layer.provideMerge(StartupTurnLive), Layer.provideMerge(SqlLive))
