import { Migrator } from "@effect/sql"
import { Layer } from "effect"
import initial from "./migrations/0001_initial.js"
import listAccessPaths from "./migrations/0002_list_access_paths.js"
import userPasswords from "./migrations/0003_user_passwords.js"
import identityAndAccess from "./migrations/0004_identity_and_access.js"
import socialAccounts from "./migrations/0005_social_accounts.js"
import postsAndCredits from "./migrations/0006_posts_and_credits.js"
import scheduling from "./migrations/0007_scheduling.js"
import slotsAndLinks from "./migrations/0008_slots_and_links.js"
import publishRecovery from "./migrations/0009_publish_recovery.js"
import dueDispatch from "./migrations/0010_due_dispatch.js"

const run = Migrator.make({})

/** Brings the schema up to date; static imports keep the bundle free of a file-system loader. */
export const runMigrations = run({
  loader: Migrator.fromRecord({
    "0001_initial": initial,
    "0002_list_access_paths": listAccessPaths,
    "0003_user_passwords": userPasswords,
    "0004_identity_and_access": identityAndAccess,
    "0005_social_accounts": socialAccounts,
    "0006_posts_and_credits": postsAndCredits,
    "0007_scheduling": scheduling,
    "0008_slots_and_links": slotsAndLinks,
    "0009_publish_recovery": publishRecovery,
    "0010_due_dispatch": dueDispatch
  }),
  table: "postline_migrations"
})

export const MigrationsLive = Layer.effectDiscard(runMigrations)
