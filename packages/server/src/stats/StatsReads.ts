/**
 * What the overviews read for their charts (issue 22 §3): the daily roll-up of one application (its primary key's
 * range, both modes) or of every application (the `day` indexes, summed per day, mode and currency in the
 * statement), and the delivery backlog now — pending deliveries due, as the metrics' gauge counts them
 * (DeliveryRepository.backlog: the due part of `deliveries_due`), by mode. A few hundred rows at most, whatever the
 * number of payments.
 */
import type { Ids } from "@kassa/core"
import { Mode } from "@kassa/core"
import { DateTime, Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import type { StatsView } from "../pages/dashboard/OverviewCharts.ts"
import { overdueAfterSeconds } from "../webhooks/DeliveryRepository.ts"
import * as StatsDays from "./StatsDays.ts"
import { defaultMode, summarise } from "./StatsSummary.ts"

const PaymentRow = Schema.Struct({
  day: Schema.String,
  mode: Mode.Mode,
  currency: Schema.String,
  created: Columns.Integer,
  paid: Columns.Integer,
  failed: Columns.Integer,
  expired: Columns.Integer,
  cancelled: Columns.Integer,
  pending: Columns.Integer,
  paid_amount: Columns.Integer,
  refunds: Columns.Integer,
  refunded_amount: Columns.Integer
})

const DeliveryRow = Schema.Struct({
  day: Schema.String,
  mode: Mode.Mode,
  succeeded: Columns.Integer,
  failed: Columns.Integer,
  latency_ms_sum: Columns.Integer,
  under_100: Columns.Integer,
  under_250: Columns.Integer,
  under_500: Columns.Integer,
  under_1000: Columns.Integer,
  under_2500: Columns.Integer,
  under_5000: Columns.Integer,
  under_10000: Columns.Integer,
  longer: Columns.Integer
})

const BacklogRow = Schema.Struct({ mode: Mode.Mode, due: Columns.Integer, overdue: Columns.Integer })

const UpdatedRow = Schema.Struct({ computed_at: Columns.Timestamp })

/** Whose figures: one application's, or every application's (the operator's overview). */
export type Scope = Ids.ApplicationId | "all"

const paymentColumns = "created, paid, failed, expired, cancelled, pending, paid_amount, refunds, refunded_amount"
const deliveryColumns =
  "succeeded, failed, latency_ms_sum, under_100, under_250, under_500, under_1000, under_2500, under_5000, under_10000, longer"
const summed = (columns: string) =>
  columns
    .split(", ")
    .map((column) => `sum(${column})::bigint AS ${column}`)
    .join(", ")

/** The reads over one SQL client (the server's pool); exported statements for test/QueryPlansStats.test.ts. */
export const make = (sql: SqlClient.SqlClient) => {
  const statements = {
    payments: (scope: Scope, from: string) =>
      scope === "all"
        ? sql`
          SELECT to_char(day, 'YYYY-MM-DD') AS day, mode, currency, ${sql.literal(summed(paymentColumns))}
          FROM daily_payment_stats WHERE day >= ${from}::date
          GROUP BY day, mode, currency`
        : sql`
          SELECT to_char(day, 'YYYY-MM-DD') AS day, mode, currency, ${sql.literal(paymentColumns)}
          FROM daily_payment_stats
          WHERE application_id = ${scope} AND mode IN ('test', 'live') AND day >= ${from}::date`,
    deliveries: (scope: Scope, from: string) =>
      scope === "all"
        ? sql`
          SELECT to_char(day, 'YYYY-MM-DD') AS day, mode, ${sql.literal(summed(deliveryColumns))}
          FROM daily_delivery_stats WHERE day >= ${from}::date
          GROUP BY day, mode`
        : sql`
          SELECT to_char(day, 'YYYY-MM-DD') AS day, mode, ${sql.literal(deliveryColumns)}
          FROM daily_delivery_stats
          WHERE application_id = ${scope} AND mode IN ('test', 'live') AND day >= ${from}::date`,
    // Walks only the due part of deliveries_due (or the application's pending range of
    // deliveries_application_status): it costs in proportion to the backlog, not to the table.
    backlog: (scope: Scope) => sql`
      SELECT mode, count(*) AS due,
        count(*) FILTER (WHERE next_attempt_at <= now() - make_interval(secs => ${overdueAfterSeconds})) AS overdue
      FROM deliveries
      WHERE status = 'pending' AND next_attempt_at <= now()
        ${scope === "all" ? sql`` : sql`AND application_id = ${scope}`}
      GROUP BY mode`,
    updated: (day: string) => sql`SELECT computed_at FROM daily_stats_days WHERE day = ${day}::date`
  }

  /** An overview's charts as of `now`, in `mode` (by default live when it had payments, else test). */
  const overview = Effect.fn("StatsReads.overview")(function* (
    scope: Scope,
    now: DateTime.Utc,
    mode: Mode.Mode | undefined
  ) {
    const days = StatsDays.windowOf(now)
    const from = days[0] ?? StatsDays.dayText(StatsDays.epochDay(now))
    const payments = yield* Columns.all(PaymentRow)(statements.payments(scope, from))
    const deliveries = yield* Columns.all(DeliveryRow)(statements.deliveries(scope, from))
    const backlog = yield* Columns.all(BacklogRow)(statements.backlog(scope))
    const updated = yield* Columns.first(UpdatedRow)(statements.updated(days[days.length - 1] ?? from))
    const shown = mode ?? defaultMode(payments)
    const due = backlog.find((row) => row.mode === shown)
    return summarise({
      mode: shown,
      days,
      payments,
      deliveries: deliveries.map((row) => ({
        day: row.day,
        mode: row.mode,
        succeeded: row.succeeded,
        failed: row.failed,
        latency_ms_sum: row.latency_ms_sum,
        buckets: [
          row.under_100,
          row.under_250,
          row.under_500,
          row.under_1000,
          row.under_2500,
          row.under_5000,
          row.under_10000,
          row.longer
        ]
      })),
      backlog: { due: due?.due ?? 0, overdue: due?.overdue ?? 0 },
      updatedAt: Option.match(updated, { onNone: () => null, onSome: (row) => DateTime.toDateUtc(row.computed_at) })
    }) satisfies StatsView
  }, Effect.orDie)

  return { statements, overview }
}
