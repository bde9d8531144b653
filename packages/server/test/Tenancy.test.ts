/**
 * Every payment belongs to one application and one mode: another application's key, and the same application's
 * key of the other mode, get 404 `not_found` on every endpoint, and the payment is unchanged afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  createPayment,
  errorCode,
  eventsOf,
  fetchPayment,
  paidPayment,
  pendingPayment,
  refund,
  simulate,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

describe.each(databases)("tenancy on %s", (database) => {
  let server: RunningServer
  let owner: TestApplication
  let stranger: TestApplication
  beforeAll(async () => {
    server = await startServer(database)
    owner = await server.createApplication()
    stranger = await server.createApplication()
  })
  afterAll(() => server.close())

  /** Keys that must not reach a test payment of `owner`. */
  const foreignToTest = () => [
    ["another application's test key", stranger.testKey],
    ["another application's live key", stranger.liveKey],
    ["the same application's live key", owner.liveKey]
  ]

  /** Asserts the owner still sees exactly the same payment and no new event. */
  const expectUnchanged = async (payment: WirePayment, events: number) => {
    expect((await fetchPayment(server, owner.testKey, payment.id)).body).toEqual(payment)
    expect(await eventsOf(server, payment.id)).toHaveLength(events)
  }

  const endpoints: ReadonlyArray<{
    readonly name: string
    readonly prepare: () => Promise<WirePayment>
    readonly call: (key: string, id: string) => ReturnType<RunningServer["request"]>
  }> = [
    {
      name: "GET /payments/{id}",
      prepare: () => pendingPayment(server, owner.testKey),
      call: (key, id) => fetchPayment(server, key, id)
    },
    {
      name: "POST /payments/{id}/cancel",
      prepare: () => pendingPayment(server, owner.testKey),
      call: (key, id) => server.request(`/api/v1/payments/${id}/cancel`, { method: "POST", key })
    },
    {
      name: "POST /payments/{id}/refunds",
      prepare: () => paidPayment(server, owner.testKey),
      call: (key, id) => refund(server, key, id, { amount: 100 })
    },
    {
      name: "POST /payments/{id}/refunds with Idempotency-Key",
      prepare: () => paidPayment(server, owner.testKey),
      call: (key, id) => refund(server, key, id, {}, { "idempotency-key": `tenancy-${crypto.randomUUID()}` })
    },
    {
      name: "POST /test/payments/{id}/simulate",
      prepare: () => pendingPayment(server, owner.testKey),
      call: (key, id) => simulate(server, key, id, "paid")
    }
  ]

  for (const endpoint of endpoints) {
    it(`${endpoint.name}: foreign keys get 404 not_found and change nothing`, async () => {
      const payment = await endpoint.prepare()
      const events = (await eventsOf(server, payment.id)).length
      for (const [who, key] of foreignToTest()) {
        const response = await endpoint.call(String(key), payment.id)
        expect(response.status, String(who)).toBe(404)
        expect(errorCode(response), String(who)).toBe("not_found")
      }
      await expectUnchanged(payment, events)
    })
  }

  it("GET /payments lists only the key's application and mode", async () => {
    const payment = await pendingPayment(server, owner.testKey)
    const listed = async (key: string) =>
      ((await server.request("/api/v1/payments?limit=100", { key })).body as { data: Array<WirePayment> }).data.map(
        (entry) => entry.id
      )
    expect(await listed(owner.testKey)).toContain(payment.id)
    for (const [who, key] of foreignToTest()) expect(await listed(String(key)), String(who)).not.toContain(payment.id)
    for (const [who, key] of foreignToTest()) {
      const byCursor = await server.request(`/api/v1/payments?starting_after=${payment.id}`, { key: String(key) })
      expect(byCursor.status, String(who)).toBe(422)
    }
  })

  it("a live payment is out of reach of test keys and of other applications", async () => {
    const created = await createPayment(server, owner.liveKey)
    const paymentId = String((created.body as WireError).error.payment_id)
    const before = await fetchPayment(server, owner.liveKey, paymentId)
    expect(before.status).toBe(200)
    for (const key of [owner.testKey, stranger.testKey, stranger.liveKey]) {
      expect((await fetchPayment(server, key, paymentId)).status).toBe(404)
      expect((await refund(server, key, paymentId, { amount: 1 })).status).toBe(404)
      expect((await server.request(`/api/v1/payments/${paymentId}/cancel`, { method: "POST", key })).status).toBe(404)
      expect((await simulate(server, key, paymentId, "paid")).status).toBe(404)
    }
    expect((await fetchPayment(server, owner.liveKey, paymentId)).body).toEqual(before.body)
  })

  it("order references are per application and mode", async () => {
    const payment = await pendingPayment(server, owner.testKey)
    const elsewhere = await createPayment(server, stranger.testKey, { order_reference: payment.order_reference })
    expect(elsewhere.status).toBe(201)
    // The live mode's own answer (no provider linked), not order_reference_already_paid.
    const live = await createPayment(server, owner.liveKey, { order_reference: payment.order_reference })
    expect(errorCode(live)).toBe("provider_error")
    const here = await createPayment(server, owner.testKey, { order_reference: payment.order_reference })
    expect(errorCode(here)).toBe("order_reference_already_paid")
  })
})
