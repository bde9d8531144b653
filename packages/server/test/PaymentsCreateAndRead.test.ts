/**
 * The merchant payment endpoints that make and read payments, black box over HTTP (decisions §1–3, §6): create (its
 * defaults, its checks in the contract's order, order_reference holders, provider errors), fetch and list. Every rule
 * has a test that fails when the rule breaks. Cancel, refund, the test simulator, the hosted checkout's choice and
 * expiry: PaymentsTransitions.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  cancel,
  createPayment,
  errorCode,
  eventsOf,
  fetchPayment,
  paidPayment,
  paymentsWithReference,
  pendingPayment,
  refund,
  simulate,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { expr, insertPayment, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import { timestamp, uuid } from "./support/PaymentsSupport.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

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

    it("pages through payments that share one instant to the microsecond (made by one statement)", async () => {
      const shop = await server.createApplication()
      // PostgreSQL keeps microseconds: a cursor's time rounded to milliseconds would end the list after one page.
      await seedPayments(
        server,
        paymentsInsert(
          {
            application_id: shop.application.id,
            order_reference: expr("'same-instant-' || i"),
            created_at: expr("now()")
          },
          "generate_series(1, 12) i"
        )
      )
      const seen: Array<string> = []
      let cursor: string | undefined
      for (let pages = 0; pages < 10; pages++) {
        const response = await list(shop.testKey, `?limit=5${cursor === undefined ? "" : `&starting_after=${cursor}`}`)
        const { data, has_more } = response.body as Page
        seen.push(...data.map((payment) => payment.order_reference))
        if (!has_more) break
        cursor = data.at(-1)?.id
      }
      expect(seen).toEqual(Array.from({ length: 12 }, (_, index) => `same-instant-${12 - index}`))
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
})
