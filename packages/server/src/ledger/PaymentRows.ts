/**
 * The `payments` and `refunds` tables as the server reads them: row schemas on the core's schemas (a row the domain
 * could not have written fails to decode instead of reaching a caller), their decoders made once, the mapping to the
 * domain's payment, and the list query's fragments, which the dashboards' search shares. Statements and writes are
 * PaymentRepository's.
 */
import { Ids, Mode, Money, Payment } from "@kassa/core"
import { DateTime, Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import * as Columns from "../database/Columns.ts"

/** A payment as stored: the domain object plus what only the server needs. */
export interface StoredPayment {
  readonly applicationId: Ids.ApplicationId
  readonly payment: Payment.Payment
  readonly updatedAt: DateTime.Utc
}

/**
 * A status filter as the branches a list reads, each a set of extra clauses on `payments`: `expired` also finds the
 * payments still `pending` past their expiry (the list expires them before showing them), from the due index.
 */
export const statusBranches = (
  sql: SqlClient.SqlClient,
  status: Payment.PaymentStatus | undefined,
  now: DateTime.Utc
): ReadonlyArray<ReadonlyArray<Statement.Fragment>> =>
  status === undefined
    ? [[]]
    : status === "expired"
      ? [[sql`status = 'expired'`], [sql`status = 'pending'`, sql`expires_at <= ${DateTime.toDateUtc(now)}`]]
      : [[sql`status = ${status}`]]

/**
 * Newest first over `payments`: `columns` of the rows matching `clauses` and any one of `branches`, at most `limit`.
 * Each branch is its own `ORDER BY … LIMIT` subquery, so each walks an index in list order and stops after `limit`
 * rows; their union is sorted again (an OR or an IN over two index ranges would sort every matching row first).
 */
export const newestFirst = (
  sql: SqlClient.SqlClient,
  columns: Statement.Fragment,
  clauses: ReadonlyArray<Statement.Fragment>,
  branches: ReadonlyArray<ReadonlyArray<Statement.Fragment>>,
  limit: number
) => {
  const select = (extra: ReadonlyArray<Statement.Fragment>) => {
    const all = [...clauses, ...extra]
    return sql`
      SELECT ${columns} FROM payments WHERE ${all.length === 0 ? sql`true` : sql.and(all)}
      ORDER BY created_at DESC, seq DESC LIMIT ${limit}
    `
  }
  if (branches.length === 1) return select(branches[0] ?? [])
  const union = branches.map((extra) => sql`(${select(extra)})`)
  return sql`
    SELECT * FROM (${sql.join(" UNION ALL ", false)(union)}) AS branches
    ORDER BY created_at DESC, seq DESC LIMIT ${limit}
  `
}

// Rows of this module are read on every GET /v1/payments/{id}, create and list, so their schemas are chosen for cost
// (bench/rows.ts measures one payment row with two refunds): nullable columns try `null` first (`Columns.orNull`).

/**
 * A row of `refunds` as a payment's `refund_list` holds it (JSON: timestamps as ISO text, bigints as numbers), or
 * as columns ({@link RefundOfPaymentRow}). Columns not listed are left out.
 */
export const RefundRow = Schema.Struct({
  id: Ids.RefundId,
  amount: Columns.Integer,
  status: Payment.RefundStatus,
  reason: Columns.orNull(Schema.String),
  created_at: Columns.Timestamp,
  confirmed_at: Columns.NullableTimestamp
})
export type RefundRow = typeof RefundRow.Type

/** A `refunds` row read for several payments at once: with the payment it belongs to. */
export const RefundOfPaymentRow = Schema.Struct({ ...RefundRow.fields, payment_id: Ids.PaymentId })

/**
 * A row of `payments`, with the core's schemas for what it constrains (status, mode, currency, method, locale, the
 * JSON objects), so that a row the domain could not have written fails to decode instead of reaching a caller.
 * `refund_list` is there when read with `withRefundList`: NULL when the payment has no refunds.
 */
export const PaymentRow = Schema.Struct({
  id: Ids.PaymentId,
  application_id: Ids.ApplicationId,
  mode: Mode.Mode,
  status: Payment.PaymentStatus,
  amount: Columns.Integer,
  refunded_amount: Columns.Integer,
  currency: Money.Currency,
  method: Money.Method,
  order_reference: Schema.String,
  description: Columns.orNull(Schema.String),
  customer: Payment.Customer,
  payer: Columns.orNull(Payment.Payer),
  locale: Money.Locale,
  return_url: Columns.orNull(Schema.String),
  metadata: Payment.Metadata,
  expires_at: Columns.Timestamp,
  paid_at: Columns.NullableTimestamp,
  created_at: Columns.Timestamp,
  updated_at: Columns.Timestamp,
  refund_list: Schema.optionalKey(Columns.orNull(Schema.Array(RefundRow)))
})
export type PaymentRow = typeof PaymentRow.Type

const IdRow = Schema.Struct({ id: Ids.PaymentId })
const PaymentIdRow = Schema.Struct({ payment_id: Ids.PaymentId })
const CursorRow = Schema.Struct({ created_at: Columns.Timestamp, seq: Columns.Integer })
const OpeningRow = Schema.Struct({ linked: Schema.Boolean, inserted: Schema.Boolean })

// Each decoder is made once, here: `Columns.all` makes its `SqlSchema` on every call, which compiles the array's
// parser again each time (half as much again per payment row, bench/rows.ts).
export const decodePayments = Schema.decodeUnknownEffect(Schema.Array(PaymentRow))
export const decodeRefunds = Schema.decodeUnknownEffect(Schema.Array(RefundOfPaymentRow))
export const decodeIds = Schema.decodeUnknownEffect(Schema.Array(IdRow))
export const decodePaymentIds = Schema.decodeUnknownEffect(Schema.Array(PaymentIdRow))
export const decodeCursors = Schema.decodeUnknownEffect(Schema.Array(CursorRow))
/** `insertOpening` selects exactly one row. */
export const decodeOpening = Schema.decodeUnknownEffect(Schema.Tuple([OpeningRow]))

export const refundOf = (row: RefundRow): Payment.Refund => ({
  id: row.id,
  amount: row.amount,
  status: row.status,
  reason: row.reason,
  created_at: row.created_at,
  confirmed_at: row.confirmed_at
})

/** The stored payment of a decoded row, with its refunds (oldest first) and its checkout page's address. */
export const storedOf = (
  row: PaymentRow,
  refunds: ReadonlyArray<Payment.Refund>,
  checkoutUrl: string
): StoredPayment => ({
  applicationId: row.application_id,
  updatedAt: row.updated_at,
  payment: {
    id: row.id,
    status: row.status,
    mode: row.mode,
    amount: row.amount,
    refunded_amount: row.refunded_amount,
    currency: row.currency,
    method: row.method,
    order_reference: row.order_reference,
    description: row.description,
    customer: row.customer,
    payer: row.payer,
    locale: row.locale,
    return_url: row.return_url,
    metadata: row.metadata,
    checkout_url: checkoutUrl,
    expires_at: row.expires_at,
    paid_at: row.paid_at,
    created_at: row.created_at,
    refunds
  }
})
