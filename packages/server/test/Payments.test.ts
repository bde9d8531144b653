/**
 * The merchant payment endpoints, black box over HTTP (decisions §1–3, §6): create, fetch, list, cancel, refund,
 * the test simulator, lazy expiry and the expiry sweeper. Every rule has a test that fails when the rule breaks.
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
  paymentsWithReference,
  pendingPayment,
  query,
  refund,
  simulate,
  storedStatus,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { expr, insertPayment } from "./support/PaymentSeed.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const timestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe.each(databases)("payments on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  describe("POST /api/v1/payments", () => {
    it("creates a pending payment: 201, Location, and every default filled in", async () => {
      const { testKey } = await server.createApplication()
      const response = await createPayment(server, testKey, { amount: 2500, order_reference: "order-1" })
      expect(response.status).toBe(201)
      const payment = response.body as WirePayment
      expect(response.headers.get("location")).toBe(`/api/v1/payments/${payment.id}`)
      expect(payment.id).toMatch(uuid)
      expect(payment).toEqual({
        id: payment.id,
        status: "pending",
        mode: "test",
        amount: 2500,
        refunded_amount: 0,
        currency: "EUR",
        method: "card",
        order_reference: "order-1",
        description: null,
        customer: { name: null, email: null, phone: null },
        payer: null,
        locale: "en",
        return_url: null,
        metadata: {},
        checkout_url: `${server.baseUrl}/checkout/${payment.id}`,
        expires_at: payment.expires_at,
        paid_at: null,
        created_at: payment.created_at,
        refunds: []
      })
      expect(payment.created_at).toMatch(timestamp)
      expect(payment.expires_at).toMatch(timestamp)
      // Default lifetime: 3,600 s.
      expect(Date.parse(payment.expires_at) - Date.parse(payment.created_at)).toBe(3_600_000)
      expect(Math.abs(Date.parse(payment.created_at) - Date.now())).toBeLessThan(60_000)
    })

    it("keeps every optional field as sent", async () => {
      const { testKey } = await server.createApplication({ currencies: ["EUR", "USD"], methods: ["card", "ideal"] })
      const body = {
        amount: 1234,
        currency: "USD",
        method: "ideal",
        order_reference: uniqueReference(),
        description: "Two tickets",
        customer: { name: "Ada", email: "ada@example.com" },
        locale: "nl-NL",
        return_url: "https://shop.example/return?x=1",
        metadata: { cart: "c-1", count: 2, gift: false, note: null }
      }
      const response = await createPayment(server, testKey, body)
      expect(response.status).toBe(201)
      expect(response.body).toMatchObject({
        ...body,
        customer: { name: "Ada", email: "ada@example.com", phone: null }
      })
    })

    it("uses the application's payment lifetime and first currency", async () => {
      const { testKey } = await server.createApplication({ payment_ttl_seconds: 120, currencies: ["SEK", "EUR"] })
      const payment = await pendingPayment(server, testKey)
      expect(Date.parse(payment.expires_at) - Date.parse(payment.created_at)).toBe(120_000)
      expect(payment.currency).toBe("SEK")
    })

    it("reports every invalid field at once with validation_failed", async () => {
      const { testKey } = await server.createApplication()
      const response = await server.request("/api/v1/payments", {
        method: "POST",
        key: testKey,
        body: { amount: 0, currency: "eur", colour: "red" }
      })
      expect(response.status).toBe(422)
      const { error } = response.body as WireError
      expect(error.code).toBe("validation_failed")
      expect(Object.keys(error.fields as object).sort()).toEqual(["amount", "colour", "currency", "order_reference"])
    })

    it("refuses a currency the application does not offer as validation_failed", async () => {
      const { testKey } = await server.createApplication()
      const response = await createPayment(server, testKey, { currency: "USD" })
      expect(response.status).toBe(422)
      expect((response.body as WireError).error.fields).toHaveProperty("currency")
    })

    it("a body that is not JSON is 400 http_error, before any rule", async () => {
      const { testKey } = await server.createApplication()
      const response = await server.request("/api/v1/payments", { method: "POST", key: testKey, body: "{nope" })
      expect(response.status).toBe(400)
      expect(errorCode(response)).toBe("http_error")
    })

    it("checks method: required when several are offered, refused when not enabled", async () => {
      const several = await server.createApplication({ methods: ["card", "ideal"] })
      const missing = await createPayment(server, several.testKey)
      expect(missing.status).toBe(422)
      expect(errorCode(missing)).toBe("method_required")

      const unknown = await createPayment(server, several.testKey, { method: "paypal" })
      expect(unknown.status).toBe(422)
      expect(errorCode(unknown)).toBe("method_not_enabled")

      const none = await server.createApplication({ methods: [] })
      const noneEnabled = await createPayment(server, none.testKey)
      expect(errorCode(noneEnabled)).toBe("method_not_enabled")

      const single = await server.createApplication()
      const defaulted = await createPayment(server, single.testKey)
      expect((defaulted.body as WirePayment).method).toBe("card")
    })

    it("checks the application's amount bounds with min_amount / max_amount", async () => {
      const { testKey } = await server.createApplication({ min_amount: 500, max_amount: 5000 })
      const below = await createPayment(server, testKey, { amount: 499 })
      expect(below.status).toBe(422)
      expect((below.body as WireError).error).toMatchObject({ code: "amount_below_minimum", min_amount: 500 })
      const above = await createPayment(server, testKey, { amount: 5001 })
      expect(above.status).toBe(422)
      expect((above.body as WireError).error).toMatchObject({ code: "amount_above_maximum", max_amount: 5000 })
      expect((await createPayment(server, testKey, { amount: 500 })).status).toBe(201)
      expect((await createPayment(server, testKey, { amount: 5000 })).status).toBe(201)
    })

    it("checks the return_url host against the application's", async () => {
      const { testKey } = await server.createApplication()
      const other = await createPayment(server, testKey, { return_url: "https://evil.example/back" })
      expect(other.status).toBe(422)
      expect(errorCode(other)).toBe("return_url_not_allowed")
      const same = await createPayment(server, testKey, { return_url: "https://SHOP.example/back" })
      expect(same.status).toBe(201)
    })

    it("applies the create checks in the contract's order", async () => {
      const { testKey } = await server.createApplication({ methods: ["card", "ideal"], min_amount: 500 })
      const taken = await pendingPayment(server, testKey, { method: "card" })
      const everythingWrong = {
        method: "paypal",
        amount: 1,
        return_url: "https://evil.example/",
        order_reference: taken.order_reference
      }
      // validation_failed first (unknown field), then method, then amount, then return_url, then order_reference.
      const steps: Array<[Record<string, unknown>, string]> = [
        [{ ...everythingWrong, colour: "red" }, "validation_failed"],
        [everythingWrong, "method_not_enabled"],
        [{ ...everythingWrong, method: "card" }, "amount_below_minimum"],
        [{ ...everythingWrong, method: "card", amount: 600 }, "return_url_not_allowed"],
        [{ ...everythingWrong, method: "card", amount: 600, return_url: null }, "order_reference_already_paid"]
      ]
      for (const [body, code] of steps) {
        const response = await createPayment(server, testKey, body)
        expect(errorCode(response), JSON.stringify(body)).toBe(code)
      }
      const missingMethod = await createPayment(server, testKey, { amount: 1 })
      expect(errorCode(missingMethod)).toBe("method_required")
    })

    it("refuses an order_reference with a pending, paid, partially refunded or refunded payment", async () => {
      const { testKey } = await server.createApplication()
      const pending = await pendingPayment(server, testKey)
      const paid = await paidPayment(server, testKey)
      const partial = await paidPayment(server, testKey)
      expect((await refund(server, testKey, partial.id, { amount: 100 })).status).toBe(201)
      const refunded = await paidPayment(server, testKey)
      expect((await refund(server, testKey, refunded.id)).status).toBe(201)
      for (const holder of [pending, paid, partial, refunded]) {
        const response = await createPayment(server, testKey, { order_reference: holder.order_reference })
        expect(response.status).toBe(409)
        expect((response.body as WireError).error).toMatchObject({
          code: "order_reference_already_paid",
          payment_id: holder.id
        })
      }
    })

    it("frees the order_reference of a failed, cancelled or expired payment", async () => {
      const { testKey } = await server.createApplication()
      const failed = await pendingPayment(server, testKey)
      await simulate(server, testKey, failed.id, "failed")
      const cancelled = await pendingPayment(server, testKey)
      await cancel(server, testKey, cancelled.id)
      const expired = await pendingPayment(server, testKey)
      await simulate(server, testKey, expired.id, "expired")
      for (const previous of [failed, cancelled, expired]) {
        const response = await createPayment(server, testKey, { order_reference: previous.order_reference })
        expect(response.status).toBe(201)
        expect((response.body as WirePayment).id).not.toBe(previous.id)
      }
    })

    it("Kassa-Simulate: provider_error with a test key: 502 provider_error, the payment stored failed, its event", async () => {
      const { testKey } = await server.createApplication()
      const reference = uniqueReference()
      const response = await createPayment(
        server,
        testKey,
        { order_reference: reference },
        { "kassa-simulate": "provider_error" }
      )
      expect(response.status).toBe(502)
      const { error } = response.body as WireError
      expect(error.code).toBe("provider_error")
      const paymentId = String(error.payment_id)
      const fetched = await fetchPayment(server, testKey, paymentId)
      expect(fetched.status).toBe(200)
      expect(fetched.body).toMatchObject({ id: paymentId, status: "failed", order_reference: reference, payer: null })
      expect((await eventsOf(server, paymentId)).map((event) => event.event)).toEqual(["payment.failed"])
      // The reference is free again: a retry creates a new payment.
      const retry = await createPayment(server, testKey, { order_reference: reference })
      expect(retry.status).toBe(201)
    })

    it("a taken order_reference is refused before the provider is asked: 409, and no failed payment is stored", async () => {
      const { testKey } = await server.createApplication()
      const holder = await pendingPayment(server, testKey)
      const response = await createPayment(
        server,
        testKey,
        { order_reference: holder.order_reference },
        { "kassa-simulate": "provider_error" }
      )
      expect(response.status).toBe(409)
      expect((response.body as WireError).error).toMatchObject({
        code: "order_reference_already_paid",
        payment_id: holder.id
      })
      expect(await paymentsWithReference(server, holder.order_reference)).toEqual([
        { id: holder.id, status: "pending" }
      ])
    })

    it("a live create whose reference a live payment holds is 409 before the provider is asked: nothing stored", async () => {
      const { application, liveKey } = await server.createApplication()
      const reference = uniqueReference("live-held")
      const holder = crypto.randomUUID()
      await insertPayment(server, {
        id: holder,
        application_id: application.id,
        mode: "live",
        status: "paid",
        order_reference: reference,
        paid_at: expr("now()")
      })
      // The live provider refuses every payment here, so asking it first would store a failed payment and answer 502.
      const response = await createPayment(server, liveKey, { order_reference: reference })
      expect(response.status).toBe(409)
      expect((response.body as WireError).error).toMatchObject({
        code: "order_reference_already_paid",
        payment_id: holder
      })
      expect(await paymentsWithReference(server, reference)).toEqual([{ id: holder, status: "paid" }])
    })

    it("a live key (no provider account linked): 502 provider_error with a failed live payment and its event", async () => {
      const { liveKey, testKey } = await server.createApplication()
      const response = await createPayment(server, liveKey)
      expect(response.status).toBe(502)
      const paymentId = String((response.body as WireError).error.payment_id)
      expect(paymentId).toMatch(uuid)
      const fetched = await fetchPayment(server, liveKey, paymentId)
      expect(fetched.body).toMatchObject({ status: "failed", mode: "live" })
      expect((await eventsOf(server, paymentId)).map((event) => event.event)).toEqual(["payment.failed"])
      expect((await fetchPayment(server, testKey, paymentId)).status).toBe(404)
    })
  })

  describe("GET /api/v1/payments/{id}", () => {
    it("returns the payment exactly as create returned it", async () => {
      const { testKey } = await server.createApplication()
      const created = await createPayment(server, testKey, { metadata: { b: 1, a: "x", long_key: true } })
      const payment = created.body as WirePayment
      const fetched = await fetchPayment(server, testKey, payment.id)
      expect(fetched.status).toBe(200)
      expect(fetched.body).toEqual(created.body)
    })

    it("404 not_found for an unknown or malformed id", async () => {
      const { testKey } = await server.createApplication()
      const unknown = await fetchPayment(server, testKey, crypto.randomUUID())
      expect(unknown.status).toBe(404)
      expect(errorCode(unknown)).toBe("not_found")
      const malformed = await fetchPayment(server, testKey, "not-an-id")
      expect(malformed.status).toBe(404)
      expect(errorCode(malformed)).toBe("not_found")
    })
  })

  describe("GET /api/v1/payments", () => {
    const list = (key: string, search = "") => server.request(`/api/v1/payments${search}`, { key })
    type Page = { data: Array<WirePayment>; has_more: boolean }

    it("lists newest first, 10 by default, and pages with starting_after", async () => {
      const { testKey } = await server.createApplication()
      const created: Array<string> = []
      for (let i = 0; i < 12; i++) created.push((await pendingPayment(server, testKey)).id)
      const newestFirst = [...created].reverse()

      const first = await list(testKey)
      expect(first.status).toBe(200)
      const page = first.body as Page
      expect(page.data.map((payment) => payment.id)).toEqual(newestFirst.slice(0, 10))
      expect(page.has_more).toBe(true)

      const seen: Array<string> = []
      let cursor: string | undefined
      for (;;) {
        const response = await list(testKey, `?limit=5${cursor === undefined ? "" : `&starting_after=${cursor}`}`)
        const { data, has_more } = response.body as Page
        seen.push(...data.map((payment) => payment.id))
        if (!has_more) break
        cursor = data.at(-1)?.id
      }
      expect(seen).toEqual(newestFirst)

      const last = await list(testKey, `?limit=2&starting_after=${newestFirst[9]}`)
      expect(last.body).toEqual({
        data: [expect.objectContaining({ id: newestFirst[10] }), expect.anything()],
        has_more: false
      })
    })

    it("returns the same payment objects as fetch", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey)
      await refund(server, testKey, payment.id, { amount: 100, reason: "damaged" })
      const fetched = await fetchPayment(server, testKey, payment.id)
      const page = (await list(testKey)).body as Page
      expect(page.data).toEqual([fetched.body])
    })

    it("filters by status and order_reference", async () => {
      const { testKey } = await server.createApplication()
      const pending = await pendingPayment(server, testKey)
      const paid = await paidPayment(server, testKey)
      const failedOnce = await pendingPayment(server, testKey)
      await simulate(server, testKey, failedOnce.id, "failed")
      const again = await pendingPayment(server, testKey, { order_reference: failedOnce.order_reference })

      const paidOnly = (await list(testKey, "?status=paid")).body as Page
      expect(paidOnly.data.map((payment) => payment.id)).toEqual([paid.id])
      const pendingOnly = (await list(testKey, "?status=pending")).body as Page
      expect(pendingOnly.data.map((payment) => payment.id)).toEqual([again.id, pending.id])
      const byReference = (await list(testKey, `?order_reference=${encodeURIComponent(failedOnce.order_reference)}`))
        .body as Page
      expect(byReference.data.map((payment) => payment.id)).toEqual([again.id, failedOnce.id])
      const both = (
        await list(testKey, `?order_reference=${encodeURIComponent(failedOnce.order_reference)}&status=failed`)
      ).body as Page
      expect(both.data.map((payment) => payment.id)).toEqual([failedOnce.id])
    })

    it("refuses a limit outside 1–100, an unknown status and an unknown cursor with validation_failed", async () => {
      const { testKey } = await server.createApplication()
      for (const search of [
        "?limit=0",
        "?limit=101",
        "?limit=abc",
        "?status=lost",
        `?starting_after=${crypto.randomUUID()}`
      ]) {
        const response = await list(testKey, search)
        expect(response.status, search).toBe(422)
        expect(errorCode(response), search).toBe("validation_failed")
      }
      expect((await list(testKey, "?limit=100")).status).toBe(200)
      expect((await list(testKey, "?limit=1")).status).toBe(200)
    })

    it("an empty application lists nothing", async () => {
      const { testKey } = await server.createApplication()
      expect((await list(testKey)).body).toEqual({ data: [], has_more: false })
    })
  })

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
