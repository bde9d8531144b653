/**
 * Retention (issue 14 §4): a round deletes finished deliveries and their attempts past KASSA_RETENTION_DELIVERIES,
 * events of final payments past the same window once no delivery references them, audit entries past
 * KASSA_RETENTION_AUDIT, expired sessions and idempotency keys past their 24 hours, in batches of 1,000; it keeps
 * everything recent, every payment, the events of pending payments and of pending deliveries; a row a request holds
 * is skipped, never waited for.
 */
import { ConfigProvider, DateTime, Duration, Effect, Exit, Option } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import { Retention } from "../src/retention/Retention.ts"
import { createPayment, fetchPayment, query, uniqueReference } from "./support/PaymentFixtures.ts"
import { expr, literal, paymentInsert, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

type Status = "pending" | "paid" | "failed" | "cancelled" | "expired"

interface Seeded {
  readonly paymentId: string
  readonly eventId: string
  readonly deliveryId: string | undefined
}

/**
 * A payment of `status` with one event `ageDays` old and, unless `delivery` is none, one delivery of that status
 * finished `ageDays` ago with `attempts` attempts.
 */
const seed = async (
  server: RunningServer,
  applicationId: string,
  options: {
    readonly status: Status
    readonly ageDays: number
    readonly delivery: "succeeded" | "failed" | "pending" | "none"
    readonly attempts?: number
  }
): Promise<Seeded> => {
  const age = `${options.ageDays} days`
  const created = expr(`now() - ${literal(age)}::interval`)
  const [payment] = await seedPayments(
    server,
    `${paymentInsert({
      application_id: applicationId,
      status: options.status,
      order_reference: uniqueReference("ret"),
      customer: { name: null, email: "old@shop.example", phone: null },
      expires_at: expr(
        `${created.sql} + interval '1 hour' + ${options.status === "pending" ? options.ageDays + 1 : 0} * interval '1 day'`
      ),
      paid_at: options.status === "paid" ? new Date(Date.now() - options.ageDays * 86_400_000) : null,
      created_at: created,
      updated_at: created
    })}
    RETURNING id`
  )
  const paymentId = String(payment?.id)
  const eventId = `evt_${crypto.randomUUID()}`
  await query(
    server,
    (sql) => sql`
      INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
      VALUES (${eventId}, ${applicationId}, ${paymentId}, 'test', 'payment.created', '{}', now() - ${age}::interval)
    `
  )
  if (options.delivery === "none") return { paymentId, eventId, deliveryId: undefined }
  const deliveryId = crypto.randomUUID()
  // A pending delivery is due far ahead, so the dispatcher leaves it alone during the test.
  await query(
    server,
    (sql) => sql`
      INSERT INTO deliveries (id, event_id, application_id, status, attempt_count, next_attempt_at, created_at,
        updated_at)
      VALUES (${deliveryId}, ${eventId}, ${applicationId}, ${options.delivery}, ${options.attempts ?? 0},
        ${options.delivery === "pending" ? new Date(Date.now() + 86_400_000) : null},
        now() - ${age}::interval, now() - ${age}::interval)
    `
  )
  const attempts = options.attempts ?? 0
  if (attempts > 0) {
    await query(
      server,
      (sql) => sql`
        INSERT INTO delivery_attempts (delivery_id, number, kind, started_at, response_status, duration_ms)
        SELECT ${deliveryId}, n, 'scheduled', now() - ${age}::interval, 500, 12 FROM generate_series(1, ${attempts}) n
      `
    )
  }
  return { paymentId, eventId, deliveryId }
}

const exists = async (server: RunningServer, table: string, column: string, value: string) => {
  const rows = await query(server, (sql) => sql`SELECT 1 FROM ${sql(table)} WHERE ${sql(column)} = ${value}`)
  return rows.length === 1
}

const attemptsOf = async (server: RunningServer, deliveryId: string) =>
  Number(
    (
      await query(
        server,
        (sql) => sql`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ${deliveryId}`
      )
    )[0]?.n
  )

const prune = (server: RunningServer) =>
  server.run(Effect.flatMap(DateTime.now, (now) => Retention.use((retention) => retention.prune(now))))

describe("retention settings", () => {
  const load = (env: Record<string, string>) =>
    Effect.runPromiseExit(
      Effect.gen(function* () {
        return yield* ServerConfig
      }).pipe(
        Effect.provide(ServerConfig.layer),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
      )
    )
  const days = (window: Option.Option<Duration.Duration>) =>
    Option.map(window, (duration) => Duration.toMillis(duration) / 86_400_000)

  it("default to 90 days for deliveries and events, 2 years (730 days) for audit entries, and read the settings", async () => {
    const defaults = await load({})
    if (Exit.isFailure(defaults)) throw new Error(String(defaults.cause))
    expect([days(defaults.value.retentionDeliveries), days(defaults.value.retentionAudit)]).toEqual([
      Option.some(90),
      Option.some(730)
    ])
    const set = await load({ KASSA_RETENTION_DELIVERIES: "12 weeks", KASSA_RETENTION_AUDIT: "7 years" })
    if (Exit.isFailure(set)) throw new Error(String(set.cause))
    expect([days(set.value.retentionDeliveries), days(set.value.retentionAudit)]).toEqual([
      Option.some(84),
      Option.some(2555)
    ])
    const off = await load({ KASSA_RETENTION_DELIVERIES: "off", KASSA_RETENTION_AUDIT: "OFF" })
    if (Exit.isFailure(off)) throw new Error(String(off.cause))
    expect([off.value.retentionDeliveries, off.value.retentionAudit]).toEqual([Option.none(), Option.none()])
  })

  it.each(["KASSA_RETENTION_DELIVERIES", "KASSA_RETENTION_AUDIT"])(
    "a bad %s stops the start naming it",
    async (name) => {
      // "90" would be 90 ms and "1 hour" a typo that prunes history: under a day is refused.
      for (const value of ["90", "1 hour", "forever", "-3 days", "Infinity"]) {
        const exit = await load({ [name]: value })
        expect(Exit.isFailure(exit) ? String(exit.cause) : "started", `${name}=${value}`).toContain(name)
      }
    }
  )
})

describe.each(databases)("retention on %s", (database) => {
  let server: RunningServer
  let applicationId: string
  let testKey: string

  beforeAll(async () => {
    server = await startServer(database)
    const shop = await server.createApplication()
    applicationId = shop.application.id
    testKey = shop.testKey
  })
  afterAll(() => server.close())

  it("prunes finished deliveries, their attempts and the events of final payments past 90 days, keeps the rest", async () => {
    const oldPaid = await seed(server, applicationId, {
      status: "paid",
      ageDays: 91,
      delivery: "succeeded",
      attempts: 2
    })
    const oldFailed = await seed(server, applicationId, {
      status: "failed",
      ageDays: 200,
      delivery: "failed",
      attempts: 3
    })
    const oldNoDelivery = await seed(server, applicationId, { status: "expired", ageDays: 120, delivery: "none" })
    const recent = await seed(server, applicationId, {
      status: "paid",
      ageDays: 89,
      delivery: "succeeded",
      attempts: 1
    })
    const oldPendingPayment = await seed(server, applicationId, { status: "pending", ageDays: 100, delivery: "none" })
    const oldPendingDelivery = await seed(server, applicationId, {
      status: "paid",
      ageDays: 100,
      delivery: "pending",
      attempts: 4
    })

    const result = await prune(server)
    expect(result.deliveries).toBeGreaterThanOrEqual(2)
    expect(result.attempts).toBeGreaterThanOrEqual(5)
    expect(result.events).toBeGreaterThanOrEqual(3)

    for (const gone of [oldPaid, oldFailed]) {
      expect(await exists(server, "deliveries", "id", gone.deliveryId ?? "")).toBe(false)
      expect(await attemptsOf(server, gone.deliveryId ?? "")).toBe(0)
    }
    for (const gone of [oldPaid, oldFailed, oldNoDelivery]) {
      expect(await exists(server, "events", "id", gone.eventId)).toBe(false)
    }
    // Recent: all kept.
    expect(await exists(server, "events", "id", recent.eventId)).toBe(true)
    expect(await exists(server, "deliveries", "id", recent.deliveryId ?? "")).toBe(true)
    expect(await attemptsOf(server, recent.deliveryId ?? "")).toBe(1)
    // The event of a payment still pending is its history in the making.
    expect(await exists(server, "events", "id", oldPendingPayment.eventId)).toBe(true)
    // A pending delivery keeps its event and its attempts, however old.
    expect(await exists(server, "events", "id", oldPendingDelivery.eventId)).toBe(true)
    expect(await exists(server, "deliveries", "id", oldPendingDelivery.deliveryId ?? "")).toBe(true)
    expect(await attemptsOf(server, oldPendingDelivery.deliveryId ?? "")).toBe(4)
    // Payments are never deleted.
    for (const kept of [oldPaid, oldFailed, oldNoDelivery, recent, oldPendingPayment, oldPendingDelivery]) {
      expect(await exists(server, "payments", "id", kept.paymentId)).toBe(true)
    }
  })

  it("the merchant API still answers for a payment whose events were pruned", async () => {
    const old = await seed(server, applicationId, { status: "paid", ageDays: 365, delivery: "succeeded", attempts: 1 })
    await prune(server)
    expect(await exists(server, "events", "id", old.eventId)).toBe(false)
    const fetched = await fetchPayment(server, testKey, old.paymentId)
    expect(fetched.status).toBe(200)
    expect(fetched.body).toMatchObject({ id: old.paymentId, status: "paid", amount: 1000 })
  })

  it("prunes in batches of 1,000 until none is left", async () => {
    // 2,100 old finished deliveries (three batches), one attempt each, set-based.
    await query(
      server,
      (sql) => sql`
        WITH p AS (
          ${sql.literal(
            paymentsInsert(
              {
                application_id: applicationId,
                status: "failed",
                order_reference: expr("'bulk-' || i"),
                customer: { name: null, email: "bulk@shop.example", phone: null },
                expires_at: expr("now() - interval '99 days'"),
                created_at: expr("now() - interval '100 days'"),
                updated_at: expr("now() - interval '100 days'")
              },
              "generate_series(1, 2100) i"
            )
          )}
          RETURNING id
        ), e AS (
          INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
          SELECT 'evt_' || gen_random_uuid(), ${applicationId}, id, 'test', 'payment.failed', '{}',
            now() - interval '100 days'
          FROM p
          RETURNING id
        ), d AS (
          INSERT INTO deliveries (id, event_id, application_id, status, attempt_count, created_at, updated_at)
          SELECT gen_random_uuid(), id, ${applicationId}, 'failed', 1, now() - interval '100 days',
            now() - interval '100 days'
          FROM e
          RETURNING id
        )
        INSERT INTO delivery_attempts (delivery_id, number, kind, started_at, response_status, duration_ms)
        SELECT id, 1, 'scheduled', now() - interval '100 days', 500, 10 FROM d
      `
    )
    const result = await prune(server)
    expect(result).toMatchObject({ deliveries: 2100, attempts: 2100, events: 2100 })
    const [left] = await query(
      server,
      (sql) => sql`
        SELECT (SELECT count(*)::int FROM deliveries WHERE updated_at < now() - interval '90 days'
          AND status <> 'pending') AS deliveries,
          (SELECT count(*)::int FROM payments WHERE order_reference LIKE 'bulk-%') AS payments
      `
    )
    expect(left).toEqual({ deliveries: 0, payments: 2100 })
  })

  it("prunes audit entries past 2 years, expired sessions and idempotency keys past 24 hours", async () => {
    const [user] = await query(
      server,
      (sql) => sql`
        INSERT INTO users (id, email, password_hash, created_at)
        VALUES (gen_random_uuid(), ${`${uniqueReference("u")}@shop.example`.toLowerCase()}, 'x', now())
        RETURNING id
      `
    )
    const marker = uniqueReference("audit")
    await query(
      server,
      (sql) => sql`
        INSERT INTO audit_log (at, actor, action, target)
        VALUES (now() - interval '731 days', 'old@shop.example', 'test.retention', ${`${marker}-old`}),
          (now() - interval '729 days', 'recent@shop.example', 'test.retention', ${`${marker}-recent`})
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at)
        VALUES (${`${marker}-expired`}, ${user?.id}, now() - interval '13 hours', now() - interval '13 hours',
            now() - interval '1 hour'),
          (${`${marker}-live`}, ${user?.id}, now(), now(), now() + interval '12 hours')
      `
    )
    await query(
      server,
      (sql) => sql`
        INSERT INTO idempotency_keys (application_id, mode, key, method, path, fingerprint, created_at)
        VALUES (${applicationId}, 'test', ${`${marker}-old`}, 'POST', '/api/v1/payments', 'f',
            now() - interval '25 hours'),
          (${applicationId}, 'test', ${`${marker}-recent`}, 'POST', '/api/v1/payments', 'f', now() - interval '23 hours')
      `
    )
    const result = await prune(server)
    expect(result.audit).toBeGreaterThanOrEqual(1)
    expect(result.sessions).toBeGreaterThanOrEqual(1)
    expect(result.idempotencyKeys).toBeGreaterThanOrEqual(1)
    expect(await exists(server, "audit_log", "target", `${marker}-old`)).toBe(false)
    expect(await exists(server, "audit_log", "target", `${marker}-recent`)).toBe(true)
    expect(await exists(server, "sessions", "token_hash", `${marker}-expired`)).toBe(false)
    expect(await exists(server, "sessions", "token_hash", `${marker}-live`)).toBe(true)
    expect(await exists(server, "idempotency_keys", "key", `${marker}-old`)).toBe(false)
    expect(await exists(server, "idempotency_keys", "key", `${marker}-recent`)).toBe(true)
  })
  it("forgets idempotency keys written through the API after 24 hours (the one place they are deleted)", async () => {
    const key = `api-${crypto.randomUUID()}`
    const first = await createPayment(server, testKey, {}, { "idempotency-key": key })
    expect(first.status).toBe(201)
    await query(
      server,
      (sql) => sql`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE key = ${key}`
    )
    expect((await prune(server)).idempotencyKeys).toBeGreaterThanOrEqual(1)
    expect(await exists(server, "idempotency_keys", "key", key)).toBe(false)
  })
})

describe.each(databases)("retention switched off on %s", (database) => {
  let server: RunningServer

  beforeAll(async () => {
    server = await startServer(database, { retentionDeliveries: Option.none(), retentionAudit: Option.none() })
  })
  afterAll(() => server.close())

  it('"off" keeps deliveries, events and audit entries forever', async () => {
    const shop = await server.createApplication()
    const old = await seed(server, shop.application.id, {
      status: "paid",
      ageDays: 3650,
      delivery: "succeeded",
      attempts: 1
    })
    const marker = uniqueReference("audit-off")
    await query(
      server,
      (sql) =>
        sql`INSERT INTO audit_log (at, actor, action, target) VALUES (now() - interval '3650 days', 'a', 'x', ${marker})`
    )
    const result = await prune(server)
    expect(result).toMatchObject({ deliveries: 0, attempts: 0, events: 0, audit: 0 })
    expect(await exists(server, "events", "id", old.eventId)).toBe(true)
    expect(await exists(server, "deliveries", "id", old.deliveryId ?? "")).toBe(true)
    expect(await exists(server, "audit_log", "target", marker)).toBe(true)
  })
})

describe.runIf(databases.includes("postgres"))("retention with other transactions on postgres", () => {
  let server: RunningServer

  beforeAll(async () => {
    server = await startServer("postgres")
  })
  afterAll(() => server.close())

  it("a batch skips the rows a request holds instead of waiting, and prunes them once let go", async () => {
    const shop = await server.createApplication()
    const held = await seed(server, shop.application.id, {
      status: "paid",
      ageDays: 100,
      delivery: "succeeded",
      attempts: 1
    })
    const free = await seed(server, shop.application.id, {
      status: "paid",
      ageDays: 100,
      delivery: "succeeded",
      attempts: 1
    })
    // A request's transaction holding the delivery row (as a resend would), open until let go.
    let letGo: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      letGo = resolve
    })
    let locked: () => void = () => {}
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve
    })
    const holder = server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`SELECT id FROM deliveries WHERE id = ${held.deliveryId ?? ""} FOR UPDATE`
            locked()
            yield* Effect.promise(() => released)
          })
        )
      }).pipe(Effect.orDie)
    )
    await isLocked
    // Bounded: were the batch to wait on the held row, this would time out instead of answering.
    const result = await server.run(
      Effect.flatMap(DateTime.now, (now) => Retention.use((retention) => retention.prune(now))).pipe(
        Effect.timeout(Duration.seconds(10))
      )
    )
    expect(result.deliveries).toBeGreaterThanOrEqual(1)
    expect(await exists(server, "deliveries", "id", free.deliveryId ?? "")).toBe(false)
    expect(await exists(server, "deliveries", "id", held.deliveryId ?? "")).toBe(true)
    expect(await exists(server, "events", "id", held.eventId)).toBe(true)
    letGo()
    await holder
    await prune(server)
    expect(await exists(server, "deliveries", "id", held.deliveryId ?? "")).toBe(false)
    expect(await exists(server, "events", "id", held.eventId)).toBe(false)
  })
})
