/**
 * A server process killed with SIGKILL between its Stripe call and the answer (issue 12 §6, decisions §4 and §10),
 * PostgreSQL only like test/Crash.test.ts (the killed process's transactions and advisory locks end with its
 * connections there). Stripe is the stateful fake, reached by the real server through the `stripe` SDK; it runs the
 * Checkout Session create and keeps the answer (`hang-after`), or keeps the request without running it (`hang`).
 *
 * What must hold: the payment and its idempotency record were committed before Stripe heard of the payment, so after
 * the restart the merchant's retry with the same Idempotency-Key finds that payment — 409 in progress while the dead
 * request's lock lasts (§4: at most 60 s), then it finishes opening it with the same request under the same Stripe
 * key — and ends `pending` with its checkout, with exactly one Checkout Session at Stripe for it, never a second
 * payment. (Before the fix the payment rolled back with the dead transaction, the retry made a new payment id under
 * the same Stripe key, Stripe answered `idempotency_error`, and the payment ended `failed`.)
 *
 * The 60 s lock is not waited out: the test moves the record's `locked_at` back by 61 s, which is what waiting does
 * to the decision (core `IdempotencyDecision.decide` compares it with the time).
 *
 * The same crash on the embedded database (PGlite in the data directory, served by pglite-socket inside the server
 * process): kill -9 takes the database's process with it, so what must hold is that every commit was on disk when
 * it was answered. The test reads the data directory itself between two runs of the server (PGlite serves one
 * process), so it sees exactly what a restart finds.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeCrypto } from "@effect/platform-node"
import { Application } from "@kassa/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import * as Database from "../src/database/Database.ts"
import { ServerSecrets } from "../src/security/ServerSecrets.ts"
import { type FakeStripe, type Fault, startFakeStripe } from "./support/FakeStripe.ts"
import { scratchDatabase } from "./support/ScratchDatabase.ts"
import { type ServerProcess, type SpawnedServer, spawnServer, startServerProcess } from "./support/ServerProcess.ts"
import { databases, freePort } from "./support/TestServer.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: Headers
}

interface CallInit {
  readonly method?: string
  readonly key: string
  readonly body?: unknown
  readonly headers?: object
}

/** A request to the server on `port`, its answer read whole. */
const requestOn = async (port: number, path: string, init: CallInit) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: init.method ?? "GET",
    redirect: "manual",
    headers: {
      authorization: `Bearer ${init.key}`,
      accept: "application/json",
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      ...init.headers
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  return { status: response.status, text: await response.text(), headers: response.headers } satisfies Answer
}

/** The one live create every scenario makes (and retries), under `idempotencyKey`. */
const createOn = (port: number, liveKey: string, idempotencyKey: string, orderReference: string) =>
  requestOn(port, "/api/v1/payments", {
    method: "POST",
    key: liveKey,
    body: { amount: 4200, order_reference: orderReference, description: "One teapot" },
    headers: { "idempotency-key": idempotencyKey }
  })

