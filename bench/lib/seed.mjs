// The benchmark population, as one plain-SQL script (generate_series and
// INSERT ... SELECT) that runs unchanged on PostgreSQL and on PGlite.
import { createHash, randomBytes, randomUUID } from "node:crypto"

/** Population sizes. `full` is the one the issue asks for. */
export const populations = {
  full: { benchOrgs: 1000, teamsPerBenchOrg: 10, otherOrgs: 100_000, teamsPerOtherOrg: 5, otherUsers: 10_000 },
  embedded: { benchOrgs: 1000, teamsPerBenchOrg: 10, otherOrgs: 10_000, teamsPerOtherOrg: 5, otherUsers: 1_000 },
  smoke: { benchOrgs: 40, teamsPerBenchOrg: 10, otherOrgs: 500, teamsPerOtherOrg: 5, otherUsers: 50 },
  // The scheduler scenario needs the benchmark user with one team, and little else.
  scheduler: { benchOrgs: 1, teamsPerBenchOrg: 1, otherOrgs: 10, teamsPerOtherOrg: 1, otherUsers: 5 }
}

/** The benchmark user: its token is generated the way the server does (plt_ + base64url(32 bytes)). */
export const makeBenchUser = () => {
  const token = "plt_" + randomBytes(32).toString("base64url")
  return {
    id: randomUUID(),
    email: "bench@example.com",
    name: "Benchmark User",
    token,
    tokenHash: createHash("sha256").update(token).digest("hex")
  }
}

const uuidRe = /^[0-9a-f-]{36}$/
const hexRe = /^[0-9a-f]{64}$/

/**
 * The whole population. Timestamps are spread over two years and rows are
 * inserted in creation order, as a live database would have them; the
 * benchmark user's organizations are interleaved with everyone else's.
 *
 * Roles of the benchmark user: owner of most of its organizations, admin of
 * every tenth (i % 10 = 0), plain member of i % 10 = 5 (so S4 picks teams
 * only where it manages).
 */
