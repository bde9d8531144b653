/**
 * Real concurrency, on PostgreSQL only (PGlite has one connection, so its transactions never overlap): racing
 * creates with one Idempotency-Key, racing refunds, cancel racing simulate, racing creates of one order reference,
 * and the row lock's `payment_busy`.
 */
import { RequestFingerprint } from "@kassa/core"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  createPayment,
  errorCode,
  eventsOf,
  fetchPayment,
  holdRowLock,
  paidPayment,
  paymentsWithReference,
  pendingPayment,
  query,
  type Response,
  refund,
  simulate,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** Retries while the answer says "not now" (in progress or busy), as a well-behaved client does. */
const untilSettled = async (send: () => Promise<Response>): Promise<Array<Response>> => {
  const answers: Array<Response> = []
  for (let attempt = 0; attempt < 50; attempt++) {
    const response = await send()
    answers.push(response)
    const code = errorCode(response)
    if (code !== "idempotency_request_in_progress" && code !== "payment_busy") return answers
    await sleep(50)
  }
  return answers
}

describe.runIf(databases.includes("postgres"))("concurrency on postgres", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer("postgres")
  })
  afterAll(() => server.close())

  const newApplication = () => server.createApplication({ rate_limit_per_minute: 100_000 })

  it("20 parallel creates with one Idempotency-Key: one payment, 20 identical final answers", async () => {
    const { testKey } = await newApplication()
    const key = `race-${crypto.randomUUID()}`
    const reference = uniqueReference()
    const send = () =>
      server.request("/api/v1/payments", {
        method: "POST",
        key: testKey,
        body: { amount: 1000, order_reference: reference },
        headers: { "idempotency-key": key }
      })
    const runs = await Promise.all(Array.from({ length: 20 }, () => untilSettled(send)))
    const finals = runs.map((answers) => answers.at(-1))
    for (const answers of runs) {
      // Every intermediate answer is the in-progress one, with Retry-After: 1.
      for (const early of answers.slice(0, -1)) {
        expect(errorCode(early)).toBe("idempotency_request_in_progress")
        expect(early.headers.get("retry-after")).toBe("1")
      }
    }
    expect(new Set(finals.map((response) => response?.status))).toEqual(new Set([201]))
    expect(new Set(finals.map((response) => response?.text)).size).toBe(1)
    expect(finals.filter((response) => response?.headers.get("idempotent-replayed") === null)).toHaveLength(1)
    expect(await paymentsWithReference(server, reference)).toHaveLength(1)
  })

  it("20 parallel retries of a key whose request died (lock older than 60 s): one takes over, one payment", async () => {
    const { application, testKey } = await newApplication()
    const key = `stale-${crypto.randomUUID()}`
    const body = { amount: 1000, order_reference: uniqueReference() }
    const fingerprint = await server.run(RequestFingerprint.fromBody(body).pipe(Effect.orDie))
    await query(
      server,
      (sql) => sql`
        INSERT INTO idempotency_keys (application_id, mode, key, method, path, fingerprint, created_at, locked_at)
        VALUES (${application.id}, 'test', ${key}, 'POST', '/api/v1/payments', ${fingerprint},
          now() - interval '61 seconds', now() - interval '61 seconds')
      `
    )
    const send = () =>
      server.request("/api/v1/payments", { method: "POST", key: testKey, body, headers: { "idempotency-key": key } })
    const finals = (await Promise.all(Array.from({ length: 20 }, () => untilSettled(send)))).map((answers) =>
      answers.at(-1)
    )
    expect(new Set(finals.map((response) => response?.status))).toEqual(new Set([201]))
    expect(new Set(finals.map((response) => response?.text)).size).toBe(1)
    expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(1)
  })

  it("20 parallel creates of one order reference without a key: one 201, the rest 409 with its id", async () => {
    const { testKey } = await newApplication()
    const reference = uniqueReference()
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => createPayment(server, testKey, { order_reference: reference }))
    )
    const created = answers.filter((response) => response.status === 201)
    expect(created).toHaveLength(1)
    const winner = (created[0]?.body as WirePayment | undefined)?.id
    for (const response of answers.filter((answer) => answer.status !== 201)) {
      expect(response.status).toBe(409)
      expect((response.body as WireError).error).toMatchObject({
        code: "order_reference_already_paid",
        payment_id: winner
      })
    }
    expect(await paymentsWithReference(server, reference)).toEqual([{ id: winner, status: "pending" }])
  })

  it("20 parallel refunds never refund more than the amount; the others get payment_busy or exceeds", async () => {
    const { testKey } = await newApplication()
    const payment = await paidPayment(server, testKey, { amount: 1000 })
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => refund(server, testKey, payment.id, { amount: 300 }))
    )
    for (const response of answers) {
      if (response.status === 201) continue
      expect(["payment_busy", "refund_amount_exceeds_refundable"]).toContain(errorCode(response))
    }
    const succeeded = answers.filter((response) => response.status === 201).length
    expect(succeeded).toBeGreaterThanOrEqual(1)
    expect(succeeded).toBeLessThanOrEqual(3)
    const after = (await fetchPayment(server, testKey, payment.id)).body as WirePayment
    expect(after.refunded_amount).toBe(300 * succeeded)
    expect(after.refunds).toHaveLength(succeeded)

    // Retrying the busy ones until they settle still never goes past the amount: exactly three fit.
    const retried = await Promise.all(
      Array.from({ length: 20 }, () => untilSettled(() => refund(server, testKey, payment.id, { amount: 300 })))
    )
    const final = (await fetchPayment(server, testKey, payment.id)).body as WirePayment
    expect(final.refunded_amount).toBe(900)
    expect(final.refunds).toHaveLength(3)
    expect(final.status).toBe("partially_refunded")
    for (const answers of retried) {
      const last = answers.at(-1)
      if (last?.status !== 201) expect(errorCode(last as Response)).toBe("refund_amount_exceeds_refundable")
    }
    expect(await eventsOf(server, payment.id)).toHaveLength(4)
  })

  it("cancel racing simulate: exactly one wins, the other gets a contract answer", async () => {
    const { testKey } = await newApplication()
    for (let round = 0; round < 10; round++) {
      const payment = await pendingPayment(server, testKey)
      const [cancelled, paid] = await Promise.all([
        server.request(`/api/v1/payments/${payment.id}/cancel`, { method: "POST", key: testKey }),
        simulate(server, testKey, payment.id, "paid")
      ])
      const [winner, ...others] = [cancelled, paid].filter((response) => response.status === 200)
      const loser = [cancelled, paid].find((response) => response.status !== 200)
      // The first to take the row lock wins; the other finds it held (busy) or already changed.
      expect(winner).toBeDefined()
      expect(others).toHaveLength(0)
      expect(loser?.status).toBe(409)
      expect(["payment_not_cancellable", "payment_not_pending", "payment_busy"]).toContain(errorCode(loser as Response))
      const final = (await fetchPayment(server, testKey, payment.id)).body as WirePayment
      expect(final.status).toBe((winner?.body as WirePayment | undefined)?.status)
      expect(await eventsOf(server, payment.id)).toHaveLength(1)
    }
  })

  describe("a payment locked by another transaction", () => {
    it("writers get 409 payment_busy at once and change nothing; a read waits and answers", async () => {
      const { testKey } = await newApplication()
      const payment = await paidPayment(server, testKey)
      const pending = await pendingPayment(server, testKey)
      const holdPaid = await holdRowLock(server, payment.id)
      const holdPending = await holdRowLock(server, pending.id)
      const busyRefund = await refund(server, testKey, payment.id, { amount: 100 })
      const busyCancel = await server.request(`/api/v1/payments/${pending.id}/cancel`, { method: "POST", key: testKey })
      const busySimulate = await simulate(server, testKey, pending.id, "paid")
      // "At once": every writer answered while the locks were still held (a waiting writer would never answer).
      expect(holdPaid.isHeld() && holdPending.isHeld()).toBe(true)
      for (const response of [busyRefund, busyCancel, busySimulate]) {
        expect(response.status).toBe(409)
        expect(errorCode(response)).toBe("payment_busy")
      }
      await Promise.all([holdPaid.release(), holdPending.release()])
      expect((await fetchPayment(server, testKey, payment.id)).body).toEqual(payment)
      expect((await fetchPayment(server, testKey, pending.id)).body).toEqual(pending)
      expect(await eventsOf(server, pending.id)).toHaveLength(0)
    })

    it("payment_busy is never stored: the retry with the same Idempotency-Key refunds", async () => {
      const { testKey } = await newApplication()
      const payment = await paidPayment(server, testKey)
      const key = `busy-${crypto.randomUUID()}`
      const hold = await holdRowLock(server, payment.id)
      const busy = await refund(server, testKey, payment.id, { amount: 100 }, { "idempotency-key": key })
      expect(errorCode(busy)).toBe("payment_busy")
      await hold.release()
      const retry = await refund(server, testKey, payment.id, { amount: 100 }, { "idempotency-key": key })
      expect(retry.status).toBe(201)
      expect(retry.headers.get("idempotent-replayed")).toBeNull()
      expect((retry.body as WirePayment).refunded_amount).toBe(100)
    })
  })
})
