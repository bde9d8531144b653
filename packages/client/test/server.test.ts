/**
 * The Promise face against the real server (in this process, over PGlite): every endpoint, and every error class
 * the server gives through the API, with its fields and the answer's `Request-Id`.
 */
import {
  AmountAboveMaximumError,
  AmountBelowMinimumError,
  ApplicationDisabledError,
  ApplicationPendingReviewError,
  ApplicationSuspendedError,
  IdempotencyKeyReusedError,
  InvalidApiKeyError,
  IpNotAllowedError,
  Kassa,
  KassaApiError,
  type KassaEvent,
  type KassaEventName,
  type KassaPayment,
  MethodNotEnabledError,
  MethodRequiredError,
  NotFoundError,
  OrderReferenceAlreadyPaidError,
  PaymentNotCancellableError,
  PaymentNotPendingError,
  PaymentNotRefundableError,
  ProviderError,
  RateLimitedError,
  RefundAmountExceedsRefundableError,
  RefundsProcessedManuallyError,
  ReturnUrlNotAllowedError,
  UnauthenticatedError,
  ValidationFailedError
} from "@kassa/client"
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import { databases, type RunningServer, startServer } from "../../server/test/support/TestServer.ts"

describe.each(databases)("the client against the server on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  type Overrides = Parameters<RunningServer["createApplication"]>[0]

  /** A client for a new application (its own rate limit, its own payments). */
  const clientFor = async (overrides?: Overrides) => {
    const application = await server.createApplication(overrides)
    return {
      ...application,
      kassa: new Kassa({ apiKey: application.testKey, baseUrl: server.baseUrl }),
      live: new Kassa({ apiKey: application.liveKey, baseUrl: server.baseUrl })
    }
  }

  const reference = () => `order-${crypto.randomUUID()}`
  const requestId = expect.stringMatching(/^req_[0-9a-f]{32}$/)

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.fail("expected the call to fail"),
      (error: unknown) => error
    )

  describe("endpoints", () => {
    it("create sends every field and answers with the payment as JSON shows it", async () => {
      const { kassa } = await clientFor({ methods: ["card", "ideal"], return_url_host: "shop.example" })
      const order_reference = reference()
      const payment: KassaPayment = await kassa.payments.create({
        amount: 2599,
        currency: "EUR",
        method: "ideal",
        order_reference,
        description: "Two mugs",
        customer: { name: "Ada", email: "ada@example.com", phone: "+31 6 1234 5678" },
        locale: "nl-NL",
        return_url: "https://shop.example/thanks",
        metadata: { cart: "c-1", items: 2, gift: false, note: null }
      })
      expect(payment).toMatchObject({
        status: "pending",
        mode: "test",
        amount: 2599,
        refunded_amount: 0,
        currency: "EUR",
        method: "ideal",
        order_reference,
        description: "Two mugs",
        customer: { name: "Ada", email: "ada@example.com", phone: "+31 6 1234 5678" },
        payer: null,
        locale: "nl-NL",
        return_url: "https://shop.example/thanks",
        metadata: { cart: "c-1", items: 2, gift: false, note: null },
        refunds: []
      })
      // Timestamps stay strings, exactly as the API sends them (and webhooks deliver them).
      expect(payment.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      expect(payment.checkout_url).toContain(payment.id)
      expect(await kassa.payments.get(payment.id)).toEqual(payment)
      const raw = await server.request(`/api/v1/payments/${payment.id}`, { key: (await clientFor()).testKey })
      expect(raw.status).toBe(404)
    })

    it("the same idempotency key and body replay the first answer; another body is refused", async () => {
      const { kassa } = await clientFor()
      const body = { amount: 1000, order_reference: reference() }
      const first = await kassa.payments.create(body, { idempotencyKey: "order-42" })
      expect(await kassa.payments.create(body, { idempotencyKey: "order-42" })).toEqual(first)
      const reused = await failure(kassa.payments.create({ ...body, amount: 1001 }, { idempotencyKey: "order-42" }))
      expect(reused).toBeInstanceOf(IdempotencyKeyReusedError)
      expect(reused).toMatchObject({ status: 409, requestId })
    })

    it("each call without a key gets its own: two creates are two attempts, not a replay", async () => {
      const { kassa } = await clientFor()
      const order_reference = reference()
      const first = await kassa.payments.create({ amount: 1000, order_reference })
      await kassa.payments.cancel(first.id)
      const second = await kassa.payments.create({ amount: 1000, order_reference })
      expect(second.id).not.toBe(first.id)
    })

    it("simulate moves a test payment to paid, failed or expired", async () => {
      const { kassa } = await clientFor()
      for (const outcome of ["paid", "failed", "expired"] as const) {
        const payment = await kassa.payments.create({ amount: 1000, order_reference: reference() })
        const simulated = await kassa.test.simulate(payment.id, { outcome })
        expect(simulated.status).toBe(outcome)
        expect((await kassa.payments.get(payment.id)).status).toBe(outcome)
      }
    })

    it("cancel cancels a pending payment", async () => {
      const { kassa } = await clientFor()
      const payment = await kassa.payments.create({ amount: 1000, order_reference: reference() })
      const cancelled = await kassa.payments.cancel(payment.id)
      expect(cancelled).toMatchObject({ id: payment.id, status: "cancelled" })
    })

    it("refund refunds part, then by default all that is left", async () => {
      const { kassa } = await clientFor()
      const payment = await kassa.payments.create({ amount: 1000, order_reference: reference() })
      await kassa.test.simulate(payment.id, { outcome: "paid" })
      const partial = await kassa.payments.refund(payment.id, { amount: 250, reason: "one mug broke" })
      expect(partial).toMatchObject({ status: "partially_refunded", refunded_amount: 250 })
      expect(partial.refunds.map(({ amount, reason }) => ({ amount, reason }))).toEqual([
        { amount: 250, reason: "one mug broke" }
      ])
      const rest = await kassa.payments.refund(payment.id)
      expect(rest).toMatchObject({ status: "refunded", refunded_amount: 1000 })
      expect(rest.refunds.map(({ amount }) => amount)).toEqual([250, 750])
    })

    it("listPage gives one page; list walks every page with starting_after", async () => {
      const { kassa } = await clientFor()
      const created: Array<KassaPayment> = []
      for (let n = 0; n < 5; n++) {
        created.push(await kassa.payments.create({ amount: 1000 + n, order_reference: reference() }))
      }
      for (const payment of created.slice(0, 3)) await kassa.test.simulate(payment.id, { outcome: "paid" })
      const newestFirst = created.map(({ id }) => id).reverse()

      const page = await kassa.payments.listPage({ limit: 2 })
      expect(page.data.map(({ id }) => id)).toEqual(newestFirst.slice(0, 2))
      expect(page.has_more).toBe(true)
      const next = await kassa.payments.listPage({ limit: 2, starting_after: page.data[1]?.id })
      expect(next.data.map(({ id }) => id)).toEqual(newestFirst.slice(2, 4))

      const all: Array<string> = []
      for await (const payment of kassa.payments.list({ limit: 2 })) all.push(payment.id)
      expect(all).toEqual(newestFirst)

      const paid: Array<KassaPayment> = []
      for await (const payment of kassa.payments.list({ status: "paid", limit: 1 })) paid.push(payment)
      expect(paid.map(({ id }) => id)).toEqual(newestFirst.slice(2))
      expect(paid.every(({ status }) => status === "paid")).toBe(true)

      const oldest = await kassa.payments.get(created[0]?.id ?? "")
      const byReference = await kassa.payments.listPage({ order_reference: oldest.order_reference })
      expect(byReference).toEqual({ data: [oldest], has_more: false })
    })

    it("stopping a for await early stops fetching", async () => {
      const { kassa } = await clientFor()
      for (let n = 0; n < 3; n++) await kassa.payments.create({ amount: 1000, order_reference: reference() })
      let seen = 0
      for await (const _ of kassa.payments.list({ limit: 1 })) {
        if (++seen === 2) break
      }
      expect(seen).toBe(2)
    })
  })

  describe("errors from the server", () => {
    it("authentication: unauthenticated, invalid_api_key", async () => {
      // A blank key passes the SDK's check but is an empty credential to the server.
      const blank = await failure(new Kassa({ apiKey: " ", baseUrl: server.baseUrl }).payments.listPage())
      expect(blank).toBeInstanceOf(UnauthenticatedError)
      expect(blank).toMatchObject({ code: "unauthenticated", status: 401, requestId })
      const wrong = await failure(
        new Kassa({ apiKey: `pk_test_${"x".repeat(32)}`, baseUrl: server.baseUrl }).payments.listPage()
      )
      expect(wrong).toBeInstanceOf(InvalidApiKeyError)
      expect(wrong).toMatchObject({ code: "invalid_api_key", status: 401, requestId })
    })

    it("application status and IP allow-list: 403s", async () => {
      const cases = [
        [{ status: "disabled" }, ApplicationDisabledError],
        [{ status: "pending_review" }, ApplicationPendingReviewError],
        [{ status: "suspended" }, ApplicationSuspendedError],
        [{ ip_allowlist: ["192.0.2.1"] }, IpNotAllowedError]
      ] as const
      for (const [overrides, ErrorClass] of cases) {
        const { kassa } = await clientFor(overrides)
        const error = await failure(kassa.payments.listPage())
        expect(error).toBeInstanceOf(ErrorClass)
        expect(error).toMatchObject({ status: 403, requestId })
      }
    })

    it("not_found: an unknown payment, another application's, a live key's simulate", async () => {
      const { kassa, live } = await clientFor()
      const other = await clientFor()
      const payment = await other.kassa.payments.create({ amount: 1000, order_reference: reference() })
      for (const call of [
        () => kassa.payments.get(crypto.randomUUID()),
        () => kassa.payments.get(payment.id),
        () => kassa.payments.cancel(payment.id),
        () => live.test.simulate(payment.id, { outcome: "paid" })
      ]) {
        const error = await failure(call())
        expect(error).toBeInstanceOf(NotFoundError)
        expect(error).toMatchObject({ code: "not_found", status: 404, requestId })
      }
    })

    it("order_reference_already_paid names the payment", async () => {
      const { kassa } = await clientFor()
      const order_reference = reference()
      const first = await kassa.payments.create({ amount: 1000, order_reference })
      const error = await failure(kassa.payments.create({ amount: 1000, order_reference }))
      expect(error).toBeInstanceOf(OrderReferenceAlreadyPaidError)
      expect(error).toMatchObject({ status: 409, payment_id: first.id, requestId })
    })

    it("payment_not_cancellable, payment_not_refundable, payment_not_pending carry the payment's status", async () => {
      const { kassa } = await clientFor()
      const pending = await kassa.payments.create({ amount: 1000, order_reference: reference() })
      const notRefundable = await failure(kassa.payments.refund(pending.id))
      expect(notRefundable).toBeInstanceOf(PaymentNotRefundableError)
      expect(notRefundable).toMatchObject({ status: 409, payment_status: "pending", requestId })
      await kassa.test.simulate(pending.id, { outcome: "paid" })
      const notCancellable = await failure(kassa.payments.cancel(pending.id))
      expect(notCancellable).toBeInstanceOf(PaymentNotCancellableError)
      expect(notCancellable).toMatchObject({ status: 409, payment_status: "paid", requestId })
      const notPending = await failure(kassa.test.simulate(pending.id, { outcome: "failed" }))
      expect(notPending).toBeInstanceOf(PaymentNotPendingError)
      expect(notPending).toMatchObject({ status: 409, payment_status: "paid", requestId })
    })

    it("create rules: method_required, method_not_enabled, amount limits, return_url_not_allowed", async () => {
      const { kassa } = await clientFor({
        methods: ["card", "ideal"],
        min_amount: 500,
        max_amount: 5000,
        return_url_host: "shop.example"
      })
      const body = { amount: 1000, method: "card", order_reference: reference() }
      const cases = [
        [{ ...body, method: undefined }, MethodRequiredError, {}],
        [{ ...body, method: "bitcoin" }, MethodNotEnabledError, {}],
        [{ ...body, amount: 499 }, AmountBelowMinimumError, { min_amount: 500 }],
        [{ ...body, amount: 5001 }, AmountAboveMaximumError, { max_amount: 5000 }],
        [{ ...body, return_url: "https://evil.example/x" }, ReturnUrlNotAllowedError, {}]
      ] as const
      for (const [params, ErrorClass, fields] of cases) {
        const { method, ...rest } = params
        const error = await failure(kassa.payments.create(method === undefined ? rest : { ...rest, method }))
        expect(error).toBeInstanceOf(ErrorClass)
        expect(error).toMatchObject({ status: 422, requestId, ...fields })
      }
    })

    it("refund rules: refund_amount_exceeds_refundable, refunds_processed_manually", async () => {
      const { kassa, live } = await clientFor()
      const payment = await kassa.payments.create({ amount: 1000, order_reference: reference() })
      await kassa.test.simulate(payment.id, { outcome: "paid" })
      await kassa.payments.refund(payment.id, { amount: 400 })
      const tooMuch = await failure(kassa.payments.refund(payment.id, { amount: 601 }))
      expect(tooMuch).toBeInstanceOf(RefundAmountExceedsRefundableError)
      expect(tooMuch).toMatchObject({ status: 422, refundable_amount: 600, requestId })

      // A live create is refused by the (absent) provider: the payment exists as failed, named by `payment_id`.
      const refused = await failure(live.payments.create({ amount: 1000, order_reference: reference() }))
      expect(refused).toBeInstanceOf(ProviderError)
      const livePayment = (refused as ProviderError).payment_id ?? ""
      const manual = await failure(live.payments.refund(livePayment))
      expect(manual).toBeInstanceOf(RefundsProcessedManuallyError)
      expect(manual).toMatchObject({ status: 422, docs_url: expect.stringMatching(/^https?:\/\//), requestId })
    })

    it("provider_error (Kassa-Simulate with a test key) names the failed payment", async () => {
      const { kassa } = await clientFor()
      const error = await failure(
        kassa.payments.create({ amount: 1000, order_reference: reference() }, { simulate: "provider_error" })
      )
      expect(error).toBeInstanceOf(ProviderError)
      expect(error).toMatchObject({ status: 502, requestId, payment_id: expect.any(String) })
      const failed = await kassa.payments.get((error as ProviderError).payment_id ?? "")
      expect(failed.status).toBe("failed")
    })

    it("rate_limited carries Retry-After as retryAfter", async () => {
      const { testKey } = await clientFor({ rate_limit_per_minute: 1 })
      const kassa = new Kassa({ apiKey: testKey, baseUrl: server.baseUrl, maxRetries: 0 })
      await kassa.payments.listPage()
      const error = await failure(kassa.payments.listPage())
      expect(error).toBeInstanceOf(RateLimitedError)
      expect(error).toMatchObject({ status: 429, requestId, retryAfter: expect.any(Number) })
      expect((error as RateLimitedError).retryAfter).toBeGreaterThanOrEqual(1)
    })

    it("validation_failed is answered before sending, with the same fields as the server's answer", async () => {
      const { kassa, testKey } = await clientFor()
      const bodies = [
        { amount: 0, order_reference: "" },
        { amount: 1.5, currency: "eur", order_reference: "x", customer: { email: "nope" }, locale: "dutch" },
        { amount: 100, order_reference: "x", metadata: { ["k".repeat(41)]: 1 }, return_url: "ftp://x" }
      ]
      for (const body of bodies) {
        const local = await failure(kassa.payments.create(body))
        expect(local).toBeInstanceOf(ValidationFailedError)
        expect(local).toMatchObject({ status: 422, requestId: undefined })
        const answer = await server.request("/api/v1/payments", { method: "POST", key: testKey, body })
        expect(answer.status).toBe(422)
        expect(answer.body).toEqual({
          error: {
            code: "validation_failed",
            message: (local as ValidationFailedError).message,
            fields: (local as ValidationFailedError).fields
          }
        })
      }
      const query = await failure(kassa.payments.listPage({ limit: 500, starting_after: "nope" }))
      const answer = await server.request("/api/v1/payments?limit=500&starting_after=nope", { key: testKey })
      expect((answer.body as { error: { fields: unknown } }).error.fields).toEqual(
        (query as ValidationFailedError).fields
      )
    })

    it("every server error is a KassaApiError and an Error", async () => {
      const { kassa } = await clientFor()
      const error = await failure(kassa.payments.get(crypto.randomUUID()))
      expect(error).toBeInstanceOf(KassaApiError)
      expect(error).toBeInstanceOf(Error)
    })
  })

  describe("webhook types", () => {
    it("are re-exported from @kassa/webhook-verify: `data` is the payment the SDK returns, events narrow on `event`", async () => {
      const { kassa } = await clientFor()
      const payment = await kassa.payments.create({ amount: 1000, order_reference: reference() })
      const paid = await kassa.test.simulate(payment.id, { outcome: "paid" })
      const event: KassaEvent = {
        id: `evt_${crypto.randomUUID()}`,
        event: "payment.paid",
        created_at: paid.created_at,
        data: paid
      }
      expectTypeOf<KassaEventName>().toEqualTypeOf<KassaEvent["event"]>()
      if (event.event === "payment.paid") expectTypeOf(event.event).toEqualTypeOf<"payment.paid">()
      expect(event.data).toEqual(await kassa.payments.get(payment.id))
    })
  })
})
