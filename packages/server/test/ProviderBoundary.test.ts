/**
 * When the payment provider hears of a payment, seen from the provider's side: a recording provider boundary
 * stands in for the provider (the one part of the system that cannot be reached from here), everything else is the
 * real server over HTTP. A provider that is asked about a payment may charge for it, so "asked" is what matters here,
 * not what the merchant's answer says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
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
  beforeAll(async () => {
    provider = recordingProvider()
    server = await startServer(database, {}, { provider: provider.layer })
  })
  afterAll(() => server.close())

  const askedAbout = (reference: string) =>
    provider.requests.filter((request) => request.draft.order_reference === reference)

  const linkedApplication = () => server.createApplication({ provider_account: "acct_linked_1" })

  it("a live payment is announced once, with the payment's id, the draft and the linked account", async () => {
    const { application, liveKey } = await linkedApplication()
    const reference = uniqueReference("live-open")
    const response = await createPayment(server, liveKey, { amount: 4321, order_reference: reference })
    expect(response.status, response.text).toBe(201)
    const payment = response.body as WirePayment
    expect(payment).toMatchObject({ status: "pending", mode: "live", amount: 4321 })
    const asked = askedAbout(reference)
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      paymentId: payment.id,
      mode: "live",
      providerAccount: "acct_linked_1",
      providerIdempotencyKey: null,
      draft: { amount: 4321, currency: "EUR", order_reference: reference }
    })
    expect(application.provider_account).toBe("acct_linked_1")
  })

  it("rule 5 comes first: a live create on a reference a live payment holds never reaches the provider", async () => {
    const { liveKey } = await linkedApplication()
    const reference = uniqueReference("live-held")
    const first = await createPayment(server, liveKey, { order_reference: reference })
    expect(first.status).toBe(201)
    const holder = (first.body as WirePayment).id
    const second = await createPayment(server, liveKey, { order_reference: reference })
    expect(second.status).toBe(409)
    expect((second.body as WireError).error).toMatchObject({ code: "order_reference_already_paid", payment_id: holder })
    expect(askedAbout(reference)).toHaveLength(1)
    expect(await paymentsWithReference(server, reference)).toEqual([{ id: holder, status: "pending" }])
  })

  it("the provider gets an idempotency key derived from the request's, and a replay does not ask again", async () => {
    const { application, liveKey } = await linkedApplication()
    const reference = uniqueReference("live-idem")
    const key = `idem-${crypto.randomUUID()}`
    const first = await createPayment(server, liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(first.status, first.text).toBe(201)
    const replay = await createPayment(server, liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect((replay.body as WirePayment).id).toBe((first.body as WirePayment).id)
    const asked = askedAbout(reference)
    expect(asked).toHaveLength(1)
    // Scoped to application and mode, so two merchants' (or one merchant's test and live) keys never meet.
    expect(asked[0]?.providerIdempotencyKey).toBe(`kassa:${application.id}:live:${key}`)
  })

  it("test payments go to the simulator, once per create", async () => {
    const { testKey } = await linkedApplication()
    const reference = uniqueReference("test-open")
    const response = await createPayment(server, testKey, { order_reference: reference })
    expect(response.status).toBe(201)
    const asked = askedAbout(reference)
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({ mode: "test", paymentId: (response.body as WirePayment).id })
  })

  it("a refused payment is stored as failed under the id the provider was told, after one question", async () => {
    const { testKey } = await linkedApplication()
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
