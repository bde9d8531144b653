/**
 * The dashboards (issue #6): users with a memory-hard password hash and their lock-out state; memberships (one role
 * per user and application); sessions, stored by a keyed hash of their cookie token so a database leak opens no
 * session; the audit log of every dashboard and operator action; and who asked for a live refund.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY,
      -- Stored lower-case (Credentials.normalizeEmail): one account per address whatever its spelling.
      email text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
      password_hash text NOT NULL,
      operator_admin boolean NOT NULL DEFAULT false,
      failed_logins integer NOT NULL DEFAULT 0,
      locked_until timestamptz,
      created_at timestamptz NOT NULL,
      last_login_at timestamptz,
      -- Set by an operator: sign-in is refused and sessions are gone; the row stays for history (audit, refunds).
      deactivated_at timestamptz
    )
  `
  yield* sql`
    CREATE TABLE memberships (
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      application_id uuid NOT NULL REFERENCES applications (id),
      role text NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
      created_at timestamptz NOT NULL,
      PRIMARY KEY (user_id, application_id)
    )
  `
  yield* sql`CREATE INDEX memberships_application ON memberships (application_id)`
  yield* sql`
    CREATE TABLE sessions (
      -- HMAC-SHA256 of the cookie's token under the server secret.
      token_hash text PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      ip text,
      user_agent text
    )
  `
  yield* sql`CREATE INDEX sessions_user ON sessions (user_id)`
  yield* sql`
    CREATE TABLE audit_log (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      at timestamptz NOT NULL,
      -- A user's e-mail address at the time, or "admin token" for the operator API.
      actor text NOT NULL,
      user_id uuid,
      action text NOT NULL,
      application_id uuid,
      target text,
      details jsonb NOT NULL DEFAULT '{}',
      ip text
    )
  `
  // The log is read newest first by id (its primary key), whole or filtered by application or action; the action
  // index also lists the actions there are (AuditLog.actions) without reading every entry.
  yield* sql`CREATE INDEX audit_log_application ON audit_log (application_id, id DESC)`
  yield* sql`CREATE INDEX audit_log_action ON audit_log (action, id DESC)`
  yield* sql`ALTER TABLE refunds ADD COLUMN requested_by uuid REFERENCES users (id)`
  yield* sql`CREATE INDEX deliveries_newest ON deliveries (created_at DESC, id DESC)`
  yield* sql`CREATE INDEX payments_newest ON payments (created_at DESC, seq DESC)`
  yield* sql`CREATE INDEX payments_order_reference_prefix ON payments (order_reference text_pattern_ops)`
})
