/**
 * The merchant payment endpoints that move a payment on, black box over HTTP (decisions §1–3, §6): cancel, refund,
 * the test simulator, the hosted checkout's choice (HostedCheckout.choose and view), lazy expiry and the expiry
 * sweeper. Every rule has a test that fails when the rule breaks. Create, fetch and list:
 * PaymentsCreateAndRead.test.ts.
 */
import { Ids } from "@kassa/core"
import { Effect, Result } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ExpirySweeper } from "../src/payments/ExpirySweeper.ts"
import { HostedCheckout } from "../src/payments/HostedCheckout.ts"
import {
  cancel,
  createPayment,
  errorCode,
  eventsOf,
  expireInDatabase,
  fetchPayment,
  paidPayment,
  pendingPayment,
  query,
  refund,
  simulate,
  storedStatus,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { timestamp, uuid } from "./support/PaymentsSupport.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("payments on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  describe("POST /api/v1/payments/{id}/cancel", () => {
    it("cancels a pending payment (no body or {}), then refuses a second cancel with its status", async () => {
      const { testKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      const response = await cancel(server, testKey, payment.id)
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ ...payment, status: "cancelled" })

      const again = await server.request(`/api/v1/payments/${payment.id}/cancel`, {
        method: "POST",
        key: testKey,
        body: {}
      })
      expect(again.status).toBe(409)
      expect((again.body as WireError).error).toMatchObject({ code: "payment_not_cancellable", status: "cancelled" })

      const withEmptyObject = await pendingPayment(server, testKey)
      const accepted = await server.request(`/api/v1/payments/${withEmptyObject.id}/cancel`, {
        method: "POST",
        key: testKey,
        body: {}
      })
      expect(accepted.status).toBe(200)
    })

    it("never cancels a paid payment", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey)
      const response = await cancel(server, testKey, payment.id)
      expect(response.status).toBe(409)
      expect((response.body as WireError).error).toMatchObject({ code: "payment_not_cancellable", status: "paid" })
      expect((await fetchPayment(server, testKey, payment.id)).body).toEqual(payment)
    })

    it("refuses a body with fields, and answers 404 for an unknown payment", async () => {
      const { testKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      const withField = await server.request(`/api/v1/payments/${payment.id}/cancel`, {
        method: "POST",
        key: testKey,
        body: { reason: "x" }
      })
      expect(withField.status).toBe(422)
      expect(await storedStatus(server, payment.id)).toBe("pending")
      const unknown = await cancel(server, testKey, crypto.randomUUID())
      expect(unknown.status).toBe(404)
      expect(errorCode(unknown)).toBe("not_found")
    })
  })

  describe("POST /api/v1/payments/{id}/refunds", () => {
    it("refunds the whole refundable amount by default: 201, refunded, the refund as last entry", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey, { amount: 1500 })
      const response = await refund(server, testKey, payment.id)
      expect(response.status).toBe(201)
      const refunded = response.body as WirePayment
      expect(refunded).toMatchObject({ status: "refunded", refunded_amount: 1500, paid_at: payment.paid_at })
      expect(refunded.refunds).toEqual([
        {
          id: expect.stringMatching(uuid),
          amount: 1500,
          status: "succeeded",
          reason: null,
          created_at: expect.stringMatching(timestamp),
          confirmed_at: refunded.refunds[0]?.created_at
        }
      ])
      expect((await fetchPayment(server, testKey, payment.id)).body).toEqual(refunded)
    })

    it("partial refunds: partially_refunded each time, oldest first, the new one last, then refunded", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey, { amount: 1000 })
      const first = await refund(server, testKey, payment.id, { amount: 300, reason: "one broken" })
      expect(first.status).toBe(201)
      expect(first.body).toMatchObject({ status: "partially_refunded", refunded_amount: 300 })
      const second = await refund(server, testKey, payment.id, { amount: 200 })
      const afterSecond = second.body as WirePayment
      expect(afterSecond).toMatchObject({ status: "partially_refunded", refunded_amount: 500 })
      expect(afterSecond.refunds.map((entry) => [entry.amount, entry.reason])).toEqual([
        [300, "one broken"],
        [200, null]
      ])
      const rest = await refund(server, testKey, payment.id, {})
      expect(rest.body).toMatchObject({ status: "refunded", refunded_amount: 1000 })
      expect((rest.body as WirePayment).refunds.map((entry) => entry.amount)).toEqual([300, 200, 500])
    })

    it("refunds read back oldest first, ties in the order they were made, in fetch and list alike", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey, { amount: 1000 })
      // Written directly so that the order the rows were inserted in is not the order they must be listed in:
      // two refunds made in the same millisecond (only `seq` orders them), then one that is older than both.
      const [tieA, tieB, older] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
      await query(
        server,
        (sql) => sql`
          INSERT INTO refunds (id, payment_id, amount, status, reason, created_at, confirmed_at) VALUES
            (${tieA}, ${payment.id}, 100, 'succeeded', 'tie a', '2030-01-01T10:00:00.000Z', '2030-01-01T10:00:00.000Z'),
            (${tieB}, ${payment.id}, 200, 'succeeded', 'tie b', '2030-01-01T10:00:00.000Z', '2030-01-01T10:00:00.000Z'),
            (${older}, ${payment.id}, 300, 'succeeded', 'older', '2029-12-31T10:00:00.000Z', '2029-12-31T10:00:00.000Z')
        `
      )
      const fetched = (await fetchPayment(server, testKey, payment.id)).body as WirePayment
      expect(fetched.refunds.map((entry) => entry.id)).toEqual([older, tieA, tieB])
      expect(fetched.refunds[0]).toMatchObject({
        created_at: "2029-12-31T10:00:00.000Z",
        confirmed_at: "2029-12-31T10:00:00.000Z"
      })
      const listed = await server.request(`/api/v1/payments?order_reference=${payment.order_reference}`, {
        key: testKey
      })
      const [row] = (listed.body as { data: Array<WirePayment> }).data
      expect(row?.refunds.map((entry) => entry.id)).toEqual([older, tieA, tieB])
    })

    it("refuses more than the refundable amount with refundable_amount", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey, { amount: 1000 })
      await refund(server, testKey, payment.id, { amount: 400 })
      const response = await refund(server, testKey, payment.id, { amount: 601 })
      expect(response.status).toBe(422)
      expect((response.body as WireError).error).toMatchObject({
        code: "refund_amount_exceeds_refundable",
        refundable_amount: 600
      })
      expect((await fetchPayment(server, testKey, payment.id)).body).toMatchObject({ refunded_amount: 400 })
    })

    it("refuses a payment that is neither paid nor partially refunded with its status", async () => {
      const { testKey } = await server.createApplication()
      const pending = await pendingPayment(server, testKey)
      const refunded = await paidPayment(server, testKey)
      await refund(server, testKey, refunded.id)
      for (const [id, status] of [
        [pending.id, "pending"],
        [refunded.id, "refunded"]
      ] as const) {
        const response = await refund(server, testKey, id, { amount: 1 })
        expect(response.status).toBe(409)
        expect((response.body as WireError).error).toMatchObject({ code: "payment_not_refundable", status })
      }
    })

    it("checks in the contract's order: 404 → live 422 → 409 → 422 exceeds", async () => {
      const { testKey, liveKey } = await server.createApplication()
      // 404 before the live-key refusal.
      const unknown = await refund(server, liveKey, crypto.randomUUID(), { amount: 1 })
      expect(unknown.status).toBe(404)
      // A live key is refused before refundability is looked at (this live payment failed).
      const live = await createPayment(server, liveKey)
      const livePaymentId = String((live.body as WireError).error.payment_id)
      const manual = await refund(server, liveKey, livePaymentId, { amount: 10_000_000 })
      expect(manual.status).toBe(422)
      expect((manual.body as WireError).error).toEqual({
        code: "refunds_processed_manually",
        message: expect.any(String),
        docs_url: `${server.baseUrl}/docs/refunds`
      })
      // Not refundable before "exceeds".
      const pending = await pendingPayment(server, testKey)
      const tooMuch = await refund(server, testKey, pending.id, { amount: 10_000_000 })
      expect(errorCode(tooMuch)).toBe("payment_not_refundable")
    })

    it("validates the refund body", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey)
      for (const body of [{ amount: 0 }, { amount: 1.5 }, { reason: "x".repeat(256) }, { extra: true }]) {
        const response = await refund(server, testKey, payment.id, body)
        expect(response.status, JSON.stringify(body)).toBe(422)
        expect(errorCode(response)).toBe("validation_failed")
      }
      expect((await fetchPayment(server, testKey, payment.id)).body).toMatchObject({ refunded_amount: 0 })
    })
  })

  describe("POST /api/v1/test/payments/{id}/simulate", () => {
    it("moves a pending test payment to paid (with paid_at), failed or expired; no payer is recorded", async () => {
      const { testKey } = await server.createApplication()
      for (const outcome of ["paid", "failed", "expired"]) {
        const payment = await pendingPayment(server, testKey)
        const response = await simulate(server, testKey, payment.id, outcome)
        expect(response.status).toBe(200)
        const moved = response.body as WirePayment
        expect(moved).toMatchObject({ status: outcome, payer: null })
        if (outcome === "paid") expect(moved.paid_at).toMatch(timestamp)
        else expect(moved.paid_at).toBeNull()
        expect((await fetchPayment(server, testKey, payment.id)).body).toEqual(moved)
      }
    })

    it("refuses a payment that is not pending with payment_not_pending and its status", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey)
      const response = await simulate(server, testKey, payment.id, "failed")
      expect(response.status).toBe(409)
      expect((response.body as WireError).error).toMatchObject({ code: "payment_not_pending", status: "paid" })
    })

    it("is test-only: a live key gets 404 not_found, even for its own live payment", async () => {
      const { liveKey } = await server.createApplication()
      const live = await createPayment(server, liveKey)
      const livePaymentId = String((live.body as WireError).error.payment_id)
      const response = await simulate(server, liveKey, livePaymentId, "paid")
      expect(response.status).toBe(404)
      expect(errorCode(response)).toBe("not_found")
    })

    it("refuses an unknown outcome with validation_failed", async () => {
      const { testKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      const response = await simulate(server, testKey, payment.id, "refunded")
      expect(response.status).toBe(422)
      expect(errorCode(response)).toBe("validation_failed")
      expect(await storedStatus(server, payment.id)).toBe("pending")
    })
  })

  describe("HostedCheckout.choose and HostedCheckout.view (the hosted checkout, by payment id alone)", () => {
    const payer = { name: "Ada", email: "ada@example.com", phone: null, ip: "203.0.113.9", user_agent: "Browser/1.0" }
    const settle = (id: string, outcome: "paid" | "failed" | "expired") =>
      server.run(
        HostedCheckout.use((checkout) => checkout.choose(Ids.PaymentId.make(id), outcome, payer)).pipe(Effect.result)
      )

    it("Pay records the payer and moves the payment, with its event", async () => {
      const { testKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      const settled = await settle(payment.id, "paid")
      expect(Result.isSuccess(settled)).toBe(true)
      const fetched = (await fetchPayment(server, testKey, payment.id)).body as WirePayment
      expect(fetched).toMatchObject({ status: "paid", payer })
      expect(fetched.paid_at).not.toBeNull()
      const events = await eventsOf(server, payment.id)
      expect(events.map((event) => event.event)).toEqual(["payment.paid"])
      expect((JSON.parse(events[0]?.body ?? "{}") as { data: unknown }).data).toEqual(fetched)
    })

    it("refuses a payment that is no longer pending, a live payment and an unknown id", async () => {
      const { testKey, liveKey } = await server.createApplication()
      const paid = await paidPayment(server, testKey)
      const notPending = await settle(paid.id, "failed")
      expect(Result.isFailure(notPending) && notPending.failure._tag).toBe("PaymentNotPending")

      const live = await createPayment(server, liveKey)
      const livePaymentId = String((live.body as WireError).error.payment_id)
      const liveSettle = await settle(livePaymentId, "paid")
      expect(Result.isFailure(liveSettle) && liveSettle.failure._tag).toBe("NotFound")

      const unknown = await settle(crypto.randomUUID(), "paid")
      expect(Result.isFailure(unknown) && unknown.failure._tag).toBe("NotFound")
    })

    it("checkout shows the payment as fetch does, expiring it when due", async () => {
      const { testKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      await expireInDatabase(server, payment.id)
      const seen = await server.run(HostedCheckout.use((checkout) => checkout.view(Ids.PaymentId.make(payment.id))))
      expect(seen.payment.status).toBe("expired")
      const settled = await settle(payment.id, "paid")
      expect(Result.isFailure(settled) && settled.failure._tag).toBe("PaymentNotPending")
    })
  })

  describe("lazy expiry: nobody sees pending after expires_at", () => {
    it("fetch expires a payment found past expires_at, with one event", async () => {
      const { testKey } = await server.createApplication({ payment_ttl_seconds: 60 })
      const payment = await pendingPayment(server, testKey)
      await expireInDatabase(server, payment.id)
      const fetched = await fetchPayment(server, testKey, payment.id)
      expect(fetched.body).toMatchObject({ status: "expired" })
      expect(await storedStatus(server, payment.id)).toBe("expired")
      await fetchPayment(server, testKey, payment.id)
      expect((await eventsOf(server, payment.id)).map((event) => event.event)).toEqual(["payment.expired"])
    })

    it("list expires what is due before filtering", async () => {
      const { testKey } = await server.createApplication()
      const due = await pendingPayment(server, testKey)
      const fresh = await pendingPayment(server, testKey)
      await expireInDatabase(server, due.id)
      const pending = (await server.request("/api/v1/payments?status=pending", { key: testKey })).body as {
        data: Array<WirePayment>
      }
      expect(pending.data.map((payment) => payment.id)).toEqual([fresh.id])
      const expired = (await server.request("/api/v1/payments?status=expired", { key: testKey })).body as {
        data: Array<WirePayment>
      }
      expect(expired.data.map((payment) => payment.id)).toEqual([due.id])
    })

    it("a write finds the payment expired: cancel and simulate answer with status expired, the expiry stays", async () => {
      const { testKey } = await server.createApplication()
      const toCancel = await pendingPayment(server, testKey)
      await expireInDatabase(server, toCancel.id)
      const cancelled = await cancel(server, testKey, toCancel.id)
      expect(cancelled.status).toBe(409)
      expect((cancelled.body as WireError).error).toMatchObject({ code: "payment_not_cancellable", status: "expired" })
      expect(await storedStatus(server, toCancel.id)).toBe("expired")
      expect((await eventsOf(server, toCancel.id)).map((event) => event.event)).toEqual(["payment.expired"])

      const toSimulate = await pendingPayment(server, testKey)
      await expireInDatabase(server, toSimulate.id)
      const simulated = await simulate(server, testKey, toSimulate.id, "paid")
      expect((simulated.body as WireError).error).toMatchObject({ code: "payment_not_pending", status: "expired" })
    })

    it("an expired holder frees its order_reference at create", async () => {
      const { testKey } = await server.createApplication()
      const holder = await pendingPayment(server, testKey)
      await expireInDatabase(server, holder.id)
      const response = await createPayment(server, testKey, { order_reference: holder.order_reference })
      expect(response.status).toBe(201)
      expect(await storedStatus(server, holder.id)).toBe("expired")
      expect((await eventsOf(server, holder.id)).map((event) => event.event)).toEqual(["payment.expired"])
    })

    it("the sweeper expires due payments without any reader, in batches, with their events", async () => {
      const { testKey } = await server.createApplication()
      const due = [await pendingPayment(server, testKey), await pendingPayment(server, testKey)]
      const notDue = await pendingPayment(server, testKey)
      for (const payment of due) await expireInDatabase(server, payment.id)
      const result = await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
      expect(result.expired).toBeGreaterThanOrEqual(2)
      for (const payment of due) {
        expect(await storedStatus(server, payment.id)).toBe("expired")
        expect((await eventsOf(server, payment.id)).map((event) => event.event)).toEqual(["payment.expired"])
      }
      expect(await storedStatus(server, notDue.id)).toBe("pending")
      // Nothing left to do: a second round expires nothing.
      expect((await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))).expired).toBe(0)
    })

    it("the sweeper runs on its own, every 10 s", async () => {
      const { testKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      await expireInDatabase(server, payment.id)
      const started = Date.now()
      // Up to one interval (10 s) by design: the wait and the test's timeout leave room for a machine twice as slow.
      while ((await storedStatus(server, payment.id)) === "pending" && Date.now() - started < 40_000) {
        await Effect.runPromise(Effect.sleep("250 millis"))
      }
      expect(await storedStatus(server, payment.id)).toBe("expired")
      const events = await eventsOf(server, payment.id)
      expect(events.map((event) => event.event)).toEqual(["payment.expired"])
    }, 60_000)

    it("the sweeper leaves idempotency keys to retention: one deleter per table", async () => {
      const { testKey } = await server.createApplication()
      const key = `old-${crypto.randomUUID()}`
      const response = await createPayment(server, testKey, {}, { "idempotency-key": key })
      expect(response.status).toBe(201)
      await query(
        server,
        (sql) => sql`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE key = ${key}`
      )
      await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
      // Retention.test.ts: "forgets idempotency keys written through the API after 24 hours".
      expect(await query(server, (sql) => sql`SELECT key FROM idempotency_keys WHERE key = ${key}`)).toHaveLength(1)
    })
  })
})
