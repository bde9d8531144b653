/**
 * The merchant API's successes: a payment and a list of payments on the wire (decoded and encoded back unchanged, the
 * list query with its defaults), and, in process, every endpoint answering a valid request (status, Location, the
 * decoded request reaching the handler, the application from the key) directly and through the typed client.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { DateTime, Effect, Schema } from "effect"
import { ListPaymentsQuery, PaymentList } from "../src/api/PaymentsApi.ts"
import { Payment } from "../src/domain/Payment.ts"
import {
  application,
  base,
  json,
  jsonBody,
  makeClient,
  paymentId,
  paymentWire,
  samplePayment,
  send,
  validRequests,
  WebHandler
} from "./support/MerchantApiSupport.ts"

describe("Payment on the wire", () => {
  it("decodes the wire form and encodes it back unchanged", () => {
    assert.isTrue(DateTime.isDateTime(samplePayment.created_at))
    assert.strictEqual(DateTime.formatIso(samplePayment.expires_at), "2026-11-22T11:15:30.123Z")
    assert.deepStrictEqual(Schema.encodeSync(Payment)(samplePayment), paymentWire)
  })

  it("lists payments as {data, has_more}", () => {
    const list = { data: [paymentWire], has_more: true }
    assert.deepStrictEqual(Schema.encodeSync(PaymentList)(Schema.decodeUnknownSync(PaymentList)(list)), list)
  })

  it("decodes the list query from strings, with limit 10 by default", () => {
    const Query = Schema.toCodecStringTree(Schema.Struct(ListPaymentsQuery))
    assert.deepStrictEqual(Schema.decodeUnknownSync(Query)({}), { limit: 10 })
    assert.deepStrictEqual(Schema.decodeUnknownSync(Query)({ limit: "100", status: "paid" }), {
      limit: 100,
      status: "paid"
    })
    for (const limit of ["0", "101", "2.5", "ten"]) {
      assert.throws(() => Schema.decodeUnknownSync(Query)({ limit }), undefined, undefined, limit)
    }
  })
})

// --- in process ---------------------------------------------------------------------------------------------------

layer(WebHandler.layer)("MerchantApi in process", (it) => {
  describe("successes", () => {
    it.effect("create answers 201 with the payment and its Location", () =>
      Effect.gen(function* () {
        const response = yield* send(validRequests.create)
        assert.strictEqual(response.status, 201)
        assert.strictEqual(response.headers.get("location"), `/api/v1/payments/${samplePayment.id}`)
        const body = Schema.decodeUnknownSync(Payment)(json(response))
        assert.deepStrictEqual(JSON.parse(body.order_reference), {
          payload: { amount: 1000, order_reference: "order-1" },
          headers: {}
        })
      })
    )

    it.effect("the typed client creates, fetches, lists, cancels, refunds and simulates", () =>
      Effect.gen(function* () {
        const client = yield* makeClient()
        const created = yield* client.payments.create({
          headers: { "kassa-simulate": "provider_error" },
          payload: { amount: 1000, order_reference: "order-1" }
        })
        assert.strictEqual(created.id, samplePayment.id)
        const fetched = yield* client.payments.retrieve({ params: { id: paymentId } })
        assert.deepStrictEqual(Schema.encodeSync(Payment)(fetched), paymentWire)
        const page = yield* client.payments.list({ query: { limit: 5, status: "paid" } })
        assert.deepStrictEqual(JSON.parse(page.data[0]?.order_reference ?? "null"), { limit: 5, status: "paid" })
        const cancelled = yield* client.payments.cancel({ params: { id: paymentId }, payload: {} })
        assert.strictEqual(cancelled.order_reference, "{}")
        const refunded = yield* client.payments.refund({ params: { id: paymentId }, headers: {}, payload: {} })
        assert.strictEqual(refunded.id, samplePayment.id)
        const simulated = yield* client.test.simulate({ params: { id: paymentId }, payload: { outcome: "failed" } })
        assert.strictEqual(simulated.order_reference, `{"outcome":"failed"}`)
        assert.deepStrictEqual(yield* client.health(), { status: "ok" })
      })
    )

    it.effect("refund answers 201; cancel and refund accept no body as {}", () =>
      Effect.gen(function* () {
        const refund = yield* send({ method: "POST", path: validRequests.refund.path })
        assert.strictEqual(refund.status, 201)
        assert.deepStrictEqual(JSON.parse(Schema.decodeUnknownSync(Payment)(json(refund)).order_reference), {
          payload: {},
          headers: {}
        })
        for (const body of [undefined, "{}"]) {
          const cancel = yield* send({
            ...validRequests.cancel,
            ...(body === undefined ? {} : { body, headers: jsonBody })
          })
          assert.strictEqual(cancel.status, 200)
          assert.strictEqual(Schema.decodeUnknownSync(Payment)(json(cancel)).order_reference, "{}")
        }
      })
    )

    it.effect("list reads limit 10 when none is given", () =>
      Effect.gen(function* () {
        const response = yield* send(validRequests.list)
        assert.strictEqual(response.status, 200)
        const page = Schema.decodeUnknownSync(PaymentList)(json(response))
        assert.deepStrictEqual(JSON.parse(page.data[0]?.order_reference ?? "null"), { limit: 10 })
      })
    )

    it.effect("the application from the key reaches the handler", () =>
      Effect.gen(function* () {
        const response = yield* send(validRequests.retrieve)
        assert.strictEqual(response.status, 200)
        assert.strictEqual(Schema.decodeUnknownSync(Payment)(json(response)).mode, application.mode)
      })
    )

    it.effect("GET /healthz answers without a key", () =>
      Effect.gen(function* () {
        const handler = yield* WebHandler
        const response = yield* Effect.promise(() => handler(new Request(`${base}/healthz`)))
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(yield* Effect.promise(() => response.json()), { status: "ok" })
      })
    )
  })
})
