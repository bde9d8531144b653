/**
 * Trace context (issue 14 §1): an event keeps the W3C `traceparent` of the request (or background round) that
 * caused it, so each webhook attempt's span links to that trace though it runs later, in another fiber or process.
 * Nullable and without a default: adding it rewrites no row, whatever the table's size.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE events ADD COLUMN trace_context text`
})
