/**
 * Live create (issue 12 §3): the provider's checkout page (its URL and its own expiry) is kept with the session id,
 * so Kassa's checkout URL can send a visitor there without asking the provider again.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE provider_payments ADD COLUMN checkout_url text, ADD COLUMN checkout_expires_at timestamptz`
})
