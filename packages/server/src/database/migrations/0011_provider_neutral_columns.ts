/**
 * `provider_payments` in the connector boundary's words, so that a second provider (Mollie, decisions §11) fits the
 * same columns: `session_id` (Stripe's Checkout Session) is the provider's `checkout_id`, `payment_intent_id`
 * (Stripe's PaymentIntent) the `provider_payment_id`. Renames only: the rows, the CHECK that ties an open row to its
 * checkout and the indexes follow their columns; the two whose names said session or intent are renamed with them
 * (the unique constraint's index, and the partial index that finds a payment by its provider payment).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE provider_payments RENAME COLUMN session_id TO checkout_id`
  yield* sql`ALTER TABLE provider_payments RENAME COLUMN payment_intent_id TO provider_payment_id`
  yield* sql`ALTER TABLE provider_payments RENAME CONSTRAINT provider_payments_session_id_key TO provider_payments_checkout_id_key`
  yield* sql`ALTER INDEX provider_payments_payment_intent RENAME TO provider_payments_provider_payment`
})
