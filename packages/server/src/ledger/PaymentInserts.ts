/**
 * The statements that add a payment, run by PaymentRepository (`insert`, `insertOpening`): a create's INSERT, whose
 * arbiter for rule 5 is the partial unique index, and a live create's INSERT together with its provider opening, in
 * one statement that also checks the provider link. Kept apart from the repository's reads, locks and updates.
 */
import { type PgClient, PgTypes } from "@effect/sql-pg"
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

/** The inserts on `sql`'s connection (the caller's transaction, if any); `pg` makes the JSON parameters. */
export const paymentInserts = (sql: SqlClient.SqlClient, pg: PgClient.PgClient) => {
  // The arbiter is rule 5's partial unique index: a payment holding the reference (committed, or committing
  // meanwhile: PostgreSQL waits for it) means nothing is inserted, and the transaction stays usable. Run on every
  // create: its text is compiled once (FixedStatement).
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
    insertRow({
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
    }).pipe(
      Effect.orDie,
      Effect.flatMap((rows) => (rows.length === 0 ? Effect.fail(new OrderReferenceTaken()) : Effect.void))
    )

  // INSERT … SELECT does not type its parameters from the target columns (VALUES does), hence the casts.
  const insertOpening = (
    payment: Payment.Payment,
    owner: { readonly applicationId: Ids.ApplicationId; readonly idempotencyKey: string | null },
    now: DateTime.Utc,
    opening: { readonly linkId: string; readonly idempotencyKey: string }
  ) =>
    sql`
      WITH link AS (
        SELECT id FROM provider_links
        WHERE id = ${opening.linkId} AND application_id = ${owner.applicationId} AND status = 'active'
      ), payment AS (
        INSERT INTO payments (id, application_id, mode, status, amount, refunded_amount, currency, method,
          order_reference, description, customer, payer, locale, return_url, metadata, expires_at, paid_at,
          created_at, updated_at, idempotency_key)
        SELECT ${payment.id}::uuid, ${owner.applicationId}::uuid, ${payment.mode}::text, ${payment.status}::text,
          ${payment.amount}::bigint, ${payment.refunded_amount}::bigint, ${payment.currency}::text,
          ${payment.method}::text, ${payment.order_reference}::text, ${payment.description}::text,
          ${pg.json(payment.customer)}::jsonb, ${payment.payer === null ? null : pg.json(payment.payer)}::jsonb,
          ${payment.locale}::text, ${payment.return_url}::text, ${pg.json(payment.metadata)}::jsonb,
          ${toDate(payment.expires_at)}::timestamptz,
          ${payment.paid_at === null ? null : toDate(payment.paid_at)}::timestamptz,
          ${toDate(payment.created_at)}::timestamptz, ${toDate(now)}::timestamptz, ${owner.idempotencyKey}::text
        FROM link
        ON CONFLICT (application_id, mode, order_reference)
          WHERE status IN ('pending', 'paid', 'partially_refunded', 'refunded')
          DO NOTHING
        RETURNING id
      ), opening AS (
        INSERT INTO provider_payments (payment_id, link_id, state, idempotency_key, created_at, updated_at)
        SELECT payment.id, link.id, 'opening', ${opening.idempotencyKey}::text, ${toDate(now)}::timestamptz,
          ${toDate(now)}::timestamptz
        FROM payment, link
        RETURNING payment_id
      )
      SELECT EXISTS (SELECT 1 FROM link) AS linked, EXISTS (SELECT 1 FROM opening) AS inserted
    `.pipe(
      Effect.flatMap(decodeOpening),
      Effect.orDie,
      Effect.map(([row]) => (row.inserted ? "inserted" : row.linked ? "taken" : "unlinked"))
    )

  return { insert, insertOpening }
}
