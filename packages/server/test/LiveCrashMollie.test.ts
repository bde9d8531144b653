/**
 * A server process killed with SIGKILL between its Mollie call and the commit (issue 21 §3, decisions §4 and §11),
 * as LiveCrash.test.ts does for Stripe, on PostgreSQL and on the embedded database (why both, and how the embedded
 * one is read while the server is down: LiveCrash's header and support/CrashableServer.ts). Mollie is the stateful
 * fake, reached by the real server through Mollie's SDK; it runs `POST /v2/payments` and keeps the answer under the
 * Idempotency-Key without sending it (`hang-after`), or keeps the request without running it (`hang`).
 *
 * What must hold: the payment and its idempotency record were committed before Mollie heard of the payment, so the
 * merchant's retry with the same Idempotency-Key after the restart finds that payment (409 while the dead request's
 * lock lasts, then it finishes opening it with the same request under the same key) and ends `pending` with one
 * payment at Mollie, never a second. When nobody retries, the restarted server's clean-up finds what Mollie made and
 * fails the payment: it cancels Mollie's payment when Mollie allows it (an open bank transfer), and otherwise (a card
 * checkout) leaves it to expire at Mollie's own `expiresAt` — nobody has its address, since it was never stored.
 *
 * The 60 s lock and the clean-up's 2 minutes are not waited out: the rows' times are moved back, which is what
 * waiting does to the decisions.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { crashableServer, type Installation, install } from "./support/CrashableServer.ts"
import { type FakeMollie, type Fault, startFakeMollie } from "./support/FakeMollie.ts"
import { databases, freePort } from "./support/TestServer.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

// Two methods: a card checkout Mollie will not let Kassa cancel, and a bank transfer it will.
const application = { name: "Teapot shop", return_url_host: "shop.example", methods: ["card", "banktransfer"] }
const webhookSecret = `whsec_${"M".repeat(32)}`

describe.each(databases)("a server on %s killed between its Mollie call and the commit", (database) => {
  let installation: Installation
  let port = 0
  let fake: FakeMollie
  const { kill, request, direct } = crashableServer(
    () => installation,
    () => port,
    () => ({ KASSA_MOLLIE_API_URL: fake.url })
  )

  type Method = "card" | "banktransfer"

  /** The one live create a scenario makes (and retries), under `idempotencyKey`. */
  const create = (idempotencyKey: string, orderReference: string, method: Method = "card") =>
    request("/api/v1/payments", {
      method: "POST",
      key: installation.application.key,
      body: { amount: 4200, order_reference: orderReference, description: "One teapot", method },
      headers: { "idempotency-key": idempotencyKey }
    })

  /** Mollie's payments made for a Kassa payment (found by the metadata Kassa sends). */
  const molliePaymentsOf = (paymentId: string) =>
    fake.payments().filter((p) => (p.metadata as { kassa_payment_id?: string } | null)?.kassa_payment_id === paymentId)

  const createsOf = (paymentId: string) =>
    fake.requests.filter(
      (r) => r.endpoint === "payments.create" && JSON.stringify(r.body).includes(`"kassa_payment_id":"${paymentId}"`)
    )

  /** Sends a create whose Mollie call meets `fault` and kills the server once Mollie has the request. */
  const killDuringCreate = async (fault: Fault, key: string, reference: string, method: Method = "card") => {
    const before = fake.calls("payments.create")
    fake.inject({ method: "POST", path: "/v2/payments" }, fault)
    const first = create(key, reference, method).catch(() => undefined)
    for (let waited = 0; fake.calls("payments.create") === before; waited += 10) {
      if (waited > 30_000) throw new Error("Mollie never got the create")
      await sleep(10)
    }
    await kill()
    return first
  }

  beforeAll(async () => {
    port = await freePort()
    fake = await startFakeMollie()
    installation = await install(database, { prefix: "live_crash_mollie", application, webhookSecret })
    const profile = fake.addProfile({ livemode: true })
    const linked = await request(`/admin/api/v1/applications/${installation.application.id}/provider-account`, {
      method: "PUT",
      key: installation.adminToken,
      body: { provider: "mollie", secret_key: profile.key }
    })
    expect(linked.status, linked.text).toBe(200)
  }, 180_000)

  afterAll(async () => {
    await kill()
    await fake?.close()
    await installation?.remove()
  })

  /**
   * Sends a create whose Mollie call meets `fault`, kills the server once Mollie has the request, restarts it and
   * retries with the same Idempotency-Key; answers the retry's final answer and the payment the first attempt made.
   */
  const crashDuringCreate = async (fault: Fault, reference: string) => {
    const key = `teapot-${crypto.randomUUID()}`
    // The process died under the request: no answer reached the merchant.
    expect(await killDuringCreate(fault, key, reference)).toBeUndefined()

    // What the dead request committed before Mollie was asked: the payment pending with its checkout opening, the
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
    await direct(
      (sql) => sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
    )
    const retry = await create(key, reference)
    return { key, paymentId: left.paymentId, retry }
  }

  /** Waits (bounded) for the reconciler's round (at start, then every 30 s); the payment's status, through the API. */
  const statusAfterCleanUp = async (paymentId: string) => {
    const status = async () => {
      const answer = await request(`/api/v1/payments/${paymentId}`, { key: installation.application.key })
      expect(answer.status, answer.text).toBe(200)
      return (JSON.parse(answer.text) as { status: string }).status
    }
    for (let waited = 0; (await status()) === "pending"; waited += 200) {
      if (waited > 90_000) throw new Error("the clean-up never ran")
      await sleep(200)
    }
    return status()
  }

  /** Kills the server during a create nobody retries; moves the row past the clean-up's 2 minutes. */
  const abandonedCreate = async (method: Method) => {
    const reference = `teapot-${crypto.randomUUID()}`
    const key = `teapot-${crypto.randomUUID()}`
    await killDuringCreate({ kind: "hang-after" }, key, reference, method)
    const paymentId = await direct((sql) =>
      Effect.gen(function* () {
        const [payment] = yield* sql<{ id: string }>`SELECT id FROM payments WHERE order_reference = ${reference}`
        const id = String(payment?.id)
        yield* sql`UPDATE provider_payments SET created_at = created_at - interval '3 minutes' WHERE payment_id = ${id}`
        return id
      })
    )
    return { reference, key, paymentId }
  }

  /** The payment's events with their deliveries; the dead request's lock passed, for the merchant's retry. */
  const eventsAndUnlock = (paymentId: string, key: string) =>
    direct((sql) =>
      Effect.gen(function* () {
        const found = yield* sql<{ event: string; deliveries: number }>`
          SELECT e.event, (SELECT count(*)::int FROM deliveries d WHERE d.event_id = e.id) AS deliveries
          FROM events e WHERE e.payment_id = ${paymentId}
        `
        yield* sql`UPDATE idempotency_keys SET locked_at = locked_at - interval '61 seconds' WHERE key = ${key}`
        return found
      })
    )

  it("Mollie made the payment and its answer was lost with the process: the retry ends with that one payment", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { key, paymentId, retry } = await crashDuringCreate({ kind: "hang-after" }, reference)
    expect(retry.status, retry.text).toBe(201)
    expect(JSON.parse(retry.text)).toMatchObject({
      id: paymentId,
      status: "pending",
      checkout_url: `http://127.0.0.1:${port}/checkout/${paymentId}`
    })
    // One payment at Mollie: the retry's create was Mollie's replay of the first, under the same key.
    const made = molliePaymentsOf(paymentId)
    expect(made).toHaveLength(1)
    const creates = createsOf(paymentId)
    expect(creates.map((r) => [r.status, r.replayed])).toEqual([
      ["no answer", false],
      [201, true]
    ])
    expect(new Set(creates.map((r) => r.idempotencyKey))).toEqual(
      new Set([`kassa:${installation.application.id}:live:payment:${paymentId}`])
    )
    // The answer is stored now: the next retry replays it.
    const again = await create(key, reference)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.text).toBe(retry.text)
    // What a start finds (on PGlite after a kill -9 right after those answers): Mollie's payment, one payment, the
    // answer.
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
    const checkoutHref = (made[0]?._links as { checkout?: { href?: string } } | undefined)?.checkout?.href
    expect(stored.row).toMatchObject({ state: "open", checkout_id: made[0]?.id, checkout_url: checkoutHref })
    expect(stored.payments).toHaveLength(1)
    expect(stored.record?.response_status).toBe(201)
    // The customer's checkout leads to that payment's page at Mollie.
    const checkout = await request(`/checkout/${paymentId}`, { key: "", headers: { accept: "text/html" } })
    expect(checkout.status).toBe(303)
    expect(checkout.headers.get("location")).toBe(checkoutHref)
  }, 300_000)

  it("nobody retries a bank transfer: the restarted server's clean-up cancels what Mollie made and fails the payment", async () => {
    const { reference, key, paymentId } = await abandonedCreate("banktransfer")
    expect(molliePaymentsOf(paymentId).map((p) => [p.status, p.isCancelable])).toEqual([["open", true]])
    expect(await statusAfterCleanUp(paymentId)).toBe("failed")
    const [made] = molliePaymentsOf(paymentId)
    expect(made?.status).toBe("canceled")
    expect(fake.requests.filter((r) => r.endpoint === "payments.cancel").map((r) => [r.path, r.status])).toEqual([
      [`/v2/payments/${made?.id}`, 200]
    ])
    expect(await eventsAndUnlock(paymentId, key)).toEqual([{ event: "payment.failed", deliveries: 1 }])
    // The merchant's retry answers what the payment became; still one payment at Mollie.
    const retry = await create(key, reference, "banktransfer")
    expect(retry.status, retry.text).toBe(502)
    expect(JSON.parse(retry.text).error).toMatchObject({ code: "provider_error", payment_id: paymentId })
    expect(molliePaymentsOf(paymentId)).toHaveLength(1)
  }, 300_000)

  it("nobody retries a card payment: Mollie will not cancel it, so it is left to expire there and the payment fails", async () => {
    const cancels = fake.calls("payments.cancel")
    const { reference, key, paymentId } = await abandonedCreate("card")
    expect(await statusAfterCleanUp(paymentId)).toBe("failed")
    // Not cancelable at Mollie: Kassa asked no cancel Mollie would refuse; Mollie's payment stays open until its own
    // expiresAt (its address was never stored, so nobody is sent to it).
    expect(fake.calls("payments.cancel")).toBe(cancels)
    const [made] = molliePaymentsOf(paymentId)
    expect([made?.status, made?.isCancelable]).toEqual(["open", false])
    const stored = await direct(
      (sql) => sql<{ checkout_url: string | null }>`
        SELECT checkout_url FROM provider_payments WHERE payment_id = ${paymentId}
      `
    )
    expect(stored.map((row) => row.checkout_url)).toEqual([null])
    const checkout = await request(`/checkout/${paymentId}`, { key: "", headers: { accept: "text/html" } })
    expect(checkout.headers.get("location") ?? "").not.toContain(fake.url)
    expect(await eventsAndUnlock(paymentId, key)).toEqual([{ event: "payment.failed", deliveries: 1 }])
    // Mollie expires it (a card checkout lives 30 minutes at most) and pings: the payment stays failed, no new event.
    await request("/healthz", { key: "" })
    fake.advance(31 * 60)
    expect(molliePaymentsOf(paymentId).map((p) => p.status)).toEqual(["expired"])
    await fake.settled()
    expect(fake.pings.filter((p) => p.paymentId === made?.id).map((p) => p.status)).toContain(200)
    const retry = await create(key, reference, "card")
    expect(retry.status, retry.text).toBe(502)
    expect(JSON.parse(retry.text).error).toMatchObject({ code: "provider_error", payment_id: paymentId })
    expect(await eventsAndUnlock(paymentId, key)).toEqual([{ event: "payment.failed", deliveries: 1 }])
    expect(molliePaymentsOf(paymentId)).toHaveLength(1)
  }, 300_000)

  it("Mollie had not run the create when the process died: the retry makes the one payment", async () => {
    const reference = `teapot-${crypto.randomUUID()}`
    const { paymentId, retry } = await crashDuringCreate({ kind: "hang" }, reference)
    expect(retry.status, retry.text).toBe(201)
    expect(JSON.parse(retry.text)).toMatchObject({ id: paymentId, status: "pending" })
    expect(molliePaymentsOf(paymentId)).toHaveLength(1)
    expect(createsOf(paymentId).map((r) => [r.status, r.replayed])).toEqual([
      ["no answer", false],
      [201, false]
    ])
    const payments = await direct((sql) => sql`SELECT id FROM payments WHERE order_reference = ${reference}`)
    expect(payments).toHaveLength(1)
  }, 300_000)
})
