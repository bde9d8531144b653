/**
 * Retention (issue 14 §4): one index per pruning query, so each batch reads its oldest rows from an index and never
 * scans a table. Finished deliveries by the time they finished (`updated_at`); events, audit entries and sessions by
 * their time column. Idempotency keys already have `idempotency_keys_expiry`; the event's delivery is found through
 * the unique `deliveries.event_id`, its payment through the payment's primary key.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Index builds grow with the tables: the connections' statement timeout bounds requests, not an upgrade (LOCAL ends
  // with the migrator's transaction).
  yield* sql`SET LOCAL statement_timeout = 0`
  yield* sql`CREATE INDEX deliveries_finished ON deliveries (updated_at) WHERE status IN ('succeeded', 'failed')`
  yield* sql`CREATE INDEX events_created ON events (created_at)`
  yield* sql`CREATE INDEX audit_log_at ON audit_log (at)`
  yield* sql`CREATE INDEX sessions_expiry ON sessions (expires_at)`
})
