/**
 * A server process killed with SIGKILL between its Stripe call and the answer (issue 12 §6, decisions §4 and §10),
 * one table of scenarios run on PostgreSQL and on the embedded database. Stripe is the stateful fake, reached by the
 * real server through the `stripe` SDK; it runs the Checkout Session create and keeps the answer (`hang-after`), or
 * keeps the request without running it (`hang`).
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
 * On PostgreSQL (like test/Crash.test.ts) the killed process's transactions and advisory locks end with its
 * connections. On the embedded database (PGlite in the data directory, served by pglite-socket inside the server
 * process) kill -9 takes the database's process with it, so what must hold is that every commit was on disk when it
 * was answered. The test reads the data directory itself while the server is down (PGlite serves one process), so it
 * sees exactly what a restart finds; the next request starts the server again. The installation and the process to
 * kill are support/CrashableServer.ts, shared with LiveCrashMollie.test.ts.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { crashableServer, type Installation, install } from "./support/CrashableServer.ts"
import { type FakeStripe, type Fault, startFakeStripe } from "./support/FakeStripe.ts"
import { databases, freePort } from "./support/TestServer.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

const application = { name: "Teapot shop", return_url_host: "shop.example" }
const webhookSecret = `whsec_${"T".repeat(32)}`

describe.each(databases)("a server on %s killed between its Stripe call and the commit", (database) => {
  let installation: Installation
  let port = 0
  let fake: FakeStripe
  const { kill, request, direct } = crashableServer(
    () => installation,
    () => port,
    () => ({ KASSA_STRIPE_API_URL: fake.url })
  )

  /** The one live create every scenario makes (and retries), under `idempotencyKey`. */
  const create = (idempotencyKey: string, orderReference: string) =>
    request("/api/v1/payments", {
      method: "POST",
      key: installation.application.key,
      body: { amount: 4200, order_reference: orderReference, description: "One teapot" },
      headers: { "idempotency-key": idempotencyKey }
    })

  const sessionsOf = (paymentId: string) => fake.sessions().filter((s) => s.client_reference_id === paymentId)

  /** Sends a create whose Stripe call meets `fault` and kills the server once Stripe has the request. */
  const killDuringCreate = async (fault: Fault, key: string, reference: string) => {
    const asked = () => fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/checkout/sessions").length
    const before = asked()
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, fault)
    const first = create(key, reference).catch(() => undefined)
    for (let waited = 0; asked() === before; waited += 10) {
      if (waited > 30_000) throw new Error("Stripe never got the create")
      await sleep(10)
    }
    await kill()
    return first
  }

  beforeAll(async () => {
    port = await freePort()
    fake = await startFakeStripe()
    installation = await install(database, { prefix: "live_crash", application, webhookSecret })
    const account = fake.addAccount({ livemode: true })
    const linked = await request(`/admin/api/v1/applications/${installation.application.id}/provider-account`, {
      method: "PUT",
      key: installation.adminToken,
      body: { provider: "stripe", secret_key: account.key }
    })
    expect(linked.status, linked.text).toBe(200)
  }, 180_000)

  afterAll(async () => {
    await kill()
    await fake?.close()
    await installation?.remove()
  })

  /**
   * Sends a create whose Stripe call meets `fault`, kills the server once Stripe has the request, restarts it and
   * retries with the same Idempotency-Key; answers the retry's final answer and the payment the first attempt made.
   */
  const crashDuringCreate = async (fault: Fault, reference: string) => {
    const key = `teapot-${crypto.randomUUID()}`
    // The process died under the request: no answer reached the merchant.
    expect(await killDuringCreate(fault, key, reference)).toBeUndefined()

    // What the dead request committed before Stripe was asked: the payment pending with its checkout opening, the
    // key locked with no answer.
    const left = await direct((sql) =>
      Effect.gen(function* () {
        const [payment] = yield* sql<{ id: string; status: string }>`
          SELECT id, status FROM payments WHERE order_reference = ${reference}
        `
        const paymentId = String(payment?.id)
        const [row] = yield* sql<{ state: string; idempotency_key: string }>`
          SELECT state, idempotency_key FROM provider_payments WHERE payment_id = ${paymentId}
        `
        const [record] = yield* sql<{ response_status: number | null; locked_at: Date | null }>`
          SELECT response_status, locked_at FROM idempotency_keys WHERE key = ${key}
        `
        return { payment, paymentId, row, record }
      })
    )
    expect(left.payment?.status).toBe("pending")
    expect(left.row).toMatchObject({
      state: "opening",
      idempotency_key: `kassa:${installation.application.id}:live:payment:${left.paymentId}`
    })
    expect(left.record?.response_status).toBeNull()
    expect(left.record?.locked_at).not.toBeNull()

    // Within the dead request's 60 s (the server started again): in progress, never a second payment.
    const early = await create(key, reference)
    expect(early.status, early.text).toBe(409)
    expect(JSON.parse(early.text).error.code).toBe("idempotency_request_in_progress")
    expect(early.headers.get("retry-after")).toBe("1")
    // The 60 s pass (see the module comment).
    await direct(
      (sql) => sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
    )
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
    // One session at Stripe for this payment: the retry's create was Stripe's replay of the first.
    const sessions = sessionsOf(paymentId)
    expect(sessions).toHaveLength(1)
    const creates = fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/checkout/sessions" && r.params.client_reference_id === paymentId
    )
    expect(creates.map((r) => r.replayed)).toEqual([false, true])
    expect(new Set(creates.map((r) => r.idempotencyKey)).size).toBe(1)
    // The answer is stored now: the next retry replays it.
    const again = await create(key, reference)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.text).toBe(retry.text)
    // What a start finds (on PGlite after a kill -9 right after those answers): the session, one payment, the answer.
    const stored = await direct((sql) =>
      Effect.gen(function* () {
        const [row] = yield* sql<{ state: string; checkout_id: string; checkout_url: string }>`
          SELECT state, checkout_id, checkout_url FROM provider_payments WHERE payment_id = ${paymentId}
        `
        const payments = yield* sql`SELECT id FROM payments WHERE order_reference = ${reference}`
        const [record] = yield* sql<{ response_status: number | null }>`
          SELECT response_status FROM idempotency_keys WHERE key = ${key}
        `
        return { row, payments, record }
      })
    )
    expect(stored.row).toMatchObject({ state: "open", checkout_id: sessions[0]?.id, checkout_url: sessions[0]?.url })
    expect(stored.payments).toHaveLength(1)
    expect(stored.record?.response_status).toBe(201)
    // The customer's checkout leads to that session.
    const checkout = await request(`/checkout/${paymentId}`, { key: "", headers: { accept: "text/html" } })
    expect(checkout.status).toBe(303)
  }, 300_000)

  it("nobody retries: the restarted server's clean-up expires the session Stripe made and fails the payment", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const key = `teapot-${crypto.randomUUID()}`
    await killDuringCreate({ kind: "hang-after" }, key, reference)
    // As if the clean-up's 2 minutes had passed since the create.
    const paymentId = await direct((sql) =>
      Effect.gen(function* () {
        const [payment] = yield* sql<{ id: string }>`SELECT id FROM payments WHERE order_reference = ${reference}`
        const id = String(payment?.id)
        yield* sql`UPDATE provider_payments SET created_at = created_at - interval '3 minutes' WHERE payment_id = ${id}`
        return id
      })
    )
    // The reconciler runs at start and every 30 s; bounded wait for its round, read through the API.
    const status = async () => {
      const answer = await request(`/api/v1/payments/${paymentId}`, { key: installation.application.key })
      expect(answer.status, answer.text).toBe(200)
      return (JSON.parse(answer.text) as { status: string }).status
    }
    for (let waited = 0; (await status()) === "pending"; waited += 200) {
      if (waited > 90_000) throw new Error("the clean-up never ran")
      await sleep(200)
    }
    expect(await status()).toBe("failed")
    expect(sessionsOf(paymentId).map((session) => session.status)).toEqual(["expired"])
    const events = await direct((sql) =>
      Effect.gen(function* () {
        const found = yield* sql<{ event: string; deliveries: number }>`
          SELECT e.event, (SELECT count(*)::int FROM deliveries d WHERE d.event_id = e.id) AS deliveries
          FROM events e WHERE e.payment_id = ${paymentId}
        `
        // The dead request's lock passes, for the merchant's retry below.
        yield* sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
        return found
      })
    )
    expect(events).toEqual([{ event: "payment.failed", deliveries: 1 }])
    // The merchant's retry answers what the payment became.
    const retry = await create(key, reference)
    expect(retry.status, retry.text).toBe(502)
    expect(JSON.parse(retry.text).error).toMatchObject({ code: "provider_error", payment_id: paymentId })
    expect(sessionsOf(paymentId)).toHaveLength(1)
  }, 300_000)

  it("Stripe had not run the create when the process died: the retry makes the one session", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { paymentId, retry } = await crashDuringCreate({ kind: "hang" }, reference)
    expect(retry.status, retry.text).toBe(201)
    expect(JSON.parse(retry.text)).toMatchObject({ id: paymentId, status: "pending" })
    expect(sessionsOf(paymentId)).toHaveLength(1)
    const payments = await direct((sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`)
    expect(payments).toHaveLength(1)
  }, 300_000)
})
