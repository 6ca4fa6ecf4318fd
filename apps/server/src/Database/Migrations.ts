import { Migrator, type SqlClient } from "@effect/sql"
import { type Effect, Layer } from "effect"
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
import mediaLibrary from "./migrations/0011_media_library.js"
import assetUploads from "./migrations/0012_asset_uploads.js"
import publishVisibility from "./migrations/0013_publish_visibility.js"
import billing from "./migrations/0014_billing.js"
import analytics from "./migrations/0015_analytics.js"
import meteredUsage from "./migrations/0016_metered_usage.js"
import billingReconciliation from "./migrations/0017_billing_reconciliation.js"
import scheduledTargets from "./migrations/0018_scheduled_targets.js"
import storedMediaHashes from "./migrations/0019_stored_media_hashes.js"
import uploadClaims from "./migrations/0020_upload_claims.js"
import threadsAndDeletion from "./migrations/0021_threads_and_deletion.js"
import accountConnects from "./migrations/0022_account_connects.js"
import botNetworks from "./migrations/0023_bot_networks.js"

const run = Migrator.make({})

/** Every migration by name, in order; static imports keep the bundle free of a file-system loader. */
export const migrations = {
  "0001_initial": initial,
  "0002_list_access_paths": listAccessPaths,
  "0003_user_passwords": userPasswords,
  "0004_identity_and_access": identityAndAccess,
  "0005_social_accounts": socialAccounts,
  "0006_posts_and_credits": postsAndCredits,
  "0007_scheduling": scheduling,
  "0008_slots_and_links": slotsAndLinks,
  "0009_publish_recovery": publishRecovery,
  "0010_due_dispatch": dueDispatch,
  "0011_media_library": mediaLibrary,
  "0012_asset_uploads": assetUploads,
  "0013_publish_visibility": publishVisibility,
  "0014_billing": billing,
  "0015_analytics": analytics,
  "0016_metered_usage": meteredUsage,
  "0017_billing_reconciliation": billingReconciliation,
  "0018_scheduled_targets": scheduledTargets,
  "0019_stored_media_hashes": storedMediaHashes,
  "0020_upload_claims": uploadClaims,
  "0021_threads_and_deletion": threadsAndDeletion,
  "0022_account_connects": accountConnects,
  "0023_bot_networks": botNetworks
}

/** Runs `these` migrations that have not run yet: all of them, unless a test stops at an earlier schema. */
export const runMigrationsOf = (these: Record<string, Effect.Effect<unknown, unknown, SqlClient.SqlClient>>) =>
  run({ loader: Migrator.fromRecord(these), table: "postline_migrations" })

/** Brings the schema up to date. */
export const runMigrations = runMigrationsOf(migrations)

export const MigrationsLive = Layer.effectDiscard(runMigrations)
