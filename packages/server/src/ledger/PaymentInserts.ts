/**
 * The statements that add a payment, run by PaymentRepository (`insert`, `insertOpening`): a create's INSERT, whose
 * arbiter for rule 5 is the partial unique index, and a live create's INSERT together with its provider opening, in
 * one statement that also checks the provider link. Kept apart from the repository's reads, locks and updates.
 */
import { PgTypes } from "@effect/sql-pg"
import type { Ids, Payment, SettlementSource } from "@kassa/core"
import { type DateTime, Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import * as FixedStatement from "../database/FixedStatement.ts"
import { insertColumns } from "./PaymentColumns.ts"
import { decodeOpening } from "./PaymentRows.ts"

/** A new payment's application and Idempotency-Key; created settled (refused), what settled it. */
export interface NewOwner {
  readonly applicationId: Ids.ApplicationId
  readonly idempotencyKey: string | null
  readonly settledVia?: SettlementSource.SettlementSource | undefined
}

/** An insert lost the race for its order reference to a payment committed meanwhile. */
export class OrderReferenceTaken extends Schema.TaggedError<OrderReferenceTaken>()("OrderReferenceTaken", {}) {}

const { toDate } = Columns

/**
 * A new payment's row: the value of each column its INSERT sets, as the driver binds it (`jsonb` for the JSON
 * columns, `Date` for the timestamps).
 */
const rowOf = (payment: Payment.Payment, owner: NewOwner, now: DateTime.Utc) => ({
  id: payment.id,
  application_id: owner.applicationId,
  mode: payment.mode,
  status: payment.status,
  amount: payment.amount,
  refunded_amount: payment.refunded_amount,
  currency: payment.currency,
  method: payment.method,
  order_reference: payment.order_reference,
  description: payment.description,
  customer: PgTypes.jsonb(payment.customer),
  payer: payment.payer === null ? null : PgTypes.jsonb(payment.payer),
  locale: payment.locale,
  return_url: payment.return_url,
  metadata: PgTypes.jsonb(payment.metadata),
  expires_at: toDate(payment.expires_at),
  paid_at: payment.paid_at === null ? null : toDate(payment.paid_at),
  created_at: toDate(payment.created_at),
  updated_at: toDate(now),
  idempotency_key: owner.idempotencyKey,
  settled_via: owner.settledVia ?? null
})

/** The inserts on `sql`'s connection (the caller's transaction, if any), each compiled once (FixedStatement). */
export const paymentInserts = (sql: SqlClient.SqlClient) => {
  // The arbiter is rule 5's partial unique index: a payment holding the reference (committed, or committing
  // meanwhile: PostgreSQL waits for it) means nothing is inserted, and the transaction stays usable.
  const insertRow = FixedStatement.make(
    sql,
    insertColumns,
    (value) => sql`
      INSERT INTO payments ${sql.insert(value)}
      ON CONFLICT (application_id, mode, order_reference)
        WHERE status IN ('pending', 'paid', 'partially_refunded', 'refunded')
        DO NOTHING
      RETURNING id
    `
  )
  const insert = (payment: Payment.Payment, owner: NewOwner, now: DateTime.Utc) =>
    insertRow(rowOf(payment, owner, now)).pipe(
      Effect.orDie,
      Effect.flatMap((rows) => (rows.length === 0 ? Effect.fail(new OrderReferenceTaken()) : Effect.void))
    )

  // INSERT … SELECT does not type its parameters from the target columns (VALUES does), hence the casts. A live
  // payment is never created settled: `settled_via` is left out (NULL).
  const openingRow = FixedStatement.make(
    sql,
    [...insertColumns, "link_id", "opening_key"],
    (value) => sql`
      WITH link AS (
        SELECT id FROM provider_links
        WHERE id = ${value.link_id} AND application_id = ${value.application_id} AND status = 'active'
      ), payment AS (
        INSERT INTO payments (id, application_id, mode, status, amount, refunded_amount, currency, method,
          order_reference, description, customer, payer, locale, return_url, metadata, expires_at, paid_at,
          created_at, updated_at, idempotency_key)
        SELECT ${value.id}::uuid, ${value.application_id}::uuid, ${value.mode}::text, ${value.status}::text,
          ${value.amount}::bigint, ${value.refunded_amount}::bigint, ${value.currency}::text,
          ${value.method}::text, ${value.order_reference}::text, ${value.description}::text,
          ${value.customer}::jsonb, ${value.payer}::jsonb, ${value.locale}::text, ${value.return_url}::text,
          ${value.metadata}::jsonb, ${value.expires_at}::timestamptz, ${value.paid_at}::timestamptz,
          ${value.created_at}::timestamptz, ${value.updated_at}::timestamptz, ${value.idempotency_key}::text
        FROM link
        ON CONFLICT (application_id, mode, order_reference)
          WHERE status IN ('pending', 'paid', 'partially_refunded', 'refunded')
          DO NOTHING
        RETURNING id
      ), opening AS (
        INSERT INTO provider_payments (payment_id, link_id, state, idempotency_key, created_at, updated_at)
        SELECT payment.id, link.id, 'opening', ${value.opening_key}::text, ${value.updated_at}::timestamptz,
          ${value.updated_at}::timestamptz
        FROM payment, link
        RETURNING payment_id
      )
      SELECT EXISTS (SELECT 1 FROM link) AS linked, EXISTS (SELECT 1 FROM opening) AS inserted
    `
  )
  const insertOpening = (
    payment: Payment.Payment,
    owner: { readonly applicationId: Ids.ApplicationId; readonly idempotencyKey: string | null },
    now: DateTime.Utc,
    opening: { readonly linkId: string; readonly idempotencyKey: string }
  ) =>
    openingRow({
      ...rowOf(payment, owner, now),
      link_id: opening.linkId,
      opening_key: opening.idempotencyKey
    }).pipe(
      Effect.flatMap(decodeOpening),
      Effect.orDie,
      Effect.map(([row]) => (row.inserted ? "inserted" : row.linked ? "taken" : "unlinked"))
    )

  return { insert, insertOpening }
}
