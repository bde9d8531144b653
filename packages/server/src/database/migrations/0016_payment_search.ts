/**
 * The dashboards' payment search (issue 22 §3): a customer's payments by e-mail address, exactly but for case, in
 * list order at 1,000,000 payments. `payments_customer_email` serves an application's list (one range per mode, as
 * payments_list does), `payments_customer_email_newest` the operator's across applications. The address leads both:
 * a search by it reads that customer's entries only, whichever index the planner takes (a mode without an
 * application is no leading column of an index, so it could make a planner read all of one). Only payments that name
 * an address are indexed: a filter on one (`lower(…) = $1`, strict) implies the predicate, and the many payments
 * without one cost nothing. The creation-time range rides the lists' existing (…, created_at, seq) indexes; the
 * amount range filters what those walk (docs/decisions.md, "Payment search").
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Index builds grow with the table: the connections' statement timeout bounds requests, not an upgrade (LOCAL ends
  // with the migrator's transaction).
  yield* sql`SET LOCAL statement_timeout = 0`
  yield* sql`
    CREATE INDEX payments_customer_email
    ON payments (lower(customer ->> 'email'), application_id, mode, created_at DESC, seq DESC)
    WHERE customer ->> 'email' IS NOT NULL
  `
  yield* sql`
    CREATE INDEX payments_customer_email_newest ON payments (lower(customer ->> 'email'), created_at DESC, seq DESC)
    WHERE customer ->> 'email' IS NOT NULL
  `
  yield* sql`CREATE INDEX payments_amount ON payments (amount)`
})
