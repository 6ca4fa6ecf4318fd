import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The media library: a tree of folders per team, the assets in it, and the media of posts. Each organization's stored bytes are
 * kept on its row by trigger, so that an upload checks its quota on one locked row. Objects in storage
 * that nothing will use any more wait in `storage_garbage` until a sweep removes them: those of a deleted
 * asset (by trigger, however the row went: its team's deletion too) and those of an upload that never
 * finished (written there before the upload starts, taken out when its asset is saved).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE folders (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      parent_id uuid,
      name text COLLATE "C" NOT NULL,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now(),
      UNIQUE (team_id, id),
      UNIQUE NULLS NOT DISTINCT (team_id, parent_id, name),
      FOREIGN KEY (team_id, parent_id) REFERENCES folders (team_id, id)
    )`
  yield* sql`CREATE INDEX folders_team_created_at ON folders (team_id, created_at, id)`
  yield* sql`CREATE INDEX folders_parent ON folders (parent_id)`
  yield* sql`ALTER TABLE organizations ADD COLUMN media_bytes bigint NOT NULL DEFAULT 0`
  yield* sql`
    CREATE TABLE assets (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      folder_id uuid,
      name text COLLATE "C" NOT NULL,
      kind text NOT NULL CHECK (kind IN ('image', 'video')),
      content_type text NOT NULL,
      size bigint NOT NULL CHECK (size >= 0),
      stored_bytes bigint NOT NULL CHECK (stored_bytes >= size),
      sha256 text NOT NULL,
      width integer,
      height integer,
      alt_text text,
      storage_key text NOT NULL,
      thumbnail_key text,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now(),
      UNIQUE (team_id, sha256),
      UNIQUE (team_id, id),
      FOREIGN KEY (team_id, folder_id) REFERENCES folders (team_id, id)
    )`
  yield* sql`CREATE INDEX assets_team_created_at ON assets (team_id, created_at, id)`
  yield* sql`CREATE INDEX assets_team_updated_at ON assets (team_id, updated_at, id)`
  yield* sql`CREATE INDEX assets_team_name ON assets (team_id, name, id)`
  yield* sql`CREATE INDEX assets_folder ON assets (folder_id)`
  // A post's media, in order, each an asset of the post's own team; the post's alt text overrides the asset's.
  yield* sql`
    CREATE TABLE post_media (
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      position smallint NOT NULL,
      team_id uuid NOT NULL,
      asset_id uuid NOT NULL,
      alt_text text,
      PRIMARY KEY (post_id, position),
      UNIQUE (post_id, asset_id),
      FOREIGN KEY (team_id, asset_id) REFERENCES assets (team_id, id) ON DELETE CASCADE
    )`
  yield* sql`CREATE INDEX post_media_asset ON post_media (asset_id)`
  yield* sql`
    CREATE TABLE storage_garbage (
      key text PRIMARY KEY,
      not_before timestamptz(3) NOT NULL
    )`
  yield* sql`CREATE INDEX storage_garbage_due ON storage_garbage (not_before)`
  yield* sql`
    CREATE FUNCTION assets_track_storage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        UPDATE organizations SET media_bytes = media_bytes + NEW.stored_bytes WHERE id = NEW.organization_id;
        RETURN NEW;
      END IF;
      UPDATE organizations SET media_bytes = media_bytes - OLD.stored_bytes WHERE id = OLD.organization_id;
      INSERT INTO storage_garbage (key, not_before)
        SELECT k, now() FROM unnest(ARRAY[OLD.storage_key, OLD.thumbnail_key]) AS k WHERE k IS NOT NULL
        ON CONFLICT (key) DO UPDATE SET not_before = excluded.not_before;
      RETURN OLD;
    END $$`
  yield* sql`
    CREATE TRIGGER assets_track_storage AFTER INSERT OR DELETE ON assets
      FOR EACH ROW EXECUTE FUNCTION assets_track_storage()`
})
