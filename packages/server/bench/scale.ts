/**
 * Scale and expiry at 1,000,000 payments (issue 11 points 1, 2, 4). By hand, prints figures; not a test:
 *
 *   node --conditions=@kassa/source bench/scale.ts
 *
 * Starts the real server (test harness) on a scratch PostgreSQL database (created, dropped at the end), seeds it with
 * set-based INSERT … SELECT generate_series — 1,000,000 payments over 90 days in three applications, one event and one
 * delivery per settled payment — then measures:
 *   (a) GET /api/v1/payments?limit=10 with 30,000 pending, not yet due payments in one application;
 *   (b) the time the sweeper takes to expire 100,000 due payments, and a list of that application meanwhile;
 *   (c) every list, count and search of the API and dashboards, through the services (median of 5 runs).
 * Settings: KASSA_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_SCALE_PAYMENTS (1000000),
 * KASSA_SCALE_PARTS (`abc`: which of the measures to run).
 */
import { execFileSync } from "node:child_process"
import type { Ids } from "@kassa/core"
import { DateTime, Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as ApplicationQueries from "../src/dashboard/ApplicationQueries.ts"
import { OperatorQueries } from "../src/dashboard/OperatorQueries.ts"
import { ExpirySweeper } from "../src/payments/ExpirySweeper.ts"
import { Payments } from "../src/payments/Payments.ts"
import { DeliveryRepository } from "../src/webhooks/DeliveryRepository.ts"
import { capturePlans, indexesOf, seqScansOf } from "../test/support/PlanCapture.ts"
import { postgresUrl, startServer } from "../test/support/TestServer.ts"
import { sleep } from "./BenchSupport.ts"

const total = Number(process.env.KASSA_SCALE_PAYMENTS ?? 1_000_000)
const parts = process.env.KASSA_SCALE_PARTS ?? "abc"
const server = await startServer("postgres")
type Row = Readonly<Record<string, unknown>>
const query = (statement: string) =>
  server.run(SqlClient.SqlClient.use((client) => client.unsafe<Row>(statement))) as Promise<ReadonlyArray<Row>>
// Seeding runs through psql: the server's connections may carry a statement_timeout meant for requests.
const [database] = await query("SELECT current_database() AS name")
const url = Object.assign(new URL(postgresUrl), { pathname: `/${String(database?.name)}` }).toString()
const sql = (statement: string) => {
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qc", statement], { stdio: ["ignore", "ignore", "inherit"] })
  return Promise.resolve()
}
const ms = (start: number) => Math.round(performance.now() - start)
// Not BenchSupport.median: this one takes the upper middle value of an even count (timed runs an odd count).
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const timed = async (run: () => Promise<unknown>, times = 5) => {
  const runs: Array<number> = []
  for (let index = 0; index < times; index++) {
    const start = performance.now()
    await run()
    runs.push(performance.now() - start)
  }
  return `median ${median(runs)?.toFixed(1)} ms, max ${Math.max(...runs).toFixed(1)} ms`
}

try {
  const big = await server.createApplication({ name: "Big shop" })
  const second = await server.createApplication({ name: "Second shop" })
  const third = await server.createApplication({ name: "Third shop" })
  const apps = [big, second, third].map((app) => `'${app.application.id}'::uuid`)
  // The migration of this version may or may not have denormalised deliveries.mode / event.
  const columns = await query(
    "SELECT column_name FROM information_schema.columns WHERE table_name = 'deliveries' AND column_name IN ('mode', 'event')"
  )
  const hasMode = columns.some((row) => row.column_name === "mode")
  const hasEvent = columns.some((row) => row.column_name === "event")

  let start = performance.now()
  // 80 % in the big application, 10 % in each other; 90 % live; settled: paid, failed, expired, cancelled, refunded.
  await sql(`
    INSERT INTO payments (id, application_id, mode, status, amount, refunded_amount, currency, method, order_reference,
      description, customer, locale, metadata, expires_at, paid_at, created_at, updated_at)
    SELECT gen_random_uuid(), (ARRAY[${apps.join(",")}])[CASE WHEN i % 10 < 8 THEN 1 WHEN i % 10 = 8 THEN 2 ELSE 3 END],
      CASE WHEN i % 10 = 7 THEN 'test' ELSE 'live' END, s.status, 1000 + i % 5000,
      CASE WHEN s.status = 'refunded' THEN 1000 + i % 5000 ELSE 0 END, 'EUR', 'card', 'order-' || i,
      'Order ' || i, '{"email":"buyer@example.com","name":"A Buyer","phone":null}', 'en', '{}',
      t.created + interval '1 hour', CASE WHEN s.status IN ('paid', 'refunded') THEN t.created + interval '5 minutes' END,
      t.created, t.created
    FROM generate_series(1, ${total}) i
      CROSS JOIN LATERAL (SELECT now() - interval '90 days' * (1 - i::float8 / ${total}) - interval '2 hours' AS created) t
      CROSS JOIN LATERAL (SELECT (ARRAY['paid','paid','paid','failed','expired','expired','cancelled','refunded'])[1 + i % 8] AS status) s
  `)
  console.log(`seeded ${total} payments in ${ms(start)} ms`)
  start = performance.now()
  await sql(`
    INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
    SELECT 'evt_' || gen_random_uuid(), application_id, id, mode, 'payment.' || status,
      '{"id":"evt","event":"payment.' || status || '","data":' || repeat('x', 900) || '}', updated_at
    FROM payments
  `)
  await sql(`
    INSERT INTO deliveries (id, event_id, application_id, status, attempt_count, created_at, updated_at
      ${hasMode ? ", mode" : ""} ${hasEvent ? ", event" : ""})
    SELECT gen_random_uuid(), e.id, e.application_id, CASE WHEN random() < 0.02 THEN 'failed' ELSE 'succeeded' END, 1,
      e.created_at, e.created_at ${hasMode ? ", e.mode" : ""} ${hasEvent ? ", e.event" : ""}
    FROM events e
  `)
  console.log(`seeded events and deliveries in ${ms(start)} ms`)
  start = performance.now()
  await sql(`VACUUM ANALYZE`)
  console.log(`vacuum analyze: ${ms(start)} ms`)

  // (a) 30,000 pending payments, not due for an hour, in the big application's test mode, created after the last
  // ANALYZE (as between two of autovacuum's: 3 % of the table changed, under its 10 % threshold).
  await sql(`
    INSERT INTO payments (id, application_id, mode, status, amount, currency, method, order_reference, customer, locale,
      metadata, expires_at, created_at, updated_at)
    SELECT gen_random_uuid(), ${apps[0]}, 'test', 'pending', 1000, 'EUR', 'card', 'pending-' || i, '{"email":"buyer@example.com","name":"A Buyer","phone":null}', 'en', '{}',
      now() + interval '1 hour', now() - interval '1 minute' * (1 - i::float8 / 30000), now()
    FROM generate_series(1, 30000) i
  `)
  const size = await query(
    `SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class WHERE relname IN ('payments', 'events', 'deliveries')`
  )
  console.log(size.map((row) => `${row.relname} ${row.size}`).join(", "))

  const list = (key: string, query: string) =>
    server.request(`/api/v1/payments${query}`, { key }).then((response) => {
      if (response.status !== 200) throw new Error(`list answered ${response.status}: ${response.text}`)
    })
  if (parts.includes("a"))
    console.log(
      `(a) GET /api/v1/payments?limit=10, 30,000 pending not due: ${await timed(() => list(big.testKey, "?limit=10"), 9)}`
    )

  // (c) every list, count and search, through the services: wall time (median of 5), then each read it sends under
  // EXPLAIN ANALYZE (test/support/PlanCapture.ts): execution time summed, indexes read, tables scanned whole.
  const appId = big.application.id as Ids.ApplicationId
  const since = DateTime.makeUnsafe(Date.now() - 30 * 86_400_000)
  type Figure = readonly [string, Effect.Effect<unknown, unknown, never>]
  const { payments, sqlClient, operator, deliveries } = await server.run(
    Effect.gen(function* () {
      return {
        payments: yield* Payments,
        sqlClient: yield* SqlClient.SqlClient,
        operator: yield* OperatorQueries,
        deliveries: yield* DeliveryRepository
      }
    }).pipe(Effect.provide(OperatorQueries.layer))
  )
  const apiList = (mode: "test" | "live", query: Record<string, unknown>) =>
    payments.list({ applicationId: appId, mode }, { limit: 10, ...query })
  const figures: ReadonlyArray<Figure> = [
    ["API list live, no filter", apiList("live", {})],
    ["API list live ?status=failed", apiList("live", { status: "failed" })],
    ["API list test ?status=pending", apiList("test", { status: "pending" })],
    ["API list test ?status=expired (30,000 pending)", apiList("test", { status: "expired" })],
    ["API list live ?status=expired", apiList("live", { status: "expired" })],
    ["API list live ?order_reference=order-500", apiList("live", { order_reference: "order-500" })],
    ["overview counts (30 days)", ApplicationQueries.make(sqlClient).overview(appId, since)],
    ...(
      [
        ["app dashboard payments, no filter", { applicationId: appId }],
        ["app dashboard payments ?status=refunded", { applicationId: appId, status: "refunded" }],
        ["app dashboard payments ?mode=test", { applicationId: appId, mode: "test" }],
        ["app dashboard payments ?status=expired", { applicationId: appId, status: "expired" }],
        ["app dashboard payments ?order_reference=order-500", { applicationId: appId, orderReference: "order-500" }],
        ["operator payments, no filter", {}],
        ["operator payments ?status=cancelled", { status: "cancelled" }],
        ["operator payments ?mode=test", { mode: "test" }],
        ["operator payments ?order_reference=order-77 (exact)", { orderReference: "order-77" }],
        ["operator payments ?order_reference=order-77 (prefix)", { orderReference: "order-77", prefix: true }],
        ["operator payments ?order_reference=o (prefix)", { orderReference: "o", prefix: true }],
        ["operator payments ?application=big&status=paid", { applicationId: appId, status: "paid" }]
      ] as const
    ).map(([name, query]): Figure => [name, operator.payments({ limit: 50, ...query })]),
    ...(
      [
        ["operator deliveries, no filter", {}],
        ["operator deliveries ?status=failed", { status: "failed" }],
        ["operator deliveries ?mode=test", { mode: "test" }],
        ["operator deliveries ?event=payment.refunded", { event: "payment.refunded" }],
        ["operator deliveries ?application=big&mode=test", { applicationId: appId, mode: "test" }]
      ] as const
    ).map(([name, query]): Figure => [name, operator.deliveries({ limit: 50, ...query })]),
    ...(
      [
        ["app deliveries (API/dashboard), no filter", {}],
        ["app deliveries ?status=failed", { status: "failed" }],
        ["app deliveries ?mode=test", { mode: "test" }],
        ["app deliveries ?event=payment.cancelled", { event: "payment.cancelled" }]
      ] as const
    ).map(([name, query]): Figure => [name, deliveries.list(appId, { limit: 50, ...query })])
  ]
  for (const [name, effect] of parts.includes("c") ? figures : []) {
    const wall = await timed(() => Effect.runPromise(Effect.ignore(effect)))
    const { plans } = await server.run(capturePlans(Effect.ignore(effect), { analyze: true }))
    const executed = plans.reduce((sum, explained) => sum + (explained.executionMs ?? 0), 0)
    const indexes = [...new Set(plans.flatMap(({ plan }) => indexesOf(plan)))].join(" ")
    const whole = [...new Set(plans.flatMap(({ plan }) => seqScansOf(plan)))].join(" ")
    console.log(
      `(c) ${name}: ${wall}; EXPLAIN ANALYZE ${executed.toFixed(1)} ms over ${plans.length} read(s); ` +
        `indexes: ${indexes}${whole === "" ? "" : `; SEQ SCAN: ${whole}`}`
    )
  }

  // (b) 100,000 due payments in the second application, expired by the sweeper (the server's own fiber shares work).
  if (parts.includes("b")) {
    await sql(`
      INSERT INTO payments (id, application_id, mode, status, amount, currency, method, order_reference, customer, locale,
        metadata, expires_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${apps[1]}, 'live', 'pending', 1000, 'EUR', 'card', 'due-' || i, '{"email":"buyer@example.com","name":"A Buyer","phone":null}', 'en', '{}',
        now() - interval '1 second', now() - interval '1 hour', now() - interval '1 hour'
      FROM generate_series(1, 100000) i
    `)
    await sql(`ANALYZE payments`)
    start = performance.now()
    const sweeping = server.run(ExpirySweeper.use((sweeper) => sweeper.sweep)).then(() => ms(start))
    await sleep(200)
    const listStart = performance.now()
    await list(second.liveKey, "?limit=10")
    console.log(`(b) GET /api/v1/payments?limit=10 during the backlog: ${ms(listStart)} ms`)
    const round = await sweeping
    // This round ends when its last batch comes back short; a batch the server's own fiber holds may still be running.
    const due = `SELECT count(*)::int AS n FROM payments WHERE status = 'pending' AND expires_at <= now()`
    while (Number((await query(due))[0]?.n) > 0) await sleep(50)
    const swept = ms(start)
    console.log(`(b) the sweep round called here returned after ${round} ms`)
    const left = await query(due)
    const events = await query(
      `SELECT count(*)::int AS n FROM events WHERE event = 'payment.expired' AND created_at > now() - interval '1 hour'`
    )
    console.log(
      `(b) 100,000 due payments expired in ${swept} ms; still due: ${left[0]?.n}; new payment.expired events: ${events[0]?.n}`
    )
  }
} finally {
  await server.close()
}