export const seedSql = (pop, user) => {
  if (!uuidRe.test(user.id) || !hexRe.test(user.tokenHash)) throw new Error("bad benchmark user")
  const U = pop.otherUsers
  const otherUser = (expr) => `md5('user:' || ((${expr}) % ${U} + 1))::uuid`
  return `
SELECT setseed(0.42);

INSERT INTO users (id, email, name, created_at)
  SELECT md5('user:' || i)::uuid, 'user' || i || '@example.com', 'User ' || i, now() - random() * interval '800 days'
  FROM generate_series(1, ${U}) i;
INSERT INTO users (id, email, name, created_at)
  VALUES ('${user.id}', '${user.email}', '${user.name}', now() - interval '800 days');

INSERT INTO access_tokens (token_hash, user_id, created_at)
  SELECT encode(sha256(convert_to('token:' || i, 'UTF8')), 'hex'), md5('user:' || i)::uuid, now() - random() * interval '800 days'
  FROM generate_series(1, ${U}) i;
INSERT INTO access_tokens (token_hash, user_id) VALUES ('${user.tokenHash}', '${user.id}');

CREATE TEMP TABLE seed_orgs AS
  SELECT md5('org:' || i)::uuid AS id, i, false AS bench,
         'Organization ' || i || CASE WHEN i % 17 = 0 THEN ' "Société" ✓' ELSE '' END AS name,
         now() - random() * interval '730 days' AS created_at
  FROM generate_series(1, ${pop.otherOrgs}) i
  UNION ALL
  SELECT md5('bench-org:' || i)::uuid, i, true,
         'Bench Org ' || i || CASE WHEN i % 17 = 0 THEN ' "Société" ✓' ELSE '' END,
         now() - random() * interval '730 days'
  FROM generate_series(1, ${pop.benchOrgs}) i;

INSERT INTO organizations (id, name, billing_email, onboarding_data, payment_customer_id, payment_subscription_id,
    payment_payment_method_id, payment_metered_subscription_item_id, credits_balance, reserved_credits,
    auto_recharge_enabled, auto_recharge_threshold, auto_recharge_amount, is_subscribed, subscription_status,
    subscription_plan, subscription_started_at, subscription_ends_at, subscription_current_period_end,
    created_at, updated_at)
  SELECT s.id, s.name,
    CASE WHEN s.i % 2 = 0 THEN 'billing+' || s.i || '@example.com' END,
    CASE s.i % 3
      WHEN 0 THEN json_build_object(
        'version', 1, 'status', 'completed', 'currentStep', 'completed',
        'completedSteps', json_build_array('organization_profile', 'job_role', 'workspace_setup', 'goals', 'mcp_cli_setup', 'spend_cap'),
        'organizationProfile', json_build_object('displayName', left(s.name, 64), 'jobRole', 'founder_or_owner'),
        'workspaceProfile', json_build_object('teamName', 'Main team', 'website', NULL),
        'goals', json_build_object('primaryGoal', 'social_media_marketing', 'teamSize', '6-20'),
        'completedAt', to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      WHEN 1 THEN json_build_object(
        'version', 1, 'status', 'in_progress', 'currentStep', 'goals',
        'completedSteps', json_build_array('organization_profile', 'job_role', 'workspace_setup'),
        'workspaceProfile', json_build_object('teamName', 'Main team', 'website', 'https://example.com'))
    END,
    CASE WHEN s.i % 4 = 0 THEN 'cus_' || substr(md5('cus' || s.i), 1, 14) END,
    CASE WHEN s.i % 4 = 0 THEN 'sub_' || substr(md5('sub' || s.i), 1, 14) END,
    CASE WHEN s.i % 4 = 0 THEN 'pm_' || substr(md5('pm' || s.i), 1, 14) END,
    CASE WHEN s.i % 4 = 0 THEN 'si_' || substr(md5('si' || s.i), 1, 14) END,
    (s.i * 37) % 100000,
    -- Held credits never exceed the balance (a constraint of the schema).
    CASE WHEN s.i % 4 = 0 THEN least(250, (s.i * 37) % 100000) ELSE 0 END,
    s.i % 8 = 0,
    CASE WHEN s.i % 8 = 0 THEN 1000 END,
    CASE WHEN s.i % 8 = 0 THEN 10000 END,
    s.i % 4 = 0,
    (ARRAY['active', 'inactive', 'trialing', 'canceled'])[s.i % 4 + 1],
    CASE s.i % 4 WHEN 0 THEN 'pro' WHEN 2 THEN 'trial' END,
    CASE WHEN s.i % 4 <> 1 THEN s.created_at + interval '1 day' END,
    CASE WHEN s.i % 4 = 3 THEN s.created_at + interval '31 days' END,
    CASE WHEN s.i % 4 = 0 THEN now() + (s.i % 30) * interval '1 day' END,
    s.created_at,
    s.created_at + random() * (now() - s.created_at)
  FROM seed_orgs s
  ORDER BY s.created_at;

-- Teams before memberships: each membership's triggers then derive its rows in one statement.
INSERT INTO teams (organization_id, name, website, link_tracking_override, timezone, created_at, updated_at)
  SELECT t.organization_id, t.name, t.website, t.link_tracking_override, t.timezone, t.created_at,
         t.created_at + random() * (now() - t.created_at)
  FROM (
    SELECT s.id AS organization_id,
      'Team ' || k || ' of ' || CASE WHEN s.bench THEN 'bench org ' ELSE 'org ' END || s.i AS name,
      CASE WHEN k % 2 = 0 THEN 'https://team' || k || '-' || s.i || '.example.com' END AS website,
      CASE k % 3 WHEN 1 THEN true WHEN 2 THEN false END AS link_tracking_override,
      (ARRAY[NULL, 'Europe/Paris', 'America/New_York', 'UTC'])[k % 4 + 1] AS timezone,
      s.created_at + random() * (now() - s.created_at) AS created_at
    FROM seed_orgs s
    CROSS JOIN LATERAL generate_series(1, CASE WHEN s.bench THEN ${pop.teamsPerBenchOrg} ELSE ${pop.teamsPerOtherOrg} END) k
  ) t
  ORDER BY t.created_at;

-- Everyone else's organizations have one owner each; the benchmark user's have it alone.
INSERT INTO memberships (user_id, organization_id, role, created_at, updated_at)
  SELECT ${otherUser("s.i - 1")}, s.id, 'owner', s.created_at, s.created_at FROM seed_orgs s WHERE NOT s.bench;
INSERT INTO memberships (user_id, organization_id, role, created_at, updated_at)
  SELECT '${user.id}'::uuid, s.id, CASE s.i % 10 WHEN 0 THEN 'admin' WHEN 5 THEN 'member' ELSE 'owner' END,
         s.created_at, s.created_at
  FROM seed_orgs s WHERE s.bench;

DROP TABLE seed_orgs;
`
}
