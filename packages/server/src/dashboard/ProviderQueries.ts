/**
 * What operators see of live payments at their provider (issue 12 §5, decisions §10 and §11 "Seen by operators"): one
 * payment's provider, its ids there and last answer, the open discrepancies and the overdue reads. Read-only SQL; each list reads
 * its partial index (`provider_discrepancies_open`, `provider_payments_due`, `provider_refunds_due`).
 */
import { Ids } from "@kassa/core"
import { DateTime, Duration, Effect, Option, Schema, Struct } from "effect"
import type { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { ProviderPaymentRow as StoredProviderPaymentRow } from "../live/LiveCheckouts.ts"
import type { DiscrepancyItem, OverdueItem, ProviderPaymentView } from "../pages/dashboard/Views.ts"
import { ProviderName, providerTitles } from "../providers/ProviderConnector.ts"

/**
 * A read is overdue when Kassa plans one (`next_read_at` set) but has had no answer for this long: the schedule reads
 * every 5 minutes, so two missed reads. Not `next_read_at` itself: every failed round leases it a minute ahead.
 */
export const overdueAfter: Duration.Duration = Duration.minutes(10)

/**
 * A live payment's row of `provider_payments`, as the payment's page shows it: the columns of LiveCheckouts' row
 * schema (`last_answer` shown as stored: any JSON, whatever shape the provider's answer had then), with its link's
 * provider.
 */
const ProviderPaymentRow = Schema.Struct({
  ...StoredProviderPaymentRow.mapFields(
    Struct.pick([
      "state",
      "checkout_id",
      "provider_payment_id",
      "last_read_at",
      "last_answer",
      "next_read_at",
      "checkout_expires_at"
    ])
  ).fields,
  provider: ProviderName
})

/** The provider's own status word of the last answer, when it names one (`providerStatus`, CheckoutReading). */
const providerStatusOf = (answer: unknown): string | null =>
  typeof answer === "object" &&
  answer !== null &&
  "providerStatus" in answer &&
  typeof answer.providerStatus === "string"
    ? answer.providerStatus
    : null

/** An open row of `provider_discrepancies` with its payment's application. */
const DiscrepancyRow = Schema.Struct({
  id: Columns.Integer,
  payment_id: Ids.PaymentId,
  refund_id: Schema.NullOr(Ids.RefundId),
  // Free text, not the core's DiscrepancyKind: the column is no CHECK list so that a kind needs no migration, and the
  // page lists a kind this build does not know (an older or newer one) as it is.
  kind: Schema.String,
  message: Schema.String,
  detected_at: Columns.Timestamp,
  application_id: Ids.ApplicationId,
  provider: Schema.NullOr(ProviderName)
})

/** A live payment or refund waiting for the provider's answer (`refund_id` null for a payment). */
const OverdueRow = Schema.Struct({
  payment_id: Ids.PaymentId,
  refund_id: Schema.NullOr(Ids.RefundId),
  next_read_at: Columns.Timestamp,
  last_read_at: Columns.NullableTimestamp,
  application_id: Ids.ApplicationId,
  waiting_since: Columns.Timestamp
})

/** The live payment a "read now" names, and its application. */
const TargetRow = Schema.Struct({ payment_id: Ids.PaymentId, application_id: Ids.ApplicationId })

const dateOrNull = (time: DateTime.Utc | null): Date | null => (time === null ? null : Columns.toDate(time))

export const providerPayment = (sql: SqlClient.SqlClient, paymentId: string) =>
  Columns.first(ProviderPaymentRow)(sql`
    SELECT pp.state, pp.checkout_id, pp.provider_payment_id, pp.last_read_at, pp.last_answer, pp.next_read_at,
           pp.checkout_expires_at, l.provider
    FROM provider_payments pp JOIN provider_links l ON l.id = pp.link_id
    WHERE pp.payment_id = ${paymentId}
  `).pipe(
    Effect.map(
      Option.match({
        onNone: (): ProviderPaymentView | null => null,
        onSome: (row): ProviderPaymentView | null => ({
          provider: providerTitles[row.provider],
          state: row.state,
          checkoutId: row.checkout_id,
          providerPaymentId: row.provider_payment_id,
          providerStatus: providerStatusOf(row.last_answer),
          expiresAt: dateOrNull(row.checkout_expires_at),
          lastReadAt: dateOrNull(row.last_read_at),
          lastAnswer: row.last_answer === null ? null : JSON.stringify(row.last_answer),
          nextReadAt: dateOrNull(row.next_read_at)
        })
      })
    ),
    Effect.orDie
  )

/** Open discrepancies, newest first; `before` is the id of the last one of the previous page. */
export const openDiscrepancies = (
  sql: SqlClient.SqlClient,
  options: { readonly limit: number; readonly before: number | undefined }
) =>
  Columns.all(DiscrepancyRow)(sql`
    SELECT d.id, d.payment_id, d.refund_id, d.kind, d.message, d.detected_at, p.application_id, l.provider
    FROM provider_discrepancies d JOIN payments p ON p.id = d.payment_id
    LEFT JOIN provider_payments pp ON pp.payment_id = d.payment_id
    LEFT JOIN provider_links l ON l.id = pp.link_id
    WHERE d.resolved_at IS NULL
    ${
      options.before === undefined
        ? sql``
        : sql`AND (d.detected_at, d.id) < (SELECT detected_at, id FROM provider_discrepancies WHERE id = ${options.before})`
    }
    ORDER BY d.detected_at DESC, d.id DESC
    LIMIT ${options.limit + 1}
  `).pipe(
    Effect.map((rows) => ({
      hasMore: rows.length > options.limit,
      rows: rows.slice(0, options.limit).map(
        (row): DiscrepancyItem => ({
          id: String(row.id),
          applicationId: row.application_id,
          provider: row.provider === null ? null : providerTitles[row.provider],
          paymentId: row.payment_id,
          refundId: row.refund_id,
          kind: row.kind,
          message: row.message,
          detectedAt: Columns.toDate(row.detected_at)
        })
      )
    })),
    Effect.orDie
  )

/**
 * Live payments and refunds whose answer is overdue by more than {@link overdueAfter}, the most recent first, at most
 * `limit` in all; `before` (a time) pages on past the last one shown. Both read their `…_due` partial index: the
 * rows with a planned read are the payments and refunds in flight, so the filter and sort run over few rows.
 */
export const overdueReads = (
  sql: SqlClient.SqlClient,
  options: { readonly now: DateTime.Utc; readonly limit: number; readonly before: Date | undefined }
) =>
  Effect.gen(function* () {
    const cutoff = DateTime.toDateUtc(DateTime.subtractDuration(options.now, overdueAfter))
    const strict = options.before !== undefined && options.before <= cutoff
    const upTo = strict && options.before !== undefined ? options.before : cutoff
    const payments = yield* Columns.all(OverdueRow)(sql`
      SELECT pp.payment_id, NULL AS refund_id, pp.next_read_at, pp.last_read_at, p.application_id,
             coalesce(pp.last_read_at, pp.visited_at, pp.created_at) AS waiting_since
      FROM provider_payments pp JOIN payments p ON p.id = pp.payment_id
      WHERE pp.next_read_at IS NOT NULL
        AND ${strict ? sql`coalesce(pp.last_read_at, pp.visited_at, pp.created_at) < ${upTo}` : sql`coalesce(pp.last_read_at, pp.visited_at, pp.created_at) <= ${upTo}`}
      ORDER BY waiting_since DESC
      LIMIT ${options.limit + 1}
    `)
    const refunds = yield* Columns.all(OverdueRow)(sql`
      SELECT pr.refund_id, pr.payment_id, pr.next_read_at, pr.last_read_at, p.application_id,
             coalesce(pr.last_read_at, pr.created_at) AS waiting_since
      FROM provider_refunds pr JOIN payments p ON p.id = pr.payment_id
      WHERE pr.next_read_at IS NOT NULL
        AND ${strict ? sql`coalesce(pr.last_read_at, pr.created_at) < ${upTo}` : sql`coalesce(pr.last_read_at, pr.created_at) <= ${upTo}`}
      ORDER BY waiting_since DESC
      LIMIT ${options.limit + 1}
    `)
    const item = (kind: OverdueItem["kind"], row: typeof OverdueRow.Type): OverdueItem => ({
      kind,
      applicationId: row.application_id,
      paymentId: row.payment_id,
      refundId: row.refund_id,
      waitingSince: Columns.toDate(row.waiting_since),
      lastReadAt: dateOrNull(row.last_read_at),
      nextReadAt: Columns.toDate(row.next_read_at)
    })
    const all = [...payments.map((row) => item("payment", row)), ...refunds.map((row) => item("refund", row))].sort(
      (a, b) => b.waitingSince.getTime() - a.waitingSince.getTime()
    )
    return { rows: all.slice(0, options.limit), hasMore: all.length > options.limit }
  }).pipe(Effect.orDie)

/** The live payment (and its application) a "read now" names: one with a provider row, by payment or refund id. */
export const readTarget = (
  sql: SqlClient.SqlClient,
  target: { readonly paymentId: string } | { readonly refundId: string }
) =>
  Columns.first(TargetRow)(
    "refundId" in target
      ? sql`
          SELECT pr.payment_id, p.application_id FROM provider_refunds pr JOIN payments p ON p.id = pr.payment_id
          WHERE pr.refund_id = ${target.refundId}
        `
      : sql`
          SELECT pp.payment_id, p.application_id FROM provider_payments pp JOIN payments p ON p.id = pp.payment_id
          WHERE pp.payment_id = ${target.paymentId}
        `
  ).pipe(
    Effect.map(Option.map((row) => ({ paymentId: row.payment_id, applicationId: row.application_id }))),
    Effect.orDie
  )