describe.runIf(databases.includes("postgres"))("a server killed between its Stripe call and the commit", () => {
  const db = scratchDatabase("live_crash")
  const { query } = db
  let port = 0
  let fake: FakeStripe
  let server: ServerProcess | undefined
  let liveKey = ""
  let applicationId = ""

  const startChild = async () => {
    server = await startServerProcess({
      port,
      env: db.serverEnv({ KASSA_BASE_URL: `http://127.0.0.1:${port}`, KASSA_STRIPE_API_URL: fake.url }),
      timeoutMs: 60_000
    })
  }

  const request = (path: string, init: CallInit) => requestOn(port, path, init)

  const create = (idempotencyKey: string, orderReference: string) =>
    createOn(port, liveKey, idempotencyKey, orderReference)

  const sessionsOf = (paymentId: string) => fake.sessions().filter((s) => s.client_reference_id === paymentId)

  beforeAll(async () => {
    port = await freePort()
    fake = await startFakeStripe()
    await db.create()
    const made = await db.seedApplication(
      { name: "Teapot shop", return_url_host: "shop.example" },
      { mode: "live", webhookSecret: `whsec_${"T".repeat(32)}` }
    )
    liveKey = made.key
    applicationId = made.id
    await startChild()
    const account = fake.addAccount({ livemode: true })
    const linked = await request(`/admin/api/v1/applications/${applicationId}/provider-account`, {
      method: "PUT",
      key: db.adminToken,
      body: { provider: "stripe", secret_key: account.key }
    })
    expect(linked.status, linked.text).toBe(200)
  }, 120_000)

  afterAll(async () => {
    await server?.kill()
    await fake?.close()
    await db.drop()
  })

  /**
   * Sends a create whose Stripe call meets `fault`, kills the server once Stripe has the request, restarts it and
   * retries with the same Idempotency-Key; answers the retry's final answer and the payment the first attempt made.
   */
  const crashDuringCreate = async (fault: Fault, reference: string) => {
    const key = `teapot-${crypto.randomUUID()}`
    const asked = () => fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/checkout/sessions").length
    const before = asked()
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, fault)
    const first = create(key, reference).catch(() => undefined)
    for (let waited = 0; asked() === before; waited += 10) {
      if (waited > 30_000) throw new Error("Stripe never got the create")
      await sleep(10)
    }
    await server?.kill()
    // The process died under the request: no answer reached the merchant.
    expect(await first).toBeUndefined()

    // What the dead request left: the payment pending with its checkout opening, the key locked with no answer.
    const [payment] = await query<{ id: string; status: string }>(
      (sql) => sql`SELECT id, status FROM payments WHERE order_reference = ${reference}`
    )
    expect(payment?.status).toBe("pending")
    const paymentId = String(payment?.id)
    const [row] = await query<{ state: string; idempotency_key: string }>(
      (sql) => sql`SELECT state, idempotency_key FROM provider_payments WHERE payment_id = ${paymentId}`
    )
    expect(row).toMatchObject({ state: "opening", idempotency_key: `kassa:${applicationId}:live:payment:${paymentId}` })
    const [record] = await query<{ response_status: number | null; locked_at: Date | null }>(
      (sql) => sql`SELECT response_status, locked_at FROM idempotency_keys WHERE key = ${key}`
    )
    expect(record?.response_status).toBeNull()
    expect(record?.locked_at).not.toBeNull()

    await startChild()
    // Within the dead request's 60 s: in progress, never a second payment.
    const early = await create(key, reference)
    expect(early.status, early.text).toBe(409)
    expect(JSON.parse(early.text).error.code).toBe("idempotency_request_in_progress")
    expect(early.headers.get("retry-after")).toBe("1")
    // The 60 s pass (see the module comment).
    await query(
      (sql) => sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
    )
    const retry = await create(key, reference)
    return { key, paymentId, retry }
  }

  it("Stripe made the session and its answer was lost with the process: the retry ends with that one session", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { key, paymentId, retry } = await crashDuringCreate({ kind: "hang-after" }, reference)
    expect(retry.status, retry.text).toBe(201)
    const body = JSON.parse(retry.text) as { id: string; status: string; checkout_url: string }
    expect(body).toMatchObject({
      id: paymentId,
      status: "pending",
      checkout_url: `http://127.0.0.1:${port}/checkout/${paymentId}`
    })
    // One session at Stripe for this payment: the retry's create was Stripe's replay of the first.
    const sessions = sessionsOf(paymentId)
    expect(sessions).toHaveLength(1)
    const creates = fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/checkout/sessions" && r.params.client_reference_id === paymentId
    )
    expect(creates.map((r) => r.replayed)).toEqual([false, true])
    expect(new Set(creates.map((r) => r.idempotencyKey)).size).toBe(1)
    const [row] = await query<{ state: string; checkout_id: string; checkout_url: string }>(
      (sql) => sql`SELECT state, checkout_id, checkout_url FROM provider_payments WHERE payment_id = ${paymentId}`
    )
    expect(row).toMatchObject({ state: "open", checkout_id: sessions[0]?.id, checkout_url: sessions[0]?.url })
    // One payment for the reference, and the customer's checkout leads to that session.
    const payments = await query((sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`)
    expect(payments).toHaveLength(1)
    const checkout = await request(`/checkout/${paymentId}`, { key: "", headers: { accept: "text/html" } })
    expect(checkout.status).toBe(303)
    // The answer is stored now: the next retry replays it.
    const again = await create(key, reference)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.text).toBe(retry.text)
  }, 180_000)

  it("nobody retries: the restarted server's clean-up expires the session Stripe made and fails the payment", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const key = `teapot-${crypto.randomUUID()}`
    const before = fake.requests.length
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang-after" })
    const first = create(key, reference).catch(() => undefined)
    for (let waited = 0; fake.requests.length === before; waited += 10) {
      if (waited > 30_000) throw new Error("Stripe never got the create")
      await sleep(10)
    }
    await server?.kill()
    await first
    const [payment] = await query<{ id: string }>(
      (sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`
    )
    const paymentId = String(payment?.id)
    // As if the clean-up's 2 minutes had passed since the create.
    await query(
      (sql) => sql`
        UPDATE provider_payments SET created_at = created_at - interval '3 minutes' WHERE payment_id = ${paymentId}
      `
    )
    await startChild()
    // The reconciler runs at start and every 30 s; bounded wait for its round.
    const status = async () =>
      (await query<{ status: string }>((sql) => sql`SELECT status FROM payments WHERE id = ${paymentId}`))[0]?.status
    for (let waited = 0; (await status()) === "pending"; waited += 200) {
      if (waited > 90_000) throw new Error("the clean-up never ran")
      await sleep(200)
    }
    expect(await status()).toBe("failed")
    const sessions = sessionsOf(paymentId)
    expect(sessions.map((session) => session.status)).toEqual(["expired"])
    const events = await query<{ event: string; deliveries: number }>(
      (sql) => sql`
        SELECT e.event, (SELECT count(*)::int FROM deliveries d WHERE d.event_id = e.id) AS deliveries
        FROM events e WHERE e.payment_id = ${paymentId}
      `
    )
    expect(events).toEqual([{ event: "payment.failed", deliveries: 1 }])
    // The merchant's retry, once the dead request's lock has passed, answers what the payment became.
    await query(
      (sql) => sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
    )
    const retry = await create(key, reference)
    expect(retry.status, retry.text).toBe(502)
    expect(JSON.parse(retry.text).error).toMatchObject({ code: "provider_error", payment_id: paymentId })
    expect(sessionsOf(paymentId)).toHaveLength(1)
  }, 180_000)

  it("Stripe had not run the create when the process died: the retry makes the one session", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { paymentId, retry } = await crashDuringCreate({ kind: "hang" }, reference)
    expect(retry.status, retry.text).toBe(201)
    expect(JSON.parse(retry.text)).toMatchObject({ id: paymentId, status: "pending" })
    expect(sessionsOf(paymentId)).toHaveLength(1)
    const payments = await query((sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`)
    expect(payments).toHaveLength(1)
  }, 180_000)
})

describe("a server on the embedded database killed between its Stripe call and the commit", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "kassa-live-crash-embedded-"))
  const adminToken = "live-crash-embedded-admin-token-0123456789"
  const secretKey = "live-crash-embedded-secret-key-0123456789"
  let port = 0
  let fake: FakeStripe
  let server: SpawnedServer | undefined
  let liveKey = ""
  let applicationId = ""

  /** The data directory opened in this process (the server must be down: PGlite serves one process). */
  const embedded = <A>(
    effect: Effect.Effect<A, unknown, SqlClient.SqlClient | ApplicationRepository | ApiKeyRepository>
  ) =>
    Effect.runPromise(
      effect.pipe(
        Effect.provide(
          Layer.mergeAll(ApplicationRepository.layer, ApiKeyRepository.layer).pipe(
            Layer.provideMerge(Database.layer),
            Layer.provideMerge(ServerSecrets.layer),
            Layer.provideMerge(NodeCrypto.layer),
            Layer.provide(
              ServerConfig.layerWith({
                databaseUrl: Option.none(),
                dataDir,
                adminToken: Option.some(Redacted.make(adminToken)),
                secretKey: Option.some(Redacted.make(secretKey))
              })
            )
          )
        ),
        Effect.scoped
      )
    )
  const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
    embedded(
      Effect.gen(function* () {
        return yield* run(yield* SqlClient.SqlClient)
      })
    )

  /** `node src/main.ts` with no DATABASE_URL (whatever this process has): the embedded database in `dataDir`. */
  const startChild = async () => {
    const child = spawnServer({
      KASSA_PORT: String(port),
      KASSA_BASE_URL: `http://127.0.0.1:${port}`,
      KASSA_DATA_DIR: dataDir,
      KASSA_ADMIN_TOKEN: adminToken,
      KASSA_SECRET_KEY: secretKey,
      KASSA_ENV: "development",
      KASSA_STRIPE_API_URL: fake.url
    })
    for (let waited = 0; ; waited += 100) {
      if (child.child.exitCode !== null) throw new Error(`the server exited: ${child.output()}`)
      if (waited > 90_000) throw new Error(`the server did not start: ${child.output()}`)
      const healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false
      )
      if (healthy) break
      await sleep(100)
    }
    server = child
  }
  const killChild = async () => {
    const child = server?.child
    server = undefined
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once("exit", resolve))
    child.kill("SIGKILL")
    await exited
  }

  const request = (path: string, init: CallInit) => requestOn(port, path, init)
  const create = (idempotencyKey: string, orderReference: string) =>
    createOn(port, liveKey, idempotencyKey, orderReference)
  const sessionsOf = (paymentId: string) => fake.sessions().filter((s) => s.client_reference_id === paymentId)

  beforeAll(async () => {
    port = await freePort()
    fake = await startFakeStripe()
    // Migrated and seeded through the repositories, in this process, before the server first opens it.
    const made = await embedded(
      Effect.gen(function* () {
        const application = yield* (yield* ApplicationRepository).create(
          { ...Application.defaults, status: "active", name: "Embedded teapot shop", return_url_host: "shop.example" },
          `whsec_${"E".repeat(32)}`
        )
        const issued = yield* (yield* ApiKeyRepository).issue(application.id, "live")
        return { id: application.id, key: issued.key }
      })
    )
    liveKey = made.key
    applicationId = made.id
    await startChild()
    const account = fake.addAccount({ livemode: true })
    const linked = await request(`/admin/api/v1/applications/${applicationId}/provider-account`, {
      method: "PUT",
      key: adminToken,
      body: { provider: "stripe", secret_key: account.key }
    })
    expect(linked.status, linked.text).toBe(200)
  }, 180_000)

  afterAll(async () => {
    await killChild()
    await fake?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  /** What the dead request committed, read from the data directory as the next start finds it. */
  const leftBehind = async (reference: string, key: string) => {
    const [payment] = await query<{ id: string; status: string }>(
      (sql) => sql`SELECT id, status FROM payments WHERE order_reference = ${reference}`
    )
    const paymentId = String(payment?.id)
    const [row] = await query<{ state: string; idempotency_key: string }>(
      (sql) => sql`SELECT state, idempotency_key FROM provider_payments WHERE payment_id = ${paymentId}`
    )
    const [record] = await query<{ response_status: number | null; locked_at: Date | null }>(
      (sql) => sql`SELECT response_status, locked_at FROM idempotency_keys WHERE key = ${key}`
    )
    return { payment, paymentId, row, record }
  }

  const crashDuringCreate = async (fault: Fault, reference: string) => {
    const key = `teapot-${crypto.randomUUID()}`
    const asked = () => fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/checkout/sessions").length
    const before = asked()
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, fault)
    const first = create(key, reference).catch(() => undefined)
    for (let waited = 0; asked() === before; waited += 10) {
      if (waited > 30_000) throw new Error("Stripe never got the create")
      await sleep(10)
    }
    await killChild()
    expect(await first).toBeUndefined()

    // The payment, its opening checkout and the key's record were committed before Stripe was asked: all on disk.
    const left = await leftBehind(reference, key)
    expect(left.payment?.status).toBe("pending")
    expect(left.row).toMatchObject({
      state: "opening",
      idempotency_key: `kassa:${applicationId}:live:payment:${left.paymentId}`
    })
    expect(left.record?.response_status).toBeNull()
    expect(left.record?.locked_at).not.toBeNull()

    await startChild()
    // Within the dead request's 60 s: in progress, never a second payment.
    const early = await create(key, reference)
    expect(early.status, early.text).toBe(409)
    expect(JSON.parse(early.text).error.code).toBe("idempotency_request_in_progress")
    // The 60 s pass (see the module comment), written while the server is down: a second kill -9, of an idle server.
    await killChild()
    await query(
      (sql) => sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
    )
    await startChild()
    const retry = await create(key, reference)
    return { key, paymentId: left.paymentId, retry }
  }

  it("Stripe made the session and its answer was lost with the process: the retry ends with that one session", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { key, paymentId, retry } = await crashDuringCreate({ kind: "hang-after" }, reference)
    expect(retry.status, retry.text).toBe(201)
    expect(JSON.parse(retry.text)).toMatchObject({
      id: paymentId,
      status: "pending",
      checkout_url: `http://127.0.0.1:${port}/checkout/${paymentId}`
    })
    const sessions = sessionsOf(paymentId)
    expect(sessions).toHaveLength(1)
    const creates = fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/checkout/sessions" && r.params.client_reference_id === paymentId
    )
    expect(creates.map((r) => r.replayed)).toEqual([false, true])
    // The answer is stored now: the next retry replays it, and a kill -9 right after the 201 loses none of it.
    const again = await create(key, reference)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.text).toBe(retry.text)
    await killChild()
    const [row] = await query<{ state: string; checkout_id: string; checkout_url: string }>(
      (sql) => sql`SELECT state, checkout_id, checkout_url FROM provider_payments WHERE payment_id = ${paymentId}`
    )
    expect(row).toMatchObject({ state: "open", checkout_id: sessions[0]?.id, checkout_url: sessions[0]?.url })
    const payments = await query((sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`)
    expect(payments).toHaveLength(1)
    const [record] = await query<{ response_status: number | null }>(
      (sql) => sql`SELECT response_status FROM idempotency_keys WHERE key = ${key}`
    )
    expect(record?.response_status).toBe(201)
    await startChild()
    const checkout = await request(`/checkout/${paymentId}`, { key: "", headers: { accept: "text/html" } })
    expect(checkout.status).toBe(303)
  }, 300_000)

  it("Stripe had not run the create when the process died: the retry makes the one session", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { paymentId, retry } = await crashDuringCreate({ kind: "hang" }, reference)
    expect(retry.status, retry.text).toBe(201)
    expect(JSON.parse(retry.text)).toMatchObject({ id: paymentId, status: "pending" })
    expect(sessionsOf(paymentId)).toHaveLength(1)
    await killChild()
    const payments = await query((sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`)
    expect(payments).toHaveLength(1)
  }, 300_000)
})
