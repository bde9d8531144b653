/**
 * The daily roll-up and the overviews' charts (issue 22 §3) read through indexes, as every dashboard query must at
 * 1,000,000 payments (QueryPlans.test.ts's pattern, with sequential scans off): a day's roll-up reads that day's
 * payments through `payments_newest`, its refunds through `refunds_confirmed` and its attempts through
 * `delivery_attempts_started` — never a table whole — and an overview reads the roll-up by its keys and the backlog
 * through the due part of `deliveries_due` (or an application's pending range). The roll-up's statements write, so
 * they are explained (plain EXPLAIN) without being run; the overview's reads are run and explained.
 */
import type { Ids } from "@kassa/core"
import { DateTime, Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DailyStats, statements } from "../src/stats/DailyStats.ts"
import * as StatsDays from "../src/stats/StatsDays.ts"
import * as StatsReads from "../src/stats/StatsReads.ts"
import { query } from "./support/PaymentFixtures.ts"
import { everyStatus, expr, oneAmongMany, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import { capturePlans, type Explained, indexesOf, type PlanNode, seqScansOf } from "./support/PlanCapture.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const big = ["payments", "events", "deliveries", "refunds", "delivery_attempts"]

describe.each(databases)("the roll-up's and the overviews' plans on %s", (database) => {
  let server: RunningServer
  let appId: Ids.ApplicationId
  let sqlClient: SqlClient.SqlClient

  beforeAll(async () => {
    server = await startServer(database)
    const shop = await server.createApplication({ name: "Stats plans shop" })
    const other = await server.createApplication({ name: "Other stats plans shop" })
    appId = shop.application.id as Ids.ApplicationId
    // 20,000 payments over 40 days (one every 3 minutes), most of another application, in two currencies; an event,
    // a delivery and an attempt per settled payment; a refund per refunded one.
    await seedPayments(
      server,
      paymentsInsert(
        {
          ...oneAmongMany(appId, other.application.id),
          currency: expr("CASE WHEN i % 3 = 0 THEN 'USD' ELSE 'EUR' END"),
          refunded_amount: expr("CASE WHEN s.status = 'refunded' THEN 1000 ELSE 0 END"),
          order_reference: expr("'order-' || i"),
          expires_at: expr("now() - interval '3 minutes' * (20000 - i) + interval '1 hour'"),
          paid_at: expr("CASE WHEN s.status IN ('paid', 'refunded') THEN now() END"),
          created_at: expr("now() - interval '3 minutes' * (20000 - i)")
        },
        everyStatus(20000)
      )
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
        SELECT 'evt_' || gen_random_uuid(), application_id, id, mode, 'payment.' || status, '{}', created_at
        FROM payments p WHERE status <> 'pending'
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO deliveries (id, event_id, application_id, mode, status, attempt_count, created_at, updated_at)
        SELECT gen_random_uuid(), id, application_id, mode, 'succeeded', 1, created_at, created_at FROM events
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO delivery_attempts (delivery_id, number, kind, started_at, response_status, duration_ms)
        SELECT id, 1, 'scheduled', created_at, CASE WHEN random() < 0.1 THEN 500 ELSE 200 END, 50 + (random() * 900)::int
        FROM deliveries
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO refunds (id, payment_id, amount, status, created_at, confirmed_at)
        SELECT gen_random_uuid(), id, amount, 'succeeded', created_at, created_at FROM payments WHERE status = 'refunded'
      `
    )
    // 300 more applications with 40 days of roll-up each, as an installation of many merchants: an application's
    // overview must read its own rows (the primary key), not every application's of the window.
    await query(
      server,
      (sql) => sql`
        INSERT INTO applications
        SELECT (jsonb_populate_record(NULL::applications,
          to_jsonb(a) || jsonb_build_object('id', gen_random_uuid(), 'name', 'Shop ' || i))).*
        FROM applications a CROSS JOIN generate_series(1, 300) i WHERE a.id = ${other.application.id}
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO daily_payment_stats (application_id, mode, day, currency, created, paid, paid_amount)
        SELECT a.id, m.mode, current_date - d, 'EUR', 10, 5, 5000
        FROM applications a CROSS JOIN (VALUES ('test'), ('live')) m (mode) CROSS JOIN generate_series(0, 39) d
        WHERE a.name LIKE 'Shop %'
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO daily_delivery_stats (application_id, mode, day, succeeded, failed, latency_ms_sum, under_250)
        SELECT a.id, m.mode, current_date - d, 10, 1, 1100, 11
        FROM applications a CROSS JOIN (VALUES ('test'), ('live')) m (mode) CROSS JOIN generate_series(0, 39) d
        WHERE a.name LIKE 'Shop %'
      `
    )
    sqlClient = await server.run(
      Effect.gen(function* () {
        return yield* SqlClient.SqlClient
      })
    )
    // The window rolled up, so the overview's reads have rows to read.
    await server.run(
      Effect.gen(function* () {
        return yield* (yield* DailyStats).runOnce(yield* DateTime.now)
      })
    )
    await query(server, (sql) => sql`VACUUM ANALYZE`)
  }, 180_000)
  afterAll(() => server?.close())

  /** No read scans a big table whole, and the reads use every index in `expected`. */
  const expectIndexed = (explained: ReadonlyArray<Explained>, expected: ReadonlyArray<string>) => {
    expect(explained.length).toBeGreaterThan(0)
    for (const { sql, plan } of explained)
      expect({ sql, seqScans: seqScansOf(plan).filter((table) => big.includes(table)) }).toEqual({ sql, seqScans: [] })
    const used = new Set(explained.flatMap(({ plan }) => indexesOf(plan)))
    for (const index of expected) expect([...used], `${index} among the indexes read`).toContain(index)
  }

  /** A statement explained (plain EXPLAIN, sequential scans off), not run. */
  const explain = async (statement: Statement.Statement<unknown>): Promise<Explained> => {
    const [text, params] = statement.compile()
    const rows = await server.run(
      sqlClient.withTransaction(
        Effect.gen(function* () {
          yield* sqlClient.unsafe("SET LOCAL enable_seqscan = off")
          return yield* sqlClient.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, params)
        })
      )
    )
    const raw = rows[0]?.["QUERY PLAN"]
    const [explained] = (typeof raw === "string" ? JSON.parse(raw) : raw) as ReadonlyArray<{ readonly Plan: PlanNode }>
    if (explained === undefined) throw new Error(`no plan for ${text}`)
    return { sql: text, plan: explained.Plan }
  }

  it("rolls a day up through the indexes on time, whatever the tables' size", async () => {
    const run = statements(sqlClient)
    const epochDay = StatsDays.epochDay(DateTime.makeUnsafe(Date.now())) - 3
    const day = StatsDays.dayText(epochDay)
    const start = new Date(epochDay * StatsDays.dayMillis)
    const end = new Date((epochDay + 1) * StatsDays.dayMillis)
    expectIndexed([await explain(run.payments(day, start, end))], ["payments_newest", "refunds_confirmed"])
    expectIndexed([await explain(run.deliveries(day, start, end))], ["delivery_attempts_started", "deliveries_pkey"])
    expectIndexed([await explain(run.computed(day))], ["daily_stats_days_pkey"])
  })

  const overviewPlans = (scope: StatsReads.Scope) =>
    server.run(
      capturePlans(
        Effect.gen(function* () {
          return yield* StatsReads.make(sqlClient).overview(scope, yield* DateTime.now, undefined)
        }),
        { settings: ["enable_seqscan = off"] }
      )
    )

  it("reads an application's overview by its keys, and its backlog by its pending range", async () => {
    const { result, plans } = await overviewPlans(appId)
    expect(result.totals.created).toBeGreaterThan(0)
    expectIndexed(plans, ["daily_payment_stats_pkey", "daily_delivery_stats_pkey", "daily_stats_days_pkey"])
    // The application's pending deliveries (a range of the backlog, whichever index the planner takes for it).
    const backlog = plans.find(({ sql }) => sql.includes("FROM deliveries"))
    expect(backlog, "the backlog's read").toBeDefined()
    expect(indexesOf(backlog?.plan ?? { "Node Type": "none" })).toSatisfy((indexes: ReadonlyArray<string>) =>
      indexes.some((index) =>
        ["deliveries_due", "deliveries_application_status", "deliveries_status_newest"].includes(index)
      )
    )
  })

  it("reads the operator's overview by day, and the backlog through the due part of deliveries_due", async () => {
    const { result, plans } = await overviewPlans("all")
    expect(result.totals.created).toBeGreaterThan(0)
    expectIndexed(plans, ["daily_payment_stats_day", "daily_delivery_stats_day"])
    const backlog = plans.find(({ sql }) => sql.includes("FROM deliveries"))
    expect(indexesOf(backlog?.plan ?? { "Node Type": "none" })).toSatisfy((indexes: ReadonlyArray<string>) =>
      indexes.some((index) => ["deliveries_due", "deliveries_status_newest"].includes(index))
    )
  })
})
