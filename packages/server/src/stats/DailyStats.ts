/**
 * The daily roll-up behind the dashboards' charts (issue 22 §3, migration 0015): a background fiber, not the payment
 * write path (a create does no extra work), keeps one row per application, mode, UTC day (and currency) of what the
 * overviews chart. Every minute a round rolls up again:
 * - today and yesterday, always (their figures still move);
 * - an older day of the 30-day window that has no roll-up yet (a fresh installation, a server that was down);
 * - an older day that may still change — a payment is counted on the day it was created, and stays pending for up to
 *   its lifetime (7 days at most) — at most once an hour until {@link settleDays} after its end.
 * Refunds count on the day they were confirmed and attempts on the day they started, so those days are final once
 * over. Each day is one transaction of three bounded statements (its payments and refunds through `payments_newest`
 * and `refunds_confirmed`, its attempts through `delivery_attempts_started`, then its mark), under a
 * transaction-scoped advisory lock on the day: server processes rolling up the same day take turns rather than race
 * (each one's result is the whole day as of its snapshot, so the later one wins). A day's deadline bounds it on the
 * embedded database too; a failed round is logged and the next runs as usual.
 */
import { Context, DateTime, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import * as StatsDays from "./StatsDays.ts"

export interface DailyStatsOptions {
  /** Time between two rounds. */
  readonly interval: Duration.Duration
  /** Longest one day's roll-up may take. */
  readonly deadline: Duration.Duration
}

export const defaults: DailyStatsOptions = { interval: Duration.minutes(1), deadline: Duration.seconds(30) }

/** Days after its end a day's payments may still change (the longest payment lifetime, 7 days, and a margin). */
export const settleDays = 8

/** A day not yet settled is rolled up again at most this often. */
const unsettledRefresh = Duration.hours(1)

/** `classid` of the roll-up's advisory locks (`objid` is the day's number since 1970). "KSTA" in ASCII. */
export const dayLockClass = 0x4b535441

/**
 * The statements of one day's roll-up, as run (exported so test/QueryPlansStats.test.ts explains exactly these).
 * `day` is `YYYY-MM-DD`; the day runs from `start` (its midnight, UTC) to `end` (the next).
 */
export const statements = (sql: SqlClient.SqlClient) => ({
  lock: (epochDay: number) => sql`SELECT pg_advisory_xact_lock(${dayLockClass}, ${epochDay})`,
  // The payments created that day and the refunds confirmed that day, per application, mode and currency. The
  // day's rows that no longer have a source (none in practice: payments are never deleted) go; the rest are
  // replaced. Two disjoint sets, so the delete and the upsert never touch the same row.
  payments: (day: string, start: Date, end: Date) => sql`
    WITH fresh AS (
      SELECT application_id, mode, currency,
        sum(created)::int AS created, sum(paid)::int AS paid, sum(failed)::int AS failed,
        sum(expired)::int AS expired, sum(cancelled)::int AS cancelled, sum(pending)::int AS pending,
        sum(paid_amount)::bigint AS paid_amount, sum(refunds)::int AS refunds,
        sum(refunded_amount)::bigint AS refunded_amount
      FROM (
        SELECT p.application_id, p.mode, p.currency, 1 AS created,
          (p.status IN ('paid', 'partially_refunded', 'refunded'))::int AS paid,
          (p.status = 'failed')::int AS failed, (p.status = 'expired')::int AS expired,
          (p.status = 'cancelled')::int AS cancelled, (p.status = 'pending')::int AS pending,
          CASE WHEN p.status IN ('paid', 'partially_refunded', 'refunded') THEN p.amount ELSE 0 END AS paid_amount,
          0 AS refunds, 0::bigint AS refunded_amount
        FROM payments p
        WHERE p.created_at >= ${start} AND p.created_at < ${end}
        UNION ALL
        SELECT p.application_id, p.mode, p.currency, 0, 0, 0, 0, 0, 0, 0, 1, r.amount
        FROM refunds r JOIN payments p ON p.id = r.payment_id
        WHERE r.status = 'succeeded' AND r.confirmed_at >= ${start} AND r.confirmed_at < ${end}
      ) source
      GROUP BY application_id, mode, currency
    ),
    gone AS (
      DELETE FROM daily_payment_stats s
      WHERE s.day = ${day}::date AND NOT EXISTS (
        SELECT 1 FROM fresh f
        WHERE f.application_id = s.application_id AND f.mode = s.mode AND f.currency = s.currency
      )
    )
    INSERT INTO daily_payment_stats (application_id, mode, day, currency, created, paid, failed, expired, cancelled,
      pending, paid_amount, refunds, refunded_amount)
    SELECT application_id, mode, ${day}::date, currency, created, paid, failed, expired, cancelled, pending,
      paid_amount, refunds, refunded_amount
    FROM fresh
    ON CONFLICT (application_id, mode, day, currency) DO UPDATE SET
      created = excluded.created, paid = excluded.paid, failed = excluded.failed, expired = excluded.expired,
      cancelled = excluded.cancelled, pending = excluded.pending, paid_amount = excluded.paid_amount,
      refunds = excluded.refunds, refunded_amount = excluded.refunded_amount
  `,
  // The attempts started that day (scheduled and manual), per application and mode: a 2xx answer succeeded,
  // anything else (another status, a timeout, a refused address) failed. Each attempt's delivery is one probe of
  // its primary key (`OFFSET 0` keeps it a probe): as a join, PostgreSQL hashed the whole deliveries table.
  deliveries: (day: string, start: Date, end: Date) => sql`
    WITH fresh AS (
      SELECT d.application_id, d.mode,
        count(*) FILTER (WHERE a.response_status BETWEEN 200 AND 299)::int AS succeeded,
        count(*) FILTER (WHERE a.response_status IS NULL OR a.response_status NOT BETWEEN 200 AND 299)::int AS failed,
        sum(a.duration_ms)::bigint AS latency_ms_sum,
        count(*) FILTER (WHERE a.duration_ms < 100)::int AS under_100,
        count(*) FILTER (WHERE a.duration_ms >= 100 AND a.duration_ms < 250)::int AS under_250,
        count(*) FILTER (WHERE a.duration_ms >= 250 AND a.duration_ms < 500)::int AS under_500,
        count(*) FILTER (WHERE a.duration_ms >= 500 AND a.duration_ms < 1000)::int AS under_1000,
        count(*) FILTER (WHERE a.duration_ms >= 1000 AND a.duration_ms < 2500)::int AS under_2500,
        count(*) FILTER (WHERE a.duration_ms >= 2500 AND a.duration_ms < 5000)::int AS under_5000,
        count(*) FILTER (WHERE a.duration_ms >= 5000 AND a.duration_ms < 10000)::int AS under_10000,
        count(*) FILTER (WHERE a.duration_ms >= 10000)::int AS longer
      FROM delivery_attempts a
        CROSS JOIN LATERAL (SELECT application_id, mode FROM deliveries WHERE id = a.delivery_id OFFSET 0) d
      WHERE a.started_at >= ${start} AND a.started_at < ${end}
      GROUP BY d.application_id, d.mode
    ),
    gone AS (
      DELETE FROM daily_delivery_stats s
      WHERE s.day = ${day}::date AND NOT EXISTS (
        SELECT 1 FROM fresh f WHERE f.application_id = s.application_id AND f.mode = s.mode
      )
    )
    INSERT INTO daily_delivery_stats (application_id, mode, day, succeeded, failed, latency_ms_sum, under_100,
      under_250, under_500, under_1000, under_2500, under_5000, under_10000, longer)
    SELECT application_id, mode, ${day}::date, succeeded, failed, latency_ms_sum, under_100, under_250, under_500,
      under_1000, under_2500, under_5000, under_10000, longer
    FROM fresh
    ON CONFLICT (application_id, mode, day) DO UPDATE SET
      succeeded = excluded.succeeded, failed = excluded.failed, latency_ms_sum = excluded.latency_ms_sum,
      under_100 = excluded.under_100, under_250 = excluded.under_250, under_500 = excluded.under_500,
      under_1000 = excluded.under_1000, under_2500 = excluded.under_2500, under_5000 = excluded.under_5000,
      under_10000 = excluded.under_10000, longer = excluded.longer
  `,
  mark: (day: string, at: Date) => sql`
    INSERT INTO daily_stats_days (day, computed_at) VALUES (${day}::date, ${at})
    ON CONFLICT (day) DO UPDATE SET computed_at = excluded.computed_at
  `,
  /** When each day from `from` on was last rolled up. */
  computed: (from: string) => sql`
    SELECT to_char(day, 'YYYY-MM-DD') AS day, computed_at FROM daily_stats_days WHERE day >= ${from}::date
  `
})

const ComputedRow = Schema.Struct({ day: Schema.String, computed_at: Columns.Timestamp })

/** Which days of the window a round rolls up, given when each was last rolled up (pure: RollUpPlan's tests). */
export const dueDays = (
  now: DateTime.Utc,
  computed: ReadonlyMap<string, DateTime.Utc>,
  windowDays: number = StatsDays.windowDays
): ReadonlyArray<number> => {
  const today = StatsDays.epochDay(now)
  const nowMillis = DateTime.toEpochMillis(now)
  const due: Array<number> = []
  for (let epochDay = today - windowDays + 1; epochDay <= today; epochDay++) {
    const at = computed.get(StatsDays.dayText(epochDay))
    if (epochDay >= today - 1 || at === undefined) {
      due.push(epochDay)
      continue
    }
    const atMillis = DateTime.toEpochMillis(at)
    const settledAt = (epochDay + 1 + settleDays) * StatsDays.dayMillis
    if (atMillis < settledAt && nowMillis - atMillis >= Duration.toMillis(unsettledRefresh)) due.push(epochDay)
  }
  return due
}

export class DailyStats extends Context.Service<
  DailyStats,
  {
    /** One round as of `now`: every due day of the window rolled up; the days it rolled up (`YYYY-MM-DD`). */
    readonly runOnce: (now: DateTime.Utc) => Effect.Effect<ReadonlyArray<string>>
  }
>()("@kassa/server/stats/DailyStats") {
  static readonly layerWith = (options: DailyStatsOptions) =>
    Layer.effect(
      DailyStats,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const run = statements(sql)

        const rollUp = Effect.fn("DailyStats.rollUp")(function* (epochDay: number, now: DateTime.Utc) {
          const day = StatsDays.dayText(epochDay)
          const start = new Date(epochDay * StatsDays.dayMillis)
          const end = new Date((epochDay + 1) * StatsDays.dayMillis)
          yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* run.lock(epochDay)
                yield* run.payments(day, start, end)
                yield* run.deliveries(day, start, end)
                yield* run.mark(day, Columns.toDate(now))
              })
            )
            .pipe(Effect.timeout(options.deadline))
          return day
        })

        const runOnce = Effect.fn("DailyStats.runOnce")(function* (now: DateTime.Utc) {
          const first = StatsDays.dayText(StatsDays.epochDay(now) - StatsDays.windowDays + 1)
          const rows = yield* Columns.all(ComputedRow)(run.computed(first))
          const computed = new Map(rows.map((row) => [row.day, row.computed_at] as const))
          const done: Array<string> = []
          for (const epochDay of dueDays(now, computed)) done.push(yield* rollUp(epochDay, now))
          return done
        }, Effect.orDie)

        yield* Effect.gen(function* () {
          yield* runOnce(yield* DateTime.now)
        }).pipe(
          Effect.catchCause((cause) => Effect.logError("Daily statistics round failed", cause)),
          Effect.repeat(Schedule.spaced(options.interval)),
          // The first round waits a little: a start is busy enough (and tests call runOnce themselves).
          Effect.delay(Duration.seconds(10)),
          Effect.forkScoped
        )

        return DailyStats.of({ runOnce })
      })
    )

  static readonly layer = DailyStats.layerWith(defaults)
}
