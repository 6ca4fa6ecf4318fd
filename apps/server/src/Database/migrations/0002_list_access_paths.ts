import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Keyset pages over "the organizations of a user" and "the teams of a user's
 * organizations" must be one index range scan whatever the user's size, so
 * each membership carries its organization's sort keys and `team_access` holds
 * a row per (member, team) with the team's sort keys. Triggers keep the copies
 * in step with the originals inside the same transaction.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE memberships
      ADD COLUMN organization_name text COLLATE "C",
      ADD COLUMN organization_created_at timestamptz(3),
      ADD COLUMN organization_updated_at timestamptz(3)`
  yield* sql`
    UPDATE memberships m
    SET organization_name = o.name, organization_created_at = o.created_at, organization_updated_at = o.updated_at
    FROM organizations o WHERE o.id = m.organization_id`
  yield* sql`
    ALTER TABLE memberships
      ALTER COLUMN organization_name SET NOT NULL,
      ALTER COLUMN organization_created_at SET NOT NULL,
      ALTER COLUMN organization_updated_at SET NOT NULL`
  yield* sql`
    CREATE FUNCTION memberships_copy_organization() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT o.name, o.created_at, o.updated_at
      INTO NEW.organization_name, NEW.organization_created_at, NEW.organization_updated_at
      FROM organizations o WHERE o.id = NEW.organization_id;
      RETURN NEW;
    END $$`
  yield* sql`
    CREATE TRIGGER memberships_copy_organization BEFORE INSERT ON memberships
    FOR EACH ROW EXECUTE FUNCTION memberships_copy_organization()`
  yield* sql`
    CREATE FUNCTION organizations_sync_memberships() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE memberships SET organization_name = NEW.name, organization_updated_at = NEW.updated_at
      WHERE organization_id = NEW.id;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER organizations_sync_memberships AFTER UPDATE OF name, updated_at ON organizations
    FOR EACH ROW EXECUTE FUNCTION organizations_sync_memberships()`

  yield* sql`
    CREATE TABLE team_access (
      user_id uuid NOT NULL,
      organization_id uuid NOT NULL,
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      PRIMARY KEY (user_id, team_id),
      FOREIGN KEY (user_id, organization_id) REFERENCES memberships (user_id, organization_id) ON DELETE CASCADE
    )`
  yield* sql`
    INSERT INTO team_access (user_id, organization_id, team_id, name, created_at, updated_at)
    SELECT m.user_id, t.organization_id, t.id, t.name, t.created_at, t.updated_at
    FROM teams t JOIN memberships m ON m.organization_id = t.organization_id`
  yield* sql`CREATE INDEX team_access_team ON team_access (team_id)`
  yield* sql`CREATE INDEX team_access_membership ON team_access (organization_id, user_id)`
  yield* sql`
    CREATE FUNCTION teams_grant_access() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO team_access (user_id, organization_id, team_id, name, created_at, updated_at)
      SELECT m.user_id, NEW.organization_id, NEW.id, NEW.name, NEW.created_at, NEW.updated_at
      FROM memberships m WHERE m.organization_id = NEW.organization_id;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER teams_grant_access AFTER INSERT ON teams
    FOR EACH ROW EXECUTE FUNCTION teams_grant_access()`
  yield* sql`
    CREATE FUNCTION teams_sync_access() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE team_access SET name = NEW.name, updated_at = NEW.updated_at WHERE team_id = NEW.id;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER teams_sync_access AFTER UPDATE OF name, updated_at ON teams
    FOR EACH ROW EXECUTE FUNCTION teams_sync_access()`
  yield* sql`
    CREATE FUNCTION memberships_grant_team_access() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO team_access (user_id, organization_id, team_id, name, created_at, updated_at)
      SELECT NEW.user_id, t.organization_id, t.id, t.name, t.created_at, t.updated_at
      FROM teams t WHERE t.organization_id = NEW.organization_id;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER memberships_grant_team_access AFTER INSERT ON memberships
    FOR EACH ROW EXECUTE FUNCTION memberships_grant_team_access()`

  for (const column of ["created_at", "updated_at", "name"]) {
    yield* sql`CREATE INDEX ${sql(`memberships_user_organization_${column}`)}
      ON memberships (user_id, ${sql(`organization_${column}`)}, organization_id)`
    yield* sql`CREATE INDEX ${sql(`team_access_user_${column}`)} ON team_access (user_id, ${sql(column)}, team_id)`
  }
})
