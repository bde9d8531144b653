/**
 * How a payment was settled (issue 22 §3): `settled_via` names what moved it out of `pending` (the hosted checkout,
 * a simulation, the provider, expiry, a cancel), written by the same statement as that status change; NULL for a
 * payment still pending and for rows settled before this migration. The list is `SettlementSource` in the core,
 * frozen here as it stood (a later source adds itself to the CHECK in its own migration).
 *
 * `audit_log_payment_settlements`: the payment page names the dashboard member who simulated or cancelled a test
 * payment from that payment's audit entry, one index probe instead of a walk through the application's log.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A nullable column without a default: no table rewrite, instant on a table of any size.
  yield* sql`
    ALTER TABLE payments ADD COLUMN settled_via text CHECK (settled_via IN ('checkout', 'api_simulate',
      'dashboard_simulate', 'provider_refused', 'provider_event', 'provider_read', 'operator_read', 'provider_expiry',
      'expiry_sweeper', 'expiry_lazy', 'api_cancel', 'dashboard_cancel'))
  `
  yield* sql`SET LOCAL statement_timeout = 0`
  yield* sql`
    CREATE INDEX audit_log_payment_settlements ON audit_log (target, id DESC)
    WHERE action IN ('payment.simulated', 'payment.cancelled')
  `
})
