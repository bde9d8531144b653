/**
 * The dashboards' charts (issue 22 §3) read a daily roll-up, never the payments: `stats/DailyStats` recomputes a UTC
 * day's rows from its payments, refunds and delivery attempts in the background, so an overview reads a few hundred
 * rows at 1,000,000 payments and the payment write path does no extra work.
 *
 * - `daily_payment_stats`: per application, mode, day and currency, the payments created that day by outcome (as
 *   they stand when the day was last rolled up), the amount paid, and the refunds confirmed that day (by the day of
 *   the refund, not of the payment). Money stays per currency: EUR is never added to USD.
 * - `daily_delivery_stats`: per application, mode and day, the webhook attempts started that day, succeeded (a 2xx)
 *   or not, their summed duration and a histogram of durations (the boundaries in DailyStats.latencyBuckets), so
 *   a mean and a rough p95 can be shown.
 * - `daily_stats_days`: when each day was last rolled up (which days are missing or may still change).
 * - The roll-up reads a day through indexes on time: `payments_newest` (0003) for payments, and the two added
 *   here: succeeded refunds by confirmation, attempts by start. The `day` indexes serve the operator's overview
 *   (every application) and the roll-up's removal of a day's vanished rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SET LOCAL statement_timeout = 0`
  yield* sql`
    CREATE TABLE daily_payment_stats (
      application_id uuid NOT NULL REFERENCES applications (id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      day date NOT NULL,
      currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
      created integer NOT NULL DEFAULT 0,
      paid integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      expired integer NOT NULL DEFAULT 0,
      cancelled integer NOT NULL DEFAULT 0,
      pending integer NOT NULL DEFAULT 0,
      paid_amount bigint NOT NULL DEFAULT 0,
      refunds integer NOT NULL DEFAULT 0,
      refunded_amount bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (application_id, mode, day, currency)
    )
  `
  yield* sql`CREATE INDEX daily_payment_stats_day ON daily_payment_stats (day)`
  yield* sql`
    CREATE TABLE daily_delivery_stats (
      application_id uuid NOT NULL REFERENCES applications (id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      day date NOT NULL,
      succeeded integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      latency_ms_sum bigint NOT NULL DEFAULT 0,
      -- Attempts by duration: under 100 ms, 250, 500, 1 s, 2.5 s, 5 s, 10 s, and longer.
      under_100 integer NOT NULL DEFAULT 0,
      under_250 integer NOT NULL DEFAULT 0,
      under_500 integer NOT NULL DEFAULT 0,
      under_1000 integer NOT NULL DEFAULT 0,
      under_2500 integer NOT NULL DEFAULT 0,
      under_5000 integer NOT NULL DEFAULT 0,
      under_10000 integer NOT NULL DEFAULT 0,
      longer integer NOT NULL DEFAULT 0,
      PRIMARY KEY (application_id, mode, day)
    )
  `
  yield* sql`CREATE INDEX daily_delivery_stats_day ON daily_delivery_stats (day)`
  yield* sql`CREATE TABLE daily_stats_days (day date PRIMARY KEY, computed_at timestamptz NOT NULL)`
  yield* sql`CREATE INDEX refunds_confirmed ON refunds (confirmed_at) WHERE status = 'succeeded'`
  yield* sql`CREATE INDEX delivery_attempts_started ON delivery_attempts (started_at)`
})
