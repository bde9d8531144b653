/**
 * Every list, count and search the API and dashboards offer is served by an index (issue 11 §4). Each hot path runs
 * through its service on a seeded database with `enable_seqscan = off`, and every read it sends is explained
 * (test/support/PlanCapture.ts): no read may scan payments, events or deliveries whole, and each reads the index
 * made for it — so dropping an index, or writing a query no index can serve, fails here. The figures at
 * 1,000,000 payments are bench/scale.ts's.
 *
 * Live mode (issue 12) likewise: the create's payment-and-`opening` statement and the session write after the Stripe
 * call, the background claims (stuck `opening` rows, due reads, failed creates' clean-up, expiries, due refunds) and
 * the operator's discrepancy and overdue lists. Those are writes too, so they are explained (plain EXPLAIN) without
 * being run: the seed's provider rows stay as they are, and no claim reaches a provider.
 */
import type { Ids, Mode } from "@kassa/core"
import { DateTime, Duration, Effect } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import * as ApplicationQueries from "../src/dashboard/ApplicationQueries.ts"
import { OperatorQueries } from "../src/dashboard/OperatorQueries.ts"
import * as ProviderQueries from "../src/dashboard/ProviderQueries.ts"
import { EventLog } from "../src/ledger/EventLog.ts"
import { PaymentRepository } from "../src/ledger/PaymentRepository.ts"
import { PaymentWrites } from "../src/ledger/PaymentWrites.ts"
import { LiveCheckouts } from "../src/live/LiveCheckouts.ts"
import { LiveRefunds } from "../src/live/LiveRefunds.ts"
import { MerchantPayments } from "../src/payments/MerchantPayments.ts"
import type { ProviderLinkId } from "../src/providers/ProviderConnector.ts"
import * as Retention from "../src/retention/Retention.ts"
import { DeliveryRepository } from "../src/webhooks/DeliveryRepository.ts"
import { pendingPayment, query } from "./support/PaymentFixtures.ts"
import { capturePlans, type Explained, indexesOf, nodes, type PlanNode, seqScansOf } from "./support/PlanCapture.ts"
import { seedQueryPlans } from "./support/QueryPlansSupport.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const big = [
  "payments",
  "events",
  "deliveries",
  "refunds",
  "delivery_attempts",
  // One row per live payment and per live refund: as big as the live side of payments and refunds.
  "provider_payments",
  "provider_refunds",
  // One row per provider event applied: looked up before every read (issue 21 §10).
  "provider_events"
]

