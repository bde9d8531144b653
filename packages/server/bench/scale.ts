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
 *   (c) every list, count and search of the API and dashboards, through the services (median of 5 runs);
 *   (d) live mode (issue 12), with every live payment's provider row, the live refunds' rows and 2,000 checkouts in
 *       flight (KASSA_SCALE_IN_FLIGHT): the create's payment-and-opening statement, the session write after the
 *       Stripe call, the background claims and the operator's provider pages, each under EXPLAIN (ANALYZE, BUFFERS)
 *       in a rolled-back savepoint.
 * Settings: KASSA_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_SCALE_PAYMENTS (1000000),
 * KASSA_SCALE_PARTS (`abcd`: which of the measures to run; events and deliveries are seeded for a, b and c only),
 * KASSA_SCALE_IN_FLIGHT (2000: (d)'s live checkouts in flight).
 *
 * (d) on 2026-11-25: PostgreSQL 15, two cores shared with other test runs (load 8–14, so times are noisy; buffers
 * are the steady figure), 1,000,000 payments, a provider row for each of the 900,000 live ones, 100,000 provider
 * refunds (1,000 being read), 1,000 failed creates awaiting clean-up. EXPLAIN ANALYZE execution time (median of 5),
 * shared buffers, with 2,000 | 50,000 checkouts in flight (KASSA_SCALE_IN_FLIGHT):
 *   live create, payment + opening row (insertOpening)   0.58 ms    43 |  0.94 ms    43 (provider_links: 1 page)
 *   live create, session UPDATE after Stripe (opened)     0.21 ms    39 |  0.21 ms    24
 *   live create, refusal UPDATE (notOpened)               0.18 ms    41 |  0.23 ms    17
 *   clean-up, stuck opening rows (claimStuck, 100)        0.73 ms   445 |  4.62 ms  2229
 *   reconciler, due reads (claimDue, 100)                 4.17 ms  2481 |  5.33 ms  2490
 *   reconciler, failed creates' clean-up, none due        0.06 ms     1 |  0.10 ms     1
 *     (before 0009_provider_reads)                        5.37 ms  2185 | 13.47 ms  3355
 *   reconciler, failed creates' clean-up, 1,000 due       9.74 ms  3234 |  7.38 ms  2825
 *     (before 0009_provider_reads)                       13.03 ms  5460 | 21.61 ms  5979
 *   reconciler, expiries at the provider (claimExpiring)  6.15 ms  2951 |  6.17 ms  2954
 *   reconciler, due refunds (refreshDue's claim)          8.59 ms  2901 |  5.49 ms  2901
 *   dashboard, open discrepancies, first page             0.59 ms   208 |  0.61 ms   208
 *   dashboard, open discrepancies, next page              0.61 ms   211 |  0.64 ms   211
 *   dashboard, overdue reads                              1.22 ms   477 |  1.38 ms   481
 *     (before 0009_provider_reads)                       51.98 ms  8860 | 73.36 ms 10504
 * The claims write 100 rows each (in a savepoint rolled back), which is most of their cost.
 * Second pages (2026-11-28, cursors read inside the statement; 1,000,000 payments, EXPLAIN ANALYZE, 2 reads: the
 * cursor's row by its key, then the page): API list 0.1 ms (payments_pkey, payments_newest), the application's
 * dashboard list and CSV batch 7.0 ms (its first page 7.6), deliveries 0.6 ms (first page 0.4).
 * The fetch in one statement (2026-11-28, (c) at 1,000,000 payments): the key's lookup carrying the payment's read,
 * one read, the payment by payments_pkey, EXPLAIN ANALYZE 0.9 ms (one cold run; median wall 1.8 ms through the
 * service); api_keys and applications (3 rows) and the empty refunds table read whole.
 */
import { execFileSync } from "node:child_process"
import { Ids } from "@kassa/core"
import { DateTime, Duration, Effect, Option } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import * as ApplicationQueries from "../src/dashboard/ApplicationQueries.ts"
import { OperatorQueries } from "../src/dashboard/OperatorQueries.ts"
import * as ProviderQueries from "../src/dashboard/ProviderQueries.ts"
import { PaymentRepository } from "../src/ledger/PaymentRepository.ts"
import { LiveCheckouts } from "../src/live/LiveCheckouts.ts"
import { LiveRefunds } from "../src/live/LiveRefunds.ts"
import { ExpirySweeper } from "../src/payments/ExpirySweeper.ts"
import { MerchantPayments } from "../src/payments/MerchantPayments.ts"
import { DeliveryRepository } from "../src/webhooks/DeliveryRepository.ts"
import { buyer, expr, paymentsInsert } from "../test/support/PaymentSeed.ts"
import { capturePlans, indexesOf, type PlanNode, seqScansOf } from "../test/support/PlanCapture.ts"
import { postgresUrl, startServer } from "../test/support/TestServer.ts"
import { sleep } from "./BenchSupport.ts"

const total = Number(process.env.KASSA_SCALE_PAYMENTS ?? 1_000_000)
const parts = process.env.KASSA_SCALE_PARTS ?? "abcd"
/** (d) live checkouts in flight (a provider outage grows it: every read waits). */
const inFlight = Number(process.env.KASSA_SCALE_IN_FLIGHT ?? 2000)
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

/**
 * The live side in proportion (issue 12): each application linked; every live payment's checkout row (open with a
 * session, `not_opened` when it failed), every refunded payment's refund and, when live, its provider row (1 in 100
 * still being read); {@link inFlight} live checkouts in flight in the big application (visited, read again in an
 * hour; 1 in 100 stuck `opening`, leased for a day); 1,000 failed creates whose clean-up is due in 3 days; 1 in
 * 1,000 paid live payments with a discrepancy, half resolved. Nothing is due now, so the server's own rounds leave
 * the rows alone (and reach no provider with the links' fake keys).
 */
const seedLive = async (apps: ReadonlyArray<string>) => {
  await sql(`
    INSERT INTO provider_links (id, application_id, provider, account_id, livemode, key_display, secret_key_encrypted,
      webhook_endpoint_id, webhook_secret_encrypted, status, linked_at)
    SELECT gen_random_uuid(), a, 'stripe', 'acct_' || left(md5(a::text), 16), true, 'rk_live_…bench', 'sealed',
      'we_' || left(md5(a::text), 16), 'sealed', 'active', now() - interval '1 year'
    FROM unnest(ARRAY[${apps.join(",")}]) a
  `)
  await sql(
    paymentsInsert(
      {
        application_id: expr(`${apps[0]}`),
        mode: "live",
        order_reference: expr("'flight-' || i"),
        customer: buyer,
        created_at: expr("now() - interval '30 minutes'"),
        updated_at: expr("now() - interval '30 minutes'")
      },
      `generate_series(1, ${inFlight}) i`
    )
  )
  await sql(`
    INSERT INTO provider_payments (payment_id, link_id, state, checkout_id, provider_payment_id, idempotency_key,
      visit_ip, visit_user_agent, visited_at, next_read_at, last_read_at, created_at, updated_at)
    SELECT p.id, l.id, c.state, CASE WHEN c.state = 'open' THEN 'cs_' || p.id END,
      CASE WHEN p.status IN ('paid', 'refunded') THEN 'pi_' || p.id END, 'kassa:bench:' || p.id,
      -- A visit is its address, User-Agent and time together (LiveCheckouts' row schema).
      CASE WHEN p.status = 'pending' THEN '203.0.113.7' END, CASE WHEN p.status = 'pending' THEN 'Mozilla/5.0' END,
      CASE WHEN p.status = 'pending' THEN now() - interval '29 minutes' END,
      CASE WHEN c.state = 'opening' THEN now() + interval '1 day' WHEN p.status = 'pending' THEN now() + interval '1 hour'
        WHEN c.state = 'not_opened' AND right(p.order_reference, 3) = '003' THEN now() + interval '3 days' END,
      CASE WHEN p.status = 'pending' THEN now() - interval '20 minutes' ELSE p.updated_at END,
      CASE WHEN c.state = 'opening' THEN now() - interval '1 hour' ELSE p.created_at END, p.updated_at
    FROM payments p JOIN provider_links l ON l.application_id = p.application_id AND l.status = 'active'
      CROSS JOIN LATERAL (
        SELECT CASE WHEN p.status = 'failed' THEN 'not_opened'
                 WHEN p.status = 'pending' AND p.order_reference ~ '^flight-[0-9]*00$' THEN 'opening'
                 ELSE 'open' END AS state
      ) c
    WHERE p.mode = 'live'
  `)
  await sql(`
    INSERT INTO refunds (id, payment_id, amount, status, created_at, confirmed_at)
    SELECT gen_random_uuid(), id, amount, 'succeeded', updated_at, updated_at FROM payments WHERE status = 'refunded'
  `)
  await sql(`
    INSERT INTO provider_refunds (refund_id, payment_id, link_id, provider_refund_id, attempts, next_read_at,
      last_read_at, created_at, updated_at)
    SELECT r.id, r.payment_id, pp.link_id, 're_' || r.id, 1, CASE WHEN r.seq % 100 = 0 THEN now() + interval '1 hour' END,
      CASE WHEN r.seq % 100 = 0 THEN now() - interval '1 hour' ELSE r.created_at END, r.created_at, r.created_at
    FROM refunds r JOIN provider_payments pp ON pp.payment_id = r.payment_id
  `)
  await sql(`
    INSERT INTO provider_discrepancies (payment_id, kind, message, detected_at, resolved_at)
    SELECT id, 'paid_after_final', 'The provider says it was paid', updated_at,
      CASE WHEN right(order_reference, 4) = '0000' THEN now() END
    FROM payments WHERE mode = 'live' AND status = 'paid' AND right(order_reference, 3) = '000'
  `)
}

/**
 * (d) Each live statement under EXPLAIN (ANALYZE, BUFFERS), in a savepoint rolled back at once, then answered with no
 * rows instead of being run (so a claim reaches no provider, and each of the five runs finds the same rows): the
 * median execution time, the buffers, the indexes read and any table read whole.
 */
const measureLive = async (appId: Ids.ApplicationId) => {
  const { repo, checkouts, refunds, sqlClient } = await server.run(
    Effect.gen(function* () {
      return {
        repo: yield* PaymentRepository,
        checkouts: yield* LiveCheckouts,
        refunds: yield* LiveRefunds,
        sqlClient: yield* SqlClient.SqlClient
      }
    })
  )
  interface Analyzed {
    readonly plan: PlanNode & { readonly "Shared Hit Blocks"?: number; readonly "Shared Read Blocks"?: number }
    readonly executionMs: number
  }
  /** `setup`: statements run first in the transaction (rolled back with it), e.g. an index dropped to compare. */
  const analyze = (effect: Effect.Effect<unknown, unknown, never>, setup: ReadonlyArray<string> = []) => {
    const found: Array<Analyzed> = []
    const transformer: Statement.Transformer = (self, statement) => {
      const [text, params] = self.compile()
      return Effect.gen(function* () {
        yield* statement.unsafe("SAVEPOINT measured")
        const rows = yield* statement.unsafe<{ "QUERY PLAN": unknown }>(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
          params
        )
        yield* statement.unsafe("ROLLBACK TO SAVEPOINT measured")
        const raw = rows[0]?.["QUERY PLAN"]
        const [explained] = (typeof raw === "string" ? JSON.parse(raw) : raw) as ReadonlyArray<{
          readonly Plan: Analyzed["plan"]
          readonly "Execution Time": number
        }>
        if (explained !== undefined) found.push({ plan: explained.Plan, executionMs: explained["Execution Time"] })
        return statement.unsafe("SELECT 1 WHERE false")
      }).pipe(Effect.provideService(Statement.CurrentTransformer, undefined), Effect.orDie)
    }
    return server
      .run(
        sqlClient
          .withTransaction(
            Effect.forEach(setup, (statement) => sqlClient.unsafe(statement)).pipe(
              Effect.andThen(
                Effect.exit(effect.pipe(Effect.provideService(Statement.CurrentTransformer, transformer)))
              ),
              Effect.andThen(Effect.fail("rolled back" as const))
            )
          )
          .pipe(Effect.ignore)
      )
      .then(() => found)
  }
  const [link] = await query(`SELECT id FROM provider_links WHERE application_id = '${appId}' AND status = 'active'`)
  const [stuck] = await query(`SELECT payment_id FROM provider_payments WHERE state = 'opening' LIMIT 1`)
  const [some] = await query(`SELECT id FROM payments WHERE application_id = '${appId}' AND mode = 'live' LIMIT 1`)
  const [stored] = await server.run(repo.findMany([String(some?.id) as Ids.PaymentId]))
  const [open] = await query(
    `SELECT id FROM provider_discrepancies WHERE resolved_at IS NULL ORDER BY detected_at DESC OFFSET 50 LIMIT 1`
  )
  if (stored === undefined || link === undefined || stuck === undefined || open === undefined)
    throw new Error("the live seed is missing")
  const now = DateTime.makeUnsafe(Date.now())
  // Two days ahead: every checkout in flight is due for a read and past its expiry, every stuck one past its lease.
  const later = DateTime.makeUnsafe(Date.now() + 2 * 86_400_000)
  const claims = { now: later, limit: 100, lease: Duration.minutes(1) }
  const cleanupDue = DateTime.makeUnsafe(Date.now() + 4 * 86_400_000)
  const stuckId = String(stuck.payment_id) as Ids.PaymentId
  const id = crypto.randomUUID() as Ids.PaymentId
  const overdue = ProviderQueries.overdueReads(sqlClient, { now, limit: 50, before: undefined })
  const liveFigures: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown, never>, ReadonlyArray<string>?]> =
    [
      [
        "live create: payment + opening row (insertOpening)",
        repo.insertOpening(
          {
            ...stored.payment,
            id,
            status: "pending",
            paid_at: null,
            refunded_amount: 0,
            refunds: [],
            order_reference: `bench-${id}`
          },
          { applicationId: appId, idempotencyKey: `bench-${id}` },
          now,
          { linkId: String(link.id), idempotencyKey: `kassa:${appId}:live:payment:${id}` }
        )
      ],
      [
        "live create: session UPDATE after Stripe (opened)",
        checkouts.opened({
          paymentId: stuckId,
          checkoutId: `cs_bench_${id}`,
          providerPaymentId: null,
          url: "https://checkout.stripe.com/c/pay/bench",
          expiresAt: DateTime.addDuration(now, Duration.hours(1)),
          now
        })
      ],
      ["live create: refusal UPDATE (notOpened)", checkouts.notOpened(stuckId, { refused: true }, now, null)],
      [
        "clean-up: stuck opening rows (claimStuck)",
        checkouts.claimStuck({ ...claims, staleAfter: Duration.minutes(2) })
      ],
      ["reconciler: due reads (claimDue)", checkouts.claimDue(claims)],
      // Every checkout in flight due for a read, none of the clean-up's rows (they are due a day later).
      ["reconciler: failed creates' clean-up, none due (claimCleanup)", checkouts.claimCleanup(claims)],
      ["reconciler: failed creates' clean-up, 1,000 due", checkouts.claimCleanup({ ...claims, now: cleanupDue })],
      ["reconciler: expiries at the provider (claimExpiring)", checkouts.claimExpiring(claims)],
      ["reconciler: due refunds (refreshDue's claim)", refunds.refreshDue({ now: later, limit: 100 })],
      [
        "dashboard: open discrepancies, first page",
        ProviderQueries.openDiscrepancies(sqlClient, { limit: 50, before: undefined })
      ],
      [
        "dashboard: open discrepancies, next page",
        ProviderQueries.openDiscrepancies(sqlClient, { limit: 50, before: Number(open.id) })
      ],
      ["dashboard: overdue reads", overdue],
      // As before 0009_provider_reads: its indexes dropped in the rolled-back transaction.
      [
        "dashboard: overdue reads without 0009's indexes",
        overdue,
        ["DROP INDEX provider_payments_waiting", "DROP INDEX provider_refunds_waiting"]
      ],
      [
        "reconciler: failed creates' clean-up, none due, without 0009's index",
        checkouts.claimCleanup(claims),
        ["DROP INDEX provider_payments_cleanup_due"]
      ],
      [
        "reconciler: failed creates' clean-up, 1,000 due, without 0009's index",
        checkouts.claimCleanup({ ...claims, now: cleanupDue }),
        ["DROP INDEX provider_payments_cleanup_due"]
      ]
    ]
  for (const [name, effect, setup] of liveFigures) {
    const runs: Array<ReadonlyArray<Analyzed>> = []
    for (let index = 0; index < 5; index++) runs.push(await analyze(effect, setup))
    if (runs.some((found) => found.length === 0)) throw new Error(`${name}: a run sent no statement (it failed)`)
    const last = runs.at(-1) ?? []
    const executed = median(runs.map((found) => found.reduce((sum, { executionMs }) => sum + executionMs, 0))) ?? 0
    const hit = last.reduce((sum, { plan }) => sum + (plan["Shared Hit Blocks"] ?? 0), 0)
    const read = last.reduce((sum, { plan }) => sum + (plan["Shared Read Blocks"] ?? 0), 0)
    const indexes = [...new Set(last.flatMap(({ plan }) => indexesOf(plan)))].join(" ")
    const whole = [...new Set(last.flatMap(({ plan }) => seqScansOf(plan)))].join(" ")
    console.log(
      `(d) ${name}: ${executed.toFixed(2)} ms over ${last.length} statement(s); buffers hit ${hit} read ${read}; ` +
        `indexes: ${indexes}${whole === "" ? "" : `; SEQ SCAN: ${whole}`}`
    )
  }
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
  await sql(
    paymentsInsert(
      {
        application_id: expr(
          `(ARRAY[${apps.join(",")}])[CASE WHEN i % 10 < 8 THEN 1 WHEN i % 10 = 8 THEN 2 ELSE 3 END]`
        ),
        mode: expr("CASE WHEN i % 10 = 7 THEN 'test' ELSE 'live' END"),
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
      CROSS JOIN LATERAL (SELECT now() - interval '90 days' * (1 - i::float8 / ${total}) - interval '2 hours' AS created) t
      CROSS JOIN LATERAL (SELECT (ARRAY['paid','paid','paid','failed','expired','expired','cancelled','refunded'])[1 + i % 8] AS status) s`
    )
  )
  console.log(`seeded ${total} payments in ${ms(start)} ms`)
  if (parts.includes("d")) {
    start = performance.now()
    await seedLive(apps)
    console.log(`seeded the live side in ${ms(start)} ms`)
  }
  start = performance.now()
  if (/[abc]/.test(parts))
    await sql(`
    INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
    SELECT 'evt_' || gen_random_uuid(), application_id, id, mode, 'payment.' || status,
      '{"id":"evt","event":"payment.' || status || '","data":' || repeat('x', 900) || '}', updated_at
    FROM payments
  `)
  if (/[abc]/.test(parts))
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
  await sql(
    paymentsInsert(
      {
        application_id: expr(`${apps[0]}`),
        order_reference: expr("'pending-' || i"),
        customer: buyer,
        created_at: expr("now() - interval '1 minute' * (1 - i::float8 / 30000)")
      },
      "generate_series(1, 30000) i"
    )
  )
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
  const { keys, payments, sqlClient, operator, deliveries } = await server.run(
    Effect.gen(function* () {
      return {
        keys: yield* ApiKeyRepository,
        payments: yield* MerchantPayments,
        sqlClient: yield* SqlClient.SqlClient,
        operator: yield* OperatorQueries,
        deliveries: yield* DeliveryRepository
      }
    }).pipe(Effect.provide(OperatorQueries.layer))
  )
  const apiList = (mode: "test" | "live", query: Record<string, unknown>) =>
    payments.list({ applicationId: appId, mode }, { limit: 10, ...query })
  // Where a second page starts: each list's first page's last row (the cursor is read inside the statement).
  const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(effect)
  const apiCursor = (await run(apiList("live", {}))).data.at(-1)?.id
  const searchCursor = (await run(operator.payments({ limit: 50, applicationId: appId }))).rows.at(-1)?.id
  const deliveryCursor = Option.getOrThrow(await run(deliveries.list(appId, { limit: 50 }))).data.at(-1)?.id
  const fetched = Ids.PaymentId.make(apiCursor ?? "")
  const figures: ReadonlyArray<Figure> = [
    // GET /api/v1/payments/{id} through its lane: one statement, the key's lookup carrying the payment's read.
    [
      "API fetch (the key's statement with the payment's read)",
      keys.authenticate(big.liveKey, payments.riderOf(fetched))
    ],
    ["API list live, no filter", apiList("live", {})],
    ["API list live ?status=failed", apiList("live", { status: "failed" })],
    ["API list test ?status=pending", apiList("test", { status: "pending" })],
    ["API list test ?status=expired (30,000 pending)", apiList("test", { status: "expired" })],
    ["API list live ?status=expired", apiList("live", { status: "expired" })],
    ["API list live ?order_reference=order-500", apiList("live", { order_reference: "order-500" })],
    ["API list live, second page (starting_after)", apiList("live", { starting_after: apiCursor })],
    ["overview counts (30 days)", ApplicationQueries.make(sqlClient).overview(appId, since)],
    ...(
      [
        ["app dashboard payments, no filter", { applicationId: appId }],
        ["app dashboard payments ?status=refunded", { applicationId: appId, status: "refunded" }],
        ["app dashboard payments ?mode=test", { applicationId: appId, mode: "test" }],
        ["app dashboard payments ?status=expired", { applicationId: appId, status: "expired" }],
        ["app dashboard payments ?order_reference=order-500", { applicationId: appId, orderReference: "order-500" }],
        [
          "app dashboard payments, second page (and CSV batches)",
          { applicationId: appId, startingAfter: searchCursor }
        ],
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
        ["app deliveries ?event=payment.cancelled", { event: "payment.cancelled" }],
        ["app deliveries, second page", { startingAfter: deliveryCursor }]
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

  if (parts.includes("d")) await measureLive(appId)

  // (b) 100,000 due payments in the second application, expired by the sweeper (the server's own fiber shares work).
  if (parts.includes("b")) {
    await sql(
      paymentsInsert(
        {
          application_id: expr(`${apps[1]}`),
          mode: "live",
          order_reference: expr("'due-' || i"),
          customer: buyer,
          expires_at: expr("now() - interval '1 second'"),
          created_at: expr("now() - interval '1 hour'"),
          updated_at: expr("now() - interval '1 hour'")
        },
        "generate_series(1, 100000) i"
      )
    )
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
