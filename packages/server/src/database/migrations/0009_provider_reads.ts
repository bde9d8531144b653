/**
 * Two reads of live checkouts that read every row in flight (bench/scale.ts (d), 1,000,000 payments, 2,000 | 50,000
 * checkouts in flight):
 *
 * - The operator's overdue reads (dashboard `ProviderQueries.overdueReads`) list the payments and refunds with a
 *   planned read, longest waiting first (`coalesce(last_read_at, …)`), a page at a time. `provider_payments_due` and
 *   `provider_refunds_due` find those rows, but in `next_read_at` order, so every row in flight was joined to its
 *   payment and sorted before the LIMIT: 52 | 73 ms, 8,860 | 10,504 buffers, growing with the backlog, which is
 *   largest in a provider outage, when the page is read. The `…_waiting` indexes hold the rows in flight in the
 *   page's order, so a page reads its rows and stops: 1.2 | 1.4 ms, 477 | 481 buffers.
 * - The reconciler's clean-up of failed creates (`LiveCheckouts.claimCleanup`, every 30 s in every process) wants the
 *   due `not_opened` rows, but `provider_payments_due` holds every row with a planned read, so a round with none due
 *   filtered every checkout in flight: 5.4 | 13.5 ms, 2,185 | 3,355 buffers. `provider_payments_cleanup_due` holds
 *   only its rows: 0.06 | 0.10 ms, 1 buffer.
 *
 * All three are partial (rows in flight only), so small; building them scans each table once.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX provider_payments_waiting ON provider_payments ((coalesce(last_read_at, visited_at, created_at)) DESC)
    WHERE next_read_at IS NOT NULL
  `
  yield* sql`
    CREATE INDEX provider_refunds_waiting ON provider_refunds ((coalesce(last_read_at, created_at)) DESC)
    WHERE next_read_at IS NOT NULL
  `
  yield* sql`
    CREATE INDEX provider_payments_cleanup_due ON provider_payments (next_read_at)
    WHERE state = 'not_opened' AND next_read_at IS NOT NULL
  `
})
