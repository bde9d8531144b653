/**
 * The merchant events API (decisions §12): its list reads an index in its order at 1,000,000 events per
 * application. `events_list` serves the list and its time range (walked backwards: newest first, `id` breaking
 * ties); `events_type` the same with `type`. A payment's events already have `events_payment`.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Index builds grow with the table: the connections' statement timeout bounds requests, not an upgrade (LOCAL ends
  // with the migrator's transaction).
  yield* sql`SET LOCAL statement_timeout = 0`
  yield* sql`CREATE INDEX events_list ON events (application_id, mode, created_at, id)`
  yield* sql`CREATE INDEX events_type ON events (application_id, mode, event, created_at, id)`
})