describe.each(databases)("query plans on %s", (database) => {
  let server: RunningServer
  let appId: Ids.ApplicationId
  let paymentId: Ids.PaymentId
  let shopKey: string
  let sqlClient: SqlClient.SqlClient

  beforeAll(async () => {
    server = await startServer(database)
    const shop = await server.createApplication({ name: "Plans shop" })
    const other = await server.createApplication({ name: "Other plans shop" })
    appId = shop.application.id as Ids.ApplicationId
    shopKey = shop.testKey
    paymentId = (await pendingPayment(server, shop.testKey)).id as Ids.PaymentId
    // Every status in both modes, with events, deliveries and the live side (test/support/QueryPlansSupport.ts).
    await seedQueryPlans(server, appId, other.application.id)
    sqlClient = await server.run(
      Effect.gen(function* () {
        return yield* SqlClient.SqlClient
      })
    )
  }, 120_000)
  afterAll(() => server.close())

  /** The reads `effect` sends, explained with sequential scans off. */
  const plans = <A, E>(effect: Effect.Effect<A, E, never>) =>
    server.run(
      capturePlans(effect, { settings: ["enable_seqscan = off"] }).pipe(Effect.map(({ plans }) => plans))
    ) as Promise<ReadonlyArray<Explained>>

  /** No read scans a big table whole, and the reads use every index in `expected` (any one of a group). */
  const expectIndexed = (
    explained: ReadonlyArray<Explained>,
    expected: ReadonlyArray<string | ReadonlyArray<string>>
  ) => {
    expect(explained.length).toBeGreaterThan(0)
    for (const { sql, plan } of explained)
      expect({ sql, seqScans: seqScansOf(plan).filter((table) => big.includes(table)) }).toEqual({ sql, seqScans: [] })
    const used = new Set(explained.flatMap(({ plan }) => indexesOf(plan)))
    for (const index of expected) {
      const choices = typeof index === "string" ? [index] : index
      expect(
        choices.some((choice) => used.has(choice)),
        `one of ${choices.join(", ")} among the indexes read: ${[...used].join(", ")}`
      ).toBe(true)
    }
  }

  const run = <A>(make: Effect.Effect<A, never, never>) => plans(make)

  it("API fetch (the lane): one statement, the payment read by its primary key only", async () => {
    const { keys, payments } = await server.run(
      Effect.gen(function* () {
        return { keys: yield* ApiKeyRepository, payments: yield* MerchantPayments }
      })
    )
    const explained = await plans(keys.authenticate(shopKey, payments.riderOf(paymentId)))
    expect(explained).toHaveLength(1)
    expectIndexed(explained, ["payments_pkey"])
    // Compared as uuids, the tenancy let the planner walk the application's payments by another index instead.
    const used = explained.flatMap(({ plan }) => indexesOf(plan))
    expect(used.filter((index) => index.startsWith("payments_") && index !== "payments_pkey")).toEqual([])
  })

  it("API list: newest first, by status (expired includes the due pending), by order_reference, after a cursor", async () => {
    const payments = await server.run(
      Effect.gen(function* () {
        return yield* MerchantPayments
      })
    )
    const list = (mode: Mode.Mode, extra: Record<string, unknown>) =>
      run(payments.list({ applicationId: appId, mode }, { limit: 10, ...extra }).pipe(Effect.orDie))
    expectIndexed(await list("test", {}), ["payments_list"])
    expectIndexed(await list("live", { status: "failed" }), ["payments_status"])
    expectIndexed(await list("test", { status: "pending" }), ["payments_status"])
    expectIndexed(await list("live", { status: "expired" }), ["payments_status"])
    expectIndexed(await list("live", { order_reference: "order-5" }), [
      ["payments_order_reference", "payments_live_order_reference", "payments_order_reference_prefix"]
    ])
    expectIndexed(await list("test", { starting_after: paymentId }), ["payments_pkey", "payments_list"])
  })

  it("API events list (decisions §12): its index in list order with every filter, and after a cursor", async () => {
    const log = await server.run(EventLog.use(Effect.succeed))
    const [cursor] = await query(
      server,
      (sql) => sql`SELECT id FROM events WHERE application_id = ${appId} AND mode = 'test' LIMIT 1`
    )
    const [paid] = await query(
      server,
      (sql) => sql`SELECT payment_id FROM events WHERE application_id = ${appId} AND mode = 'live' LIMIT 1`
    )
    // The seed's events were all written just now: each range below holds all of them, as a wide range would.
    const since = DateTime.subtract(DateTime.nowUnsafe(), { days: 1 })
    const until = DateTime.nowUnsafe()
    const list = (mode: Mode.Mode, extra: Record<string, unknown>) =>
      run(log.list({ applicationId: appId, mode }, { limit: 10, ...extra }).pipe(Effect.orDie))
    /** Read in the list's order: the page's rows come off the index, never from sorting every match. */
    const inOrder = (explained: ReadonlyArray<Explained>) =>
      expect(explained.flatMap(({ plan }) => nodes(plan).filter((node) => node["Node Type"] === "Sort"))).toEqual([])
    for (const [mode, filter, index] of [
      ["test", {}, "events_list"],
      ["live", {}, "events_list"],
      ["live", { type: "payment.paid" }, "events_type"],
      ["test", { type: "payment.refunded" }, "events_type"],
      ["live", { created_gte: since }, "events_list"],
      ["test", { created_lt: until }, "events_list"],
      ["live", { type: "payment.failed", created_gte: since, created_lt: until }, "events_type"]
    ] as const) {
      const explained = await list(mode, filter)
      expectIndexed(explained, [index])
      inOrder(explained)
    }
    // A payment's events are few: its own index, sorted.
    expectIndexed(await list("live", { payment_id: paid?.payment_id }), ["events_payment"])
    expectIndexed(await list("live", { payment_id: paid?.payment_id, type: "payment.paid" }), ["events_payment"])
    const after = await list("test", { starting_after: cursor?.id })
    expectIndexed(after, ["events_pkey", "events_list"])
    inOrder(after)
    expectIndexed(await run(log.find({ applicationId: appId, mode: "test" }, cursor?.id as Ids.EventId)), [
      "events_pkey"
    ])
  })

  it("dashboard payment searches: an application's (both modes), the operator's, with every filter", async () => {
    const search = (query: Record<string, unknown>) =>
      run(
        Effect.gen(function* () {
          const queries = yield* OperatorQueries
          return yield* queries.payments({ limit: 50, ...query })
        }).pipe(Effect.provide(OperatorQueries.layer), Effect.provideService(SqlClient.SqlClient, sqlClient))
      )
    expectIndexed(await search({ applicationId: appId }), ["payments_list"])
    expectIndexed(await search({ applicationId: appId, status: "refunded" }), ["payments_status"])
    expectIndexed(await search({ applicationId: appId, status: "expired", mode: "live" }), ["payments_status"])
    expectIndexed(await search({ applicationId: appId, orderReference: "order-7" }), [
      ["payments_order_reference", "payments_live_order_reference", "payments_order_reference_prefix"]
    ])
    expectIndexed(await search({}), ["payments_newest"])
    expectIndexed(await search({ status: "cancelled" }), ["payments_status_newest"])
    expectIndexed(await search({ status: "expired" }), ["payments_status_newest"])
    expectIndexed(await search({ orderReference: "order-77" }), ["payments_order_reference_prefix"])
    // PGlite's planner reads a prefix through another order_reference index whole (no table scan, but every entry):
    // the prefix index is checked on PostgreSQL, the production database.
    expectIndexed(
      await search({ orderReference: "order-77", prefix: true }),
      database === "postgres" ? [["payments_order_reference_prefix", "payments_newest"]] : []
    )
    expectIndexed(await search({ paymentId }), ["payments_pkey"])
    expectIndexed(await search({ mode: "test" }), ["payments_newest"])
  })

  it("the overview counts and a payment's timeline", async () => {
    const queries = ApplicationQueries.make(sqlClient)
    const since = DateTime.makeUnsafe(Date.now() - 30 * 86_400_000)
    expectIndexed(await run(queries.overview(appId, since)), ["payments_status", "deliveries_application_status"])
    expectIndexed(await run(queries.timeline(appId, paymentId)), ["events_payment"])
  })

  it("delivery lists: an application's (API and dashboard) and the operator's, with every filter", async () => {
    const repo = await server.run(
      Effect.gen(function* () {
        return yield* DeliveryRepository
      })
    )
    const appList = (query: Record<string, unknown>) =>
      run(repo.list(appId, { limit: 50, ...query }).pipe(Effect.map(() => undefined)))
    expectIndexed(await appList({}), ["deliveries_application"])
    expectIndexed(await appList({ status: "failed" }), ["deliveries_application_status"])
    expectIndexed(await appList({ mode: "test" }), ["deliveries_application_mode"])
    // By the application's index, or by the event type's and then the application's and mode's: on the seeded tables
    // PGlite's planner takes either, from one run to the next (both indexed; scale.ts reads it at 1,000,000).
    expectIndexed(await appList({ event: "payment.cancelled" }), [
      ["deliveries_application", "deliveries_application_mode"]
    ])
    expectIndexed(await appList({ paymentId }), [["events_payment", "deliveries_application"]])
    const operator = (query: Record<string, unknown>) =>
      run(
        Effect.gen(function* () {
          const queries = yield* OperatorQueries
          return yield* queries.deliveries({ limit: 50, ...query })
        }).pipe(Effect.provide(OperatorQueries.layer), Effect.provideService(SqlClient.SqlClient, sqlClient))
      )
    expectIndexed(await operator({}), ["deliveries_newest"])
    expectIndexed(await operator({ status: "failed" }), ["deliveries_status_newest"])
    expectIndexed(await operator({ mode: "test" }), ["deliveries_mode_newest"])
    expectIndexed(await operator({ applicationId: appId, mode: "live" }), ["deliveries_application_mode"])
  })

  it("expiry: the sweeper's batch and a reader's rows", async () => {
    const payments = await server.run(
      Effect.gen(function* () {
        return yield* PaymentWrites
      })
    )
    expectIndexed(await run(payments.expireDue()), ["payments_pending_expiry"])
    expectIndexed(await run(payments.expireShown([paymentId])), ["payments_pkey"])
  })

  it("retention: each pruning batch finds its rows through an index, whatever the table's size", async () => {
    const batches = Retention.statements(sqlClient, 1000)
    const cutoff = new Date(Date.now() - 90 * 86_400_000)
    for (const [statement, index] of [
      [batches.deliveries(cutoff), "deliveries_finished"],
      [batches.events(cutoff), "events_created"],
      [batches.audit(cutoff), "audit_log_at"],
      [batches.sessions(cutoff), "sessions_expiry"],
      [batches.idempotencyKeys(cutoff), "idempotency_keys_expiry"]
    ] as const) {
      // Explained, not run (a delete): plain EXPLAIN plans the statement without executing it.
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
      const [explained] = (typeof raw === "string" ? JSON.parse(raw) : raw) as ReadonlyArray<{
        readonly Plan: PlanNode
      }>
      if (explained === undefined) throw new Error(`no plan for ${text}`)
      expect({ text, seqScans: seqScansOf(explained.Plan) }).toEqual({ text, seqScans: [] })
      expectIndexed([{ sql: text, plan: explained.Plan }], [index])
    }
  })

  /**
   * Every statement `effect` sends, reads and writes alike, explained (plain EXPLAIN, with sequential scans off) and
   * not run: each is answered with no rows instead, so a claim changes nothing and reaches no provider.
   */
  const explainUnrun = async <A, E>(effect: Effect.Effect<A, E, never>) => {
    const explained: Array<Explained> = []
    const transformer: Statement.Transformer = (self, statement) => {
      const [text, params] = self.compile()
      return statement.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, params).pipe(
        Effect.map((rows) => {
          const raw = rows[0]?.["QUERY PLAN"]
          const [plan] = (typeof raw === "string" ? JSON.parse(raw) : raw) as ReadonlyArray<{ readonly Plan: PlanNode }>
          if (plan !== undefined) explained.push({ sql: text, plan: plan.Plan })
          return statement.unsafe("SELECT 1 WHERE false")
        }),
        Effect.provideService(Statement.CurrentTransformer, undefined),
        Effect.orDie
      )
    }
    await server.run(
      sqlClient.withTransaction(
        Effect.gen(function* () {
          yield* sqlClient.unsafe("SET LOCAL enable_seqscan = off")
          // Whatever the service makes of no rows (a decoder may insist on one) is beside the point: the plans are.
          yield* Effect.exit(effect.pipe(Effect.provideService(Statement.CurrentTransformer, transformer)))
        })
      )
    )
    return explained
  }

  it("live create: the payment with its opening checkout (one statement), then the session or the refusal", async () => {
    const { repo, checkouts } = await server.run(
      Effect.gen(function* () {
        return { repo: yield* PaymentRepository, checkouts: yield* LiveCheckouts }
      })
    )
    const [link] = await query(
      server,
      (sql) => sql`SELECT id FROM provider_links WHERE application_id = ${appId} AND status = 'active'`
    )
    const [stored] = await server.run(repo.findMany([paymentId]))
    if (stored === undefined || link === undefined) throw new Error("the seed has no payment or no link")
    const now = DateTime.makeUnsafe(Date.now())
    const id = crypto.randomUUID() as Ids.PaymentId
    const payment = { ...stored.payment, id, mode: "live" as const, order_reference: `plan-${id}` }
    const created = await explainUnrun(
      repo.insertOpening(payment, { applicationId: appId, idempotencyKey: `plan-${id}` }, now, {
        linkId: String(link.id),
        idempotencyKey: `kassa:${appId}:live:payment:${id}`
      })
    )
    expect(created.map(({ sql }) => sql.trimStart().slice(0, 4))).toEqual(["WITH"])
    expectIndexed(created, [["provider_links_pkey", "provider_links_active"]])
    const opened = await explainUnrun(
      checkouts.opened({
        paymentId,
        checkoutId: `cs_${id}`,
        providerPaymentId: null,
        url: "https://checkout.stripe.com/c/pay/plan",
        expiresAt: DateTime.addDuration(now, Duration.hours(1)),
        now
      })
    )
    // By its key, or among the few `opening` rows (PostgreSQL takes either at 1,000,000 payments: bench/scale.ts).
    const byKey = ["provider_payments_pkey", "provider_payments_opening"]
    expectIndexed(opened, [byKey])
    expectIndexed(await explainUnrun(checkouts.notOpened(paymentId, { refused: true }, now, null)), [byKey])
  })

  it("live background rounds: stuck openings, due reads, failed creates, expiries at the provider, due refunds", async () => {
    const { checkouts, refunds } = await server.run(
      Effect.gen(function* () {
        return { checkouts: yield* LiveCheckouts, refunds: yield* LiveRefunds }
      })
    )
    // A day and more ahead: every seeded lease and read is due then, as after an outage.
    const now = DateTime.makeUnsafe(Date.now() + 2 * 86_400_000)
    const options = { now, limit: 100, lease: Duration.minutes(1) }
    expectIndexed(await explainUnrun(checkouts.claimStuck({ ...options, staleAfter: Duration.minutes(2) })), [
      "provider_payments_opening"
    ])
    expectIndexed(await explainUnrun(checkouts.claimDue(options)), ["provider_payments_due"])
    // Its own index (0009_provider_reads): the due reads of open checkouts, however many, are not its rows.
    expectIndexed(await explainUnrun(checkouts.claimCleanup(options)), ["provider_payments_cleanup_due"])
    expectIndexed(await explainUnrun(checkouts.claimExpiring(options)), [
      "payments_pending_expiry",
      "provider_payments_pkey"
    ])
    expectIndexed(await explainUnrun(refunds.refreshDue({ now, limit: 100 })), ["provider_refunds_due"])
  })

  it("provider events: the replay lookup, the account's links, the checkout by either id, a discrepancy once", async () => {
    const checkouts = await server.run(Effect.service(LiveCheckouts))
    const [link] = await query(server, (sql) => sql`SELECT id FROM provider_links LIMIT 1`)
    if (link === undefined) throw new Error("the seed has no link")
    const linkId = String(link.id) as ProviderLinkId
    expectIndexed(await explainUnrun(checkouts.eventSeen(linkId, "evt_plan")), ["provider_events_pkey"])
    expectIndexed(await explainUnrun(checkouts.accountLinks(linkId)), [
      "provider_links_pkey",
      "provider_links_application"
    ])
    expectIndexed(await explainUnrun(checkouts.findByCheckout("cs_plan")), ["provider_payments_checkout_id_key"])
    expectIndexed(await explainUnrun(checkouts.findByProviderPayment("pi_plan")), [
      "provider_payments_provider_payment"
    ])
    const discrepancy = { kind: "charged_back" as const, refund_id: null, message: "plan" }
    expectIndexed(
      await explainUnrun(checkouts.recordDiscrepancy(paymentId, discrepancy, DateTime.makeUnsafe(Date.now()))),
      ["provider_discrepancies_payment"]
    )
  })

  it("the operator's provider pages: open discrepancies (and their next page) and overdue reads", async () => {
    const now = DateTime.makeUnsafe(Date.now())
    expectIndexed(await run(ProviderQueries.openDiscrepancies(sqlClient, { limit: 50, before: undefined })), [
      "provider_discrepancies_open",
      "payments_pkey"
    ])
    const [last] = await query(
      server,
      (sql) => sql`SELECT id FROM provider_discrepancies WHERE resolved_at IS NULL ORDER BY detected_at DESC LIMIT 1`
    )
    if (last === undefined) throw new Error("the seed has no open discrepancy")
    const nextPage = await run(ProviderQueries.openDiscrepancies(sqlClient, { limit: 50, before: Number(last?.id) }))
    expectIndexed(nextPage, ["provider_discrepancies_open", "provider_discrepancies_pkey"])
    // In the page's order (0009_provider_reads): a page reads its rows and stops, however many are in flight.
    expectIndexed(await run(ProviderQueries.overdueReads(sqlClient, { now, limit: 50, before: undefined })), [
      "provider_payments_waiting",
      "provider_refunds_waiting",
      "payments_pkey"
    ])
    expectIndexed(
      await run(ProviderQueries.overdueReads(sqlClient, { now, limit: 50, before: new Date(Date.now() - 3_600_000) })),
      ["provider_payments_waiting", "provider_refunds_waiting"]
    )
  })

  it("a delivery written without its mode gets its event's (a server of the previous version)", async () => {
    const [row] = await query(
      server,
      (sql) => sql`
        WITH e AS (
          INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
          VALUES (${`evt_${crypto.randomUUID()}`}, ${appId}, ${paymentId}, 'test', 'payment.paid', '{}', now())
          RETURNING id
        )
        INSERT INTO deliveries (id, event_id, application_id, status, created_at, updated_at)
        SELECT gen_random_uuid(), e.id, ${appId}, 'succeeded', now(), now() FROM e
        RETURNING mode
      `
    )
    expect(row?.mode).toBe("test")
  })
})
