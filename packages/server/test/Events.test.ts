/**
 * The event outbox: every status change writes exactly one event and one pending delivery, in the same
 * transaction as the change; the event's body is `{"id","event","created_at","data"}` with `data` equal to what
 * fetch returns right after; creating a pending payment and refused changes write nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  cancel,
  createPayment,
  eventsOf,
  expireInDatabase,
  fetchPayment,
  paidPayment,
  pendingPayment,
  query,
  refund,
  simulate,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const eventId = /^evt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe.each(databases)("events on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  /** The transaction id that last wrote each row: equal ids mean one transaction wrote them. */
  const writers = async (paymentId: string, eventRowId: string) => {
    const [row] = await query(
      server,
      (sql) => sql`
        SELECT p.xmin::text AS payment, e.xmin::text AS event
        FROM payments p, events e
        WHERE p.id = ${paymentId} AND e.id = ${eventRowId}
      `
    )
    return row
  }

  /**
   * Checks that exactly one event was added since `before` events, named `name`, with one delivery created at the
   * event's time, written by the transaction that last changed the payment, carrying what fetch returns now.
   */
  const expectNewEvent = async (key: string, paymentId: string, name: string, before: number) => {
    const events = await eventsOf(server, paymentId)
    expect(events.map((event) => event.event)).toHaveLength(before + 1)
    const event = events.at(-1)
    if (event === undefined) throw new Error("no event")
    expect(event.event).toBe(name)
    expect(event.id).toMatch(eventId)
    // One delivery, created with the event. The delivery engine claims it at once, so its status and row
    // version move on; events are never updated, so the event row proves the transaction.
    expect(event.deliveries).toBe(1)
    expect(event.delivery_created_at?.getTime()).toBe(event.created_at.getTime())

    const transactions = await writers(paymentId, event.id)
    expect(transactions?.event).toBe(transactions?.payment)

    const body = JSON.parse(event.body) as Record<string, unknown>
    expect(Object.keys(body)).toEqual(["id", "event", "created_at", "data"])
    expect(body.id).toBe(event.id)
    expect(body.event).toBe(name)
    expect(body.created_at).toBe(event.created_at.toISOString())
    const fetched = await fetchPayment(server, key, paymentId)
    expect(body.data).toEqual(fetched.body)
    return { event, body, data: body.data as WirePayment }
  }

  it("creating a pending payment writes no event and no delivery", async () => {
    const { testKey } = await server.createApplication()
    const payment = await pendingPayment(server, testKey)
    expect(await eventsOf(server, payment.id)).toEqual([])
    const deliveries = await query(
      server,
      (sql) => sql`SELECT d.id FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = ${payment.id}`
    )
    expect(deliveries).toEqual([])
  })

  it("cancel writes payment.cancelled", async () => {
    const { testKey } = await server.createApplication()
    const payment = await pendingPayment(server, testKey)
    const response = await cancel(server, testKey, payment.id)
    const { data } = await expectNewEvent(testKey, payment.id, "payment.cancelled", 0)
    expect(data).toEqual(response.body)
  })

  it("simulate writes payment.paid (at paid_at), payment.failed and payment.expired", async () => {
    const { testKey } = await server.createApplication()
    for (const outcome of ["paid", "failed", "expired"]) {
      const payment = await pendingPayment(server, testKey)
      const response = await simulate(server, testKey, payment.id, outcome)
      const { body, data } = await expectNewEvent(testKey, payment.id, `payment.${outcome}`, 0)
      expect(data).toEqual(response.body)
      if (outcome === "paid") expect(body.created_at).toBe(data.paid_at)
    }
  })

  it("each partial refund writes payment.partially_refunded again; the last one payment.refunded", async () => {
    const { testKey } = await server.createApplication()
    const payment = await paidPayment(server, testKey, { amount: 1000 })
    const first = await refund(server, testKey, payment.id, { amount: 100 })
    const one = await expectNewEvent(testKey, payment.id, "payment.partially_refunded", 1)
    expect(one.data).toEqual(first.body)
    expect(one.data.refunded_amount).toBe(100)

    const second = await refund(server, testKey, payment.id, { amount: 200 })
    const two = await expectNewEvent(testKey, payment.id, "payment.partially_refunded", 2)
    expect(two.data).toEqual(second.body)
    expect(two.data.refunds).toHaveLength(2)

    const rest = await refund(server, testKey, payment.id)
    const last = await expectNewEvent(testKey, payment.id, "payment.refunded", 3)
    expect(last.data).toEqual(rest.body)
    expect(last.data.refunded_amount).toBe(1000)
  })

  it("lazy expiry writes payment.expired once, with the expired payment as data", async () => {
    const { testKey } = await server.createApplication()
    const payment = await pendingPayment(server, testKey)
    await expireInDatabase(server, payment.id)
    const fetched = await fetchPayment(server, testKey, payment.id)
    const { data } = await expectNewEvent(testKey, payment.id, "payment.expired", 0)
    expect(data).toEqual(fetched.body)
    expect(data.status).toBe("expired")
  })

  it("a refused create (provider_error) writes payment.failed; so does a live create", async () => {
    const { testKey, liveKey } = await server.createApplication()
    for (const [key, headers] of [
      [testKey, { "kassa-simulate": "provider_error" }],
      [liveKey, {}]
    ] as const) {
      const response = await createPayment(server, key, {}, headers)
      expect(response.status).toBe(502)
      const paymentId = String((response.body as WireError).error.payment_id)
      const { data } = await expectNewEvent(key, paymentId, "payment.failed", 0)
      expect(data.status).toBe("failed")
    }
  })

  it("refused changes write nothing", async () => {
    const { testKey, liveKey } = await server.createApplication()
    const payment = await paidPayment(server, testKey, { amount: 1000 })
    expect(await eventsOf(server, payment.id)).toHaveLength(1)
    expect((await cancel(server, testKey, payment.id)).status).toBe(409)
    expect((await simulate(server, testKey, payment.id, "failed")).status).toBe(409)
    expect((await refund(server, testKey, payment.id, { amount: 1001 })).status).toBe(422)
    expect((await refund(server, liveKey, payment.id)).status).toBe(404)
    expect(await eventsOf(server, payment.id)).toHaveLength(1)
  })

  it("events carry the payment's application and mode", async () => {
    const { application, testKey } = await server.createApplication()
    const payment = await pendingPayment(server, testKey)
    await cancel(server, testKey, payment.id)
    const rows = await query(
      server,
      (sql) => sql`
        SELECT e.application_id, e.mode, d.application_id AS delivery_application_id
        FROM events e JOIN deliveries d ON d.event_id = e.id WHERE e.payment_id = ${payment.id}
      `
    )
    expect(rows).toEqual([{ application_id: application.id, mode: "test", delivery_application_id: application.id }])
  })
})
