/**
 * Retention at 1,000,000 payments (issue 14 §4). By hand, prints figures; not a test:
 *
 *   node --conditions=@kassa/source bench/retention.ts
 *
 * Starts the real server (test harness) on a scratch PostgreSQL database (created, dropped at the end), seeds it with
 * set-based INSERT … SELECT generate_series: KASSA_RETENTION_PAYMENTS (1,000,000) settled payments over 180 days,
 * each with one event (≈1 kB body, as the API writes), one finished delivery and one attempt, and 100,000 audit
 * entries over 3 years; so about half of each is past its window. Then:
 *   (a) each pruning statement explained on the real statistics: indexes read, tables scanned whole;
 *   (b) GET /api/v1/payments/:id latency with nothing else running (baseline);
 *   (c) one retention round (Retention.prune) timed, with the same GET running back to back meanwhile;
 *   (d) what is left, and the tables' sizes before and after (space is reused by new rows, not returned: VACUUM).
 * Settings: KASSA_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_RETENTION_PAYMENTS.
 */
import { execFileSync } from "node:child_process"
import { DateTime, Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Retention from "../src/retention/Retention.ts"
import { buyer, expr, paymentsInsert } from "../test/support/PaymentSeed.ts"
import { indexesOf, type PlanNode, seqScansOf } from "../test/support/PlanCapture.ts"
import { postgresUrl, startServer } from "../test/support/TestServer.ts"
import { percentile } from "./BenchSupport.ts"

const total = Number(process.env.KASSA_RETENTION_PAYMENTS ?? 1_000_000)
const server = await startServer("postgres")
type Row = Readonly<Record<string, unknown>>
const query = (statement: string) =>
  server.run(SqlClient.SqlClient.use((client) => client.unsafe<Row>(statement))) as Promise<ReadonlyArray<Row>>
// Seeding runs through psql: the server's connections carry a statement_timeout meant for requests.
const [database] = await query("SELECT current_database() AS name")
const url = Object.assign(new URL(postgresUrl), { pathname: `/${String(database?.name)}` }).toString()
const psql = (statement: string) =>
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qc", statement], { stdio: ["ignore", "ignore", "inherit"] })
const ms = (start: number) => Math.round(performance.now() - start)
const sizes = async () =>
  (
    await query(
      `SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class
       WHERE relname IN ('payments', 'events', 'deliveries', 'delivery_attempts', 'audit_log') ORDER BY relname`
    )
  )
    .map((row) => `${row.relname} ${row.size}`)
    .join(", ")

/** GETs of one payment back to back (a sample of ids, old and recent) until `until` resolves; latencies in ms. */
const probe = async (key: string, ids: ReadonlyArray<string>, until: Promise<unknown>) => {
  let done = false
  void until.finally(() => {
    done = true
  })
  const latencies: Array<number> = []
  let errors = 0
  for (let index = 0; !done; index++) {
    const start = performance.now()
    const response = await server.request(`/api/v1/payments/${ids[index % ids.length]}`, { key })
    latencies.push(performance.now() - start)
    if (response.status !== 200) errors++
  }
  const sorted = latencies.sort((a, b) => a - b)
  const f = (value: number) => value.toFixed(1)
  return `${sorted.length} GETs, ${errors} not 200: p50 ${f(percentile(sorted, 0.5))} ms, p95 ${f(percentile(sorted, 0.95))} ms, p99 ${f(percentile(sorted, 0.99))} ms, max ${f(percentile(sorted, 1))} ms`
}

try {
  const shop = await server.createApplication({ name: "Retention shop", rate_limit_per_minute: 100_000_000 })
  const app = `'${shop.application.id}'::uuid`
  let start = performance.now()
  psql(
    paymentsInsert(
      {
        application_id: expr(app),
        mode: "live",
        status: expr("s.status"),
        amount: expr("1000 + i % 5000"),
        refunded_amount: expr("CASE WHEN s.status = 'refunded' THEN 1000 + i % 5000 ELSE 0 END"),
        order_reference: expr("'order-' || i"),
        description: expr("'Order ' || i"),
        customer: buyer,
        expires_at: expr("t.created + interval '1 hour'"),
        paid_at: expr("CASE WHEN s.status IN ('paid', 'refunded') THEN t.created + interval '5 minutes' END"),
        created_at: expr("t.created"),
        updated_at: expr("t.created")
      },
      `generate_series(1, ${total}) i
      CROSS JOIN LATERAL (SELECT now() - interval '180 days' * (1 - i::float8 / ${total}) - interval '2 hours' AS created) t
      CROSS JOIN LATERAL (SELECT (ARRAY['paid','paid','paid','failed','expired','expired','cancelled','refunded'])[1 + i % 8] AS status) s`
    )
  )
  psql(`
    INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
    SELECT 'evt_' || gen_random_uuid(), application_id, id, mode, 'payment.' || status,
      '{"id":"evt","event":"payment.' || status || '","data":' || repeat('x', 900) || '}', updated_at
    FROM payments
  `)
  psql(`
    INSERT INTO deliveries (id, event_id, application_id, mode, status, attempt_count, created_at, updated_at)
    SELECT gen_random_uuid(), e.id, e.application_id, e.mode,
      CASE WHEN random() < 0.02 THEN 'failed' ELSE 'succeeded' END, 1, e.created_at, e.created_at
    FROM events e
  `)
  psql(`
    INSERT INTO delivery_attempts (delivery_id, number, kind, started_at, url, response_status, duration_ms,
      response_body)
    SELECT id, 1, 'scheduled', created_at, 'https://shop.example/webhooks', 200, 40, 'ok' FROM deliveries
  `)
  psql(`
    INSERT INTO audit_log (at, actor, action, application_id, target, details)
    SELECT now() - interval '3 years' * (1 - i::float8 / 100000), 'owner@shop.example', 'application.updated',
      ${app}, 'application', '{}'
    FROM generate_series(1, 100000) i
  `)
  psql("VACUUM ANALYZE")
  console.log(`seeded ${total} payments, events, deliveries, attempts and 100,000 audit entries in ${ms(start)} ms`)
  console.log(`before: ${await sizes()}`)

  // (a) The statements as they run, explained with the planner's own choice (sequential scans allowed).
  const sql = await server.run(
    Effect.gen(function* () {
      return yield* SqlClient.SqlClient
    })
  )
  const batches = Retention.statements(sql, Retention.defaults.batchSize)
  const cutoff = new Date(Date.now() - 90 * 86_400_000)
  for (const [name, statement] of [
    ["deliveries", batches.deliveries(cutoff)],
    ["events", batches.events(cutoff)],
    ["audit", batches.audit(new Date(Date.now() - 730 * 86_400_000))],
    ["sessions", batches.sessions(new Date())],
    ["idempotency keys", batches.idempotencyKeys(new Date(Date.now() - 86_400_000))]
  ] as const) {
    const [text, params] = statement.compile()
    const [row] = await server.run(sql.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, params))
    const raw = row?.["QUERY PLAN"]
    const [explained] = (typeof raw === "string" ? JSON.parse(raw) : raw) as ReadonlyArray<{ Plan: PlanNode }>
    if (explained === undefined) throw new Error(`no plan for ${name}`)
    console.log(
      `(a) ${name}: indexes ${[...new Set(indexesOf(explained.Plan))].join(", ")}; seq scans: ${seqScansOf(explained.Plan).join(", ") || "none"}`
    )
  }

  // A sample of payments to fetch: old ones (their events pruned during the round) and recent ones.
  const ids = (await query(`SELECT id FROM payments TABLESAMPLE SYSTEM (1) LIMIT 2000`)).map((row) => String(row.id))
  // (b) Baseline: 5 s of GETs with nothing else running.
  console.log(`(b) baseline: ${await probe(shop.liveKey, ids, new Promise((resolve) => setTimeout(resolve, 5000)))}`)

  // (c) One round, timed, with the GETs running meanwhile.
  start = performance.now()
  const round = server.run(Effect.flatMap(DateTime.now, (now) => Retention.Retention.use((r) => r.prune(now))))
  const during = probe(shop.liveKey, ids, round)
  const result = await round
  console.log(`(c) one round: ${ms(start)} ms, deleted ${JSON.stringify(result)}`)
  console.log(`(c) while pruning: ${await during}`)

  // (d) What is left.
  const [left] = await query(`
    SELECT (SELECT count(*) FROM payments)::int AS payments, (SELECT count(*) FROM events)::int AS events,
      (SELECT count(*) FROM deliveries)::int AS deliveries, (SELECT count(*) FROM delivery_attempts)::int AS attempts,
      (SELECT count(*) FROM audit_log)::int AS audit
  `)
  console.log(`(d) left: ${JSON.stringify(left)}`)
  console.log(`(d) after (before VACUUM): ${await sizes()}`)
} finally {
  await server.close()
}
