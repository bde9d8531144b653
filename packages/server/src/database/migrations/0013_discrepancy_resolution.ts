/**
 * How an operator resolved a discrepancy (issue 21 §5: "paid after cancel" with a one-click full refund at the
 * provider): kept apart from `message`, which stays what Kassa detected, so that the same discrepancy read again is
 * still recognised as the one already listed (`LiveCheckouts.recordDiscrepancy` records each once).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE provider_discrepancies ADD COLUMN resolution text`
})
