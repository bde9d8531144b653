/**
 * The reads of `provider_refunds` and of the `provider_payments` rows that live refunds go through, decoded (a row
 * that does not decode dies: a broken database, as a failed query is). `LiveRefunds` builds them once per layer.
 */
import { Ids, Money } from "@kassa/core"
import { type DateTime, Effect, Option, Schema, Struct } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { ProviderLinkId } from "../providers/ProviderConnector.ts"
import { ProviderPaymentRow } from "./LiveCheckouts.ts"

/** A row of `provider_refunds` (0005_live). */
export const ProviderRefundRow = Schema.Struct({
  refund_id: Ids.RefundId,
  payment_id: Ids.PaymentId,
  link_id: ProviderLinkId,
  // The provider's refund (Stripe: re_…): never empty.
  provider_refund_id: Schema.NullOr(Schema.NonEmptyString),
  attempts: Columns.Integer.check(Schema.isGreaterThanOrEqualTo(0)),
  next_read_at: Columns.NullableTimestamp,
  last_read_at: Columns.NullableTimestamp,
  // What the provider said at the last read or call, as stored (see `answerJson`).
  last_answer: Columns.Json(Schema.Json),
  created_at: Columns.Timestamp,
  updated_at: Columns.Timestamp
})
export type ProviderRefundRow = typeof ProviderRefundRow.Type

/** The provider's part of a live payment, as a refund needs it. */
const RefundTargetRow = ProviderPaymentRow.mapFields(Struct.pick(["link_id", "provider_payment_id"]))
/** What a create call sent again needs: the refund's amount and its payment at the provider. */
const CreateAgainRow = Schema.Struct({
  amount: Columns.Integer.pipe(Schema.decodeTo(Money.Amount)),
  currency: Money.Currency,
  provider_payment_id: Schema.NullOr(Schema.NonEmptyString)
})
const OwnerRow = ProviderPaymentRow.mapFields(Struct.pick(["payment_id"]))

/**
 * The reads of `provider_refunds` and of the `provider_payments` rows refunds go through, decoded (a row that does not
 * decode dies: a broken database, as a failed query is). Built once per layer; exported for the tests.
 */
export const makeRows = (sql: SqlClient.SqlClient) => {
  const byRefundId = SqlSchema.findOneOption({
    Request: Ids.RefundId,
    Result: ProviderRefundRow,
    execute: (refundId) => sql`SELECT * FROM provider_refunds WHERE refund_id = ${refundId}`
  })
  const byProviderRefundId = SqlSchema.findOneOption({
    Request: Schema.String,
    Result: ProviderRefundRow,
    execute: (providerRefundId) => sql`SELECT * FROM provider_refunds WHERE provider_refund_id = ${providerRefundId}`
  })
  const claimDue = SqlSchema.findAll({
    Request: Schema.Struct({ now: Columns.Timestamp, until: Columns.Timestamp, limit: Schema.Int }),
    Result: ProviderRefundRow,
    // Claimed and leased in one short statement; the provider calls happen after its commit.
    execute: ({ now, until, limit }) => sql`
      WITH due AS (
        SELECT refund_id FROM provider_refunds
        WHERE next_read_at IS NOT NULL AND next_read_at <= ${now}
        ORDER BY next_read_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE provider_refunds r
      SET next_read_at = ${until}
      FROM due WHERE r.refund_id = due.refund_id
      RETURNING r.*
    `
  })
  const target = SqlSchema.findOneOption({
    Request: Ids.PaymentId,
    Result: RefundTargetRow,
    execute: (paymentId) =>
      sql`SELECT link_id, provider_payment_id FROM provider_payments WHERE payment_id = ${paymentId}`
  })
  const createAgain = SqlSchema.findOneOption({
    Request: Ids.RefundId,
    Result: CreateAgainRow,
    execute: (refundId) => sql`
      SELECT r.amount, pay.currency, p.provider_payment_id
      FROM refunds r JOIN provider_payments p ON p.payment_id = r.payment_id JOIN payments pay ON pay.id = r.payment_id
      WHERE r.id = ${refundId}
    `
  })
  const owner = SqlSchema.findOneOption({
    Request: Schema.Struct({ providerPaymentId: Schema.String, linkIds: Schema.Array(ProviderLinkId) }),
    Result: OwnerRow,
    execute: ({ providerPaymentId, linkIds }) => sql`
      SELECT payment_id FROM provider_payments
      WHERE provider_payment_id = ${providerPaymentId} AND ${sql.in("link_id", linkIds)}
      LIMIT 1
    `
  })
  return {
    byRefundId: (refundId: Ids.RefundId) => byRefundId(refundId).pipe(Effect.orDie),
    byProviderRefundId: (providerRefundId: string) => byProviderRefundId(providerRefundId).pipe(Effect.orDie),
    claimDue: (options: { readonly now: DateTime.Utc; readonly until: DateTime.Utc; readonly limit: number }) =>
      claimDue(options).pipe(Effect.orDie),
    /** The provider's part of a live payment: its link, and its payment at the provider once paid. */
    target: (paymentId: Ids.PaymentId) => target(paymentId).pipe(Effect.orDie),
    createAgain: (refundId: Ids.RefundId) => createAgain(refundId).pipe(Effect.orDie),
    /** The payment one of these links (an account's, LiveCheckouts.accountLinks) opened whose payment at the
     * provider is this one. */
    owner: (providerPaymentId: string, linkIds: ReadonlyArray<ProviderLinkId>) =>
      owner({ providerPaymentId, linkIds }).pipe(Effect.map(Option.map((row) => row.payment_id)), Effect.orDie)
  }
}
