/**
 * Read-only queries behind an application's dashboard pages (issue #6) that the repositories do not answer: the
 * overview's counts, the payments list across both modes with its filters, a payment's events with their deliveries,
 * and who requested each live refund. Every query is scoped to one application, so an id of another application's
 * object finds nothing. Nothing here writes: changes go through the services (Payments, repositories).
 */
import { Delivery, Ids, Mode, Payment, WebhookEvent } from "@kassa/core"
import { DateTime, Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import type { PaymentSummary, TimelineEntry } from "../pages/dashboard/Views.ts"
import * as PaymentSearch from "./PaymentSearch.ts"

/** `('test'), ('live')` and every status likewise: rows to count by (constants of the schema, no input). */
const valueRows = (values: ReadonlyArray<string>) => values.map((value) => `('${value}')`).join(", ")
const modeRows = valueRows(Mode.Mode.literals)
const statusRows = valueRows(Payment.PaymentStatus.literals)

/** The overview's payments of one mode in the period, and how many of them were paid. */
const PaymentCountsRow = Schema.Struct({ mode: Mode.Mode, payments: Columns.Integer, paid: Columns.NullableInteger })

/** The overview's failed and retrying deliveries of one mode. */
const DeliveryCountsRow = Schema.Struct({ mode: Mode.Mode, failed: Columns.Integer, retrying: Columns.Integer })

const ModeRow = Schema.Struct({ mode: Mode.Mode })

/**
 * An event of a payment with its delivery (every delivery column null when it has none, as a left join reads it)
 * and that delivery's latest attempt.
 */
const TimelineRow = Schema.Struct({
  event_id: Ids.EventId,
  event: WebhookEvent.EventName,
  created_at: Columns.Timestamp,
  delivery_id: Schema.NullOr(Ids.DeliveryId),
  delivery_status: Schema.NullOr(Delivery.DeliveryStatus),
  next_attempt_at: Columns.NullableTimestamp,
  response_status: Columns.NullableInteger,
  error: Schema.NullOr(Schema.String),
  attempts: Columns.Integer
})

const RequesterRow = Schema.Struct({ id: Ids.RefundId, email: Schema.String })

const BodyRow = Schema.Struct({ body: Schema.String })

/** Counts of one mode for the overview. */
export interface ModeCounts {
  /** Payments created in the period. */
  readonly payments: number
  /** Of those, the ones that were paid (also if refunded since). */
  readonly paid: number
  /** Deliveries created in the period that failed for good. */
  readonly failedDeliveries: number
  /** Deliveries still being retried after a failed attempt. */
  readonly retryingDeliveries: number
}

export interface Overview {
  readonly test: ModeCounts
  readonly live: ModeCounts
}

/** A row of the payments list. */
export type PaymentRow = PaymentSummary

/** The payment search's filters (PaymentSearch), the application fixed. */
export type PaymentFilter = Omit<PaymentSearch.PaymentSearchQuery, "applicationId">

export type PaymentRows = PaymentSearch.PaymentPage

/** The queries over one SQL client (the server's pool). */
export const make = (sql: SqlClient.SqlClient) => {
  const overview = Effect.fn("ApplicationQueries.overview")(function* (
    applicationId: Ids.ApplicationId,
    since: DateTime.Utc
  ) {
    const from = DateTime.toDateUtc(since)
    // One index-only range of payments_status (application_id, mode, status, created_at …) per mode and status: the
    // count reads the period's index entries, never the table.
    const payments = yield* Columns.all(PaymentCountsRow)(sql`
      SELECT m.mode, sum(c.n)::int AS payments,
        (sum(c.n) FILTER (WHERE s.status IN ('paid', 'partially_refunded', 'refunded')))::int AS paid
      FROM (VALUES ${sql.literal(modeRows)}) AS m (mode) CROSS JOIN (VALUES ${sql.literal(statusRows)}) AS s (status)
        CROSS JOIN LATERAL (
          SELECT count(*) AS n FROM payments p
          WHERE p.application_id = ${applicationId} AND p.mode = m.mode AND p.status = s.status
            AND p.created_at >= ${from}
        ) c
      GROUP BY m.mode
    `)
    // deliveries.mode (0004) spares the join to events; each count is a range of deliveries_application_status.
    const deliveries = yield* Columns.all(DeliveryCountsRow)(sql`
      SELECT mode,
        count(*) FILTER (WHERE status = 'failed')::int AS failed,
        count(*) FILTER (WHERE status = 'pending')::int AS retrying
      FROM deliveries
      WHERE application_id = ${applicationId}
        AND ((status = 'failed' AND created_at >= ${from}) OR (status = 'pending' AND attempt_count > 0))
      GROUP BY mode
    `)
    const counts = (mode: Mode.Mode): ModeCounts => {
      const p = payments.find((row) => row.mode === mode)
      const d = deliveries.find((row) => row.mode === mode)
      return {
        payments: p?.payments ?? 0,
        paid: p?.paid ?? 0,
        failedDeliveries: d?.failed ?? 0,
        retryingDeliveries: d?.retrying ?? 0
      }
    }
    return { test: counts("test"), live: counts("live") } satisfies Overview
  }, Effect.orDie)

  /** Newest first, both modes unless one is asked for. An unknown `startingAfter` starts from the newest. */
  const payments = (applicationId: Ids.ApplicationId, filter: PaymentFilter): Effect.Effect<PaymentRows> =>
    PaymentSearch.search(sql)({ ...filter, applicationId })

  /** The mode of one of the application's payments; none for another application's or an unknown id. */
  const paymentMode = (applicationId: Ids.ApplicationId, paymentId: Ids.PaymentId) =>
    Columns.first(ModeRow)(
      sql`SELECT mode FROM payments WHERE id = ${paymentId} AND application_id = ${applicationId}`
    ).pipe(Effect.map(Option.map((row) => row.mode)), Effect.orDie)

  /** A payment's events, oldest first, each with its delivery and the delivery's latest attempt. */
  const timeline = Effect.fn("ApplicationQueries.timeline")(function* (
    applicationId: Ids.ApplicationId,
    paymentId: Ids.PaymentId
  ) {
    const rows = yield* Columns.all(TimelineRow)(sql`
      SELECT e.id AS event_id, e.event, e.created_at, d.id AS delivery_id, d.status AS delivery_status,
        d.next_attempt_at, last.response_status, last.error, coalesce(last.number, 0) AS attempts
      FROM events e
      LEFT JOIN deliveries d ON d.event_id = e.id
      LEFT JOIN LATERAL (
        SELECT a.number, a.response_status, a.error FROM delivery_attempts a
        WHERE a.delivery_id = d.id ORDER BY a.number DESC LIMIT 1
      ) last ON true
      WHERE e.payment_id = ${paymentId} AND e.application_id = ${applicationId}
      ORDER BY e.created_at, e.id
    `)
    return rows.map(
      (row): TimelineEntry => ({
        eventId: row.event_id,
        event: row.event,
        createdAt: row.created_at,
        delivery:
          row.delivery_id === null || row.delivery_status === null
            ? null
            : {
                id: row.delivery_id,
                status: row.delivery_status,
                attempts: row.attempts,
                nextAttemptAt: row.next_attempt_at,
                lastStatus: row.response_status,
                lastError: row.error
              }
      })
    )
  }, Effect.orDie)

  /** Who requested each of a payment's refunds from the dashboard (refund id → e-mail address). */
  const refundRequesters = (paymentId: Ids.PaymentId) =>
    Columns.all(RequesterRow)(sql`
      SELECT r.id, u.email FROM refunds r JOIN users u ON u.id = r.requested_by WHERE r.payment_id = ${paymentId}
    `).pipe(
      Effect.map((rows) => new Map(rows.map((row): readonly [string, string] => [row.id, row.email]))),
      Effect.orDie
    )

  /** The exact body of a delivery's event (what every attempt sends). */
  const eventBody = (applicationId: Ids.ApplicationId, deliveryId: Ids.DeliveryId) =>
    Columns.first(BodyRow)(sql`
      SELECT e.body FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.id = ${deliveryId} AND d.application_id = ${applicationId}
    `).pipe(Effect.map(Option.map((row) => row.body)), Effect.orDie)

  return { overview, payments, paymentMode, timeline, refundRequesters, eventBody }
}

export type ApplicationQueries = ReturnType<typeof make>
