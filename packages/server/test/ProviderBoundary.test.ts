/**
 * When the payment provider hears of a payment, seen from the provider's side: live payments go to the fake Stripe
 * (the connector's real SDK calls over HTTP) of an account linked through the operator API, test payments to the
 * simulator, which a recording boundary watches; everything else is the real server over HTTP. A provider that is asked about a payment may charge for it, so "asked" is what matters here,
 * not what the merchant's answer says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import {
  createPayment,
  paymentsWithReference,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { type RecordingProvider, recordingProvider } from "./support/RecordingProvider.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("the provider boundary on %s", (database) => {
  let server: RunningServer
  let provider: RecordingProvider
  let fake: FakeStripe
  beforeAll(async () => {
    provider = recordingProvider()
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url }, { simulator: provider.layer })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const askedAbout = (reference: string) =>
    provider.requests.filter((request) => request.draft.order_reference === reference)

  const testApplication = () => server.createApplication()

  const sessionCreates = (reference: string) =>
    fake.requests.filter(
      (r) =>
        r.method === "POST" &&
        r.path === "/v1/checkout/sessions" &&
        paymentsByReference.get(reference)?.has(String(r.params.client_reference_id)) === true
    )
  // The ids Kassa made for a reference, so Stripe's requests can be matched to the test's payments.
  const paymentsByReference = new Map<string, Set<string>>()
  const remember = async (reference: string) => {
    paymentsByReference.set(reference, new Set((await paymentsWithReference(server, reference)).map((p) => p.id)))
  }

  it("a live payment is announced to the linked Stripe account once, with the payment's id and the draft", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-open")
    const response = await createPayment(server, shop.liveKey, { amount: 4321, order_reference: reference })
    expect(response.status, response.text).toBe(201)
    const payment = response.body as WirePayment
    expect(payment).toMatchObject({ status: "pending", mode: "live", amount: 4321 })
    await remember(reference)
    const asked = sessionCreates(reference)
    expect(asked).toHaveLength(1)
    expect(asked[0]?.params).toMatchObject({
      client_reference_id: payment.id,
      line_items: [{ price_data: { currency: "eur", unit_amount: "4321", product_data: { name: reference } } }]
    })
    // The key Stripe saw is the linked one: the session belongs to the linked account.
    expect(fake.sessions().find((s) => s.client_reference_id === payment.id)).toBeDefined()
    expect(askedAbout(reference)).toHaveLength(0)
  })

  it("rule 5 comes first: a live create on a reference a live payment holds never reaches the provider", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-held")
    const first = await createPayment(server, shop.liveKey, { order_reference: reference })
    expect(first.status).toBe(201)
    const holder = (first.body as WirePayment).id
    const second = await createPayment(server, shop.liveKey, { order_reference: reference })
    expect(second.status).toBe(409)
    expect((second.body as WireError).error).toMatchObject({ code: "order_reference_already_paid", payment_id: holder })
    await remember(reference)
    expect(sessionCreates(reference)).toHaveLength(1)
    expect(await paymentsWithReference(server, reference)).toEqual([{ id: holder, status: "pending" }])
  })

  it("the provider gets an idempotency key derived from the payment the request's key made, and a replay does not ask again", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-idem")
    const key = `idem-${crypto.randomUUID()}`
    const first = await createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(first.status, first.text).toBe(201)
    const replay = await createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect((replay.body as WirePayment).id).toBe((first.body as WirePayment).id)
    await remember(reference)
    const asked = sessionCreates(reference)
    expect(asked).toHaveLength(1)
    // Scoped to application and mode, so two merchants' (or one merchant's test and live) keys never meet.
    expect(asked[0]?.idempotencyKey).toBe(`kassa:${shop.application.id}:live:payment:${(first.body as WirePayment).id}`)
  })

  it("test payments go to the simulator, once per create", async () => {
    const { testKey } = await testApplication()
    const reference = uniqueReference("test-open")
    const response = await createPayment(server, testKey, { order_reference: reference })
    expect(response.status).toBe(201)
    const asked = askedAbout(reference)
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({ mode: "test", paymentId: (response.body as WirePayment).id })
  })

  it("a refused payment is stored as failed under the id the provider was told, after one question", async () => {
    const { testKey } = await testApplication()
    const reference = uniqueReference("test-refused")
    const response = await createPayment(
      server,
      testKey,
      { order_reference: reference },
      { "kassa-simulate": "provider_error" }
    )
    expect(response.status).toBe(502)
    const paymentId = String((response.body as WireError).error.payment_id)
    expect(askedAbout(reference).map((request) => request.paymentId)).toEqual([paymentId])
    expect(await paymentsWithReference(server, reference)).toEqual([{ id: paymentId, status: "failed" }])
  })
})
