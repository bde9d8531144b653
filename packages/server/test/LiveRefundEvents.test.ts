/**
 * Stripe's refund events at `POST /provider-webhooks/stripe/{link_id}` (issue 12, decisions §10 "Settlement" and
 * "Live refunds"), over real HTTP on both databases: the fake Stripe signs and sends `refund.created`,
 * `refund.updated`, `refund.failed` and `charge.refunded` to the endpoint the link registered, and Kassa reads the
 * refund again and applies it — a refund made in Stripe's dashboard is recorded once, `succeeded`, reason
 * "refunded at provider", with its event; Kassa's own refund whose answer was lost is settled with no second create;
 * a refund failing later is recomputed with no event and a discrepancy; Stripe not answering the re-read is 502 `provider_error`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import {
  type LinkedForRefunds,
  linkedApplication as linkedFixture,
  paidLivePayment as paidFixture
} from "./support/LivePaymentFixture.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { eventsOf, fetchPayment, query, type WirePayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("live refund events on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const linkedApplication = () => linkedFixture(server, fake)
  const paidLivePayment = (linked: LinkedForRefunds, amount = 1000) => paidFixture(server, fake, linked, amount)
  const operatorRefund = (paymentId: string, body: Record<string, unknown>) =>
    operatorRequest(server, `/payments/${paymentId}/refunds`, { method: "POST", body })
  const payment = async (linked: LinkedForRefunds, id: string) =>
    (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
  const eventNames = async (id: string) => (await eventsOf(server, id)).map((event) => event.event)
  const refundCreates = (paymentIntentId: string) =>
    fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/refunds" && r.params.payment_intent === paymentIntentId
    )
  /**
   * Events Stripe made about the refund: its own, and `charge.refunded` of its charge, which names no refund (a
   * Charge has had no `refunds` list since API 2022-11-15, https://docs.stripe.com/upgrades#2022-11-15).
   */
  const eventsAbout = (providerRefundId: string) => {
    const charge = fake.refund(providerRefundId).charge
    return fake.events.filter(
      (event) =>
        JSON.stringify(event.data).includes(providerRefundId) ||
        (event.type === "charge.refunded" && (event.data as { object: { id: unknown } }).object.id === charge)
    )
  }
  const deliveriesOf = (eventIds: ReadonlyArray<string>) =>
    fake.deliveries.filter((delivery) => eventIds.includes(delivery.eventId))

  it('a refund made in Stripe\'s dashboard, by refund.created and charge.refunded: recorded once, succeeded, "refunded at provider", with its event', async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    const made = fake.refundInDashboard(paymentIntentId, 250)
    await fake.settled()
    const sent = eventsAbout(String(made.id))
    expect(sent.map((event) => event.type).sort()).toEqual(["charge.refunded", "refund.created"])
    expect(deliveriesOf(sent.map((event) => String(event.id))).map((delivery) => delivery.status)).toEqual([200, 200])
    const fetched = await payment(linked, id)
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 250 })
    expect(fetched.refunds).toEqual([
      expect.objectContaining({ amount: 250, status: "succeeded", reason: "refunded at provider" })
    ])
    expect(await eventNames(id)).toEqual(["payment.partially_refunded"])

    // Each event sent again: nothing changes twice.
    for (const event of sent) await fake.resend(String(event.id))
    expect((await payment(linked, id)).refunds).toHaveLength(1)
    expect(await eventNames(id)).toEqual(["payment.partially_refunded"])

    // The rest refunded in the dashboard too: payment.refunded.
    fake.refundInDashboard(paymentIntentId)
    await fake.settled()
    expect(await payment(linked, id)).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    expect(await eventNames(id)).toEqual(["payment.partially_refunded", "payment.refunded"])
  })

  it("Kassa's own refund whose answer was lost is settled by its event, with no second create at Stripe", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    fake.hold()
    fake.inject({ method: "POST", path: "/v1/refunds" }, { kind: "status-after", status: 500 })
    const answered = await operatorRefund(id, { amount: 300 })
    expect(answered.status, answered.text).toBe(201)
    expect((answered.body as WirePayment).refunds[0]?.status).toBe("pending")
    await fake.release()
    await fake.settled()
    const fetched = await payment(linked, id)
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 300 })
    expect(fetched.refunds.map((refund) => [refund.amount, refund.status])).toEqual([[300, "succeeded"]])
    expect(refundCreates(paymentIntentId)).toHaveLength(1)
    expect(await eventNames(id)).toEqual(["payment.partially_refunded"])
    const [row] = await query(
      server,
      (sql) => sql`SELECT provider_refund_id, next_read_at FROM provider_refunds WHERE payment_id = ${id}`
    )
    expect(String(row?.provider_refund_id)).toMatch(/^re_/)
    expect(row?.next_read_at).toBeNull()
  })

  it("a refund failing at Stripe after it succeeded (refund.updated, refund.failed): recomputed, no event, a discrepancy", async () => {
    const linked = await linkedApplication()
    const { id } = await paidLivePayment(linked, 1000)
    const answered = await operatorRefund(id, { amount: 400 })
    expect(answered.status, answered.text).toBe(201)
    expect(answered.body).toMatchObject({ status: "partially_refunded", refunded_amount: 400 })
    await fake.settled()
    const refundId = String((answered.body as WirePayment).refunds[0]?.id)
    const [row] = await query(
      server,
      (sql) => sql`SELECT provider_refund_id FROM provider_refunds WHERE refund_id = ${refundId}`
    )
    const failed = fake.failSucceededRefund(String(row?.provider_refund_id))
    await fake.settled()
    const types = eventsAbout(String(failed.id)).map((event) => event.type)
    expect(types).toContain("refund.updated")
    expect(types).toContain("refund.failed")
    const fetched = await payment(linked, id)
    expect(fetched).toMatchObject({ status: "paid", refunded_amount: 0 })
    expect(fetched.refunds.map((refund) => refund.status)).toEqual(["failed"])
    expect(await eventNames(id)).toEqual(["payment.partially_refunded"])
    const found = await query(server, (sql) => sql`SELECT * FROM provider_discrepancies WHERE payment_id = ${id}`)
    expect(found).toHaveLength(1)
    expect(found[0]).toMatchObject({ refund_id: refundId, kind: "refund_failed_after_success" })
  })

  it("charge.refunded alone (refund.created lost) records the refund: its charge names none, so they are listed", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    fake.eventFault({ drop: true, type: "refund.created", count: 1 })
    const made = fake.refundInDashboard(paymentIntentId, 300)
    await fake.settled()
    const sent = eventsAbout(String(made.id)).filter((event) => deliveriesOf([String(event.id)]).length > 0)
    expect(sent.map((event) => event.type)).toEqual(["charge.refunded"])
    const listed = fake.requests.filter((r) => r.method === "GET" && r.path === "/v1/refunds")
    expect(listed.at(-1)?.params).toMatchObject({ payment_intent: paymentIntentId })
    expect((await payment(linked, id)).refunds).toEqual([
      expect.objectContaining({ amount: 300, status: "succeeded", reason: "refunded at provider" })
    ])
    expect(await eventNames(id)).toEqual(["payment.partially_refunded"])
  })

  it("Stripe not answering the re-read: 502 provider_error and nothing recorded; the events sent again are applied", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    fake.hold()
    const made = fake.refundInDashboard(paymentIntentId, 100)
    fake.inject({ method: "GET", path: `/v1/refunds/${String(made.id)}` }, { kind: "status", status: 500 }, 2)
    await fake.release()
    await fake.settled()
    const sent = eventsAbout(String(made.id)).map((event) => String(event.id))
    expect(deliveriesOf(sent).map((delivery) => delivery.status)).toEqual([502, 502])
    expect((await payment(linked, id)).refunds).toHaveLength(0)
    for (const eventId of sent) await fake.resend(eventId)
    expect(deliveriesOf(sent).map((delivery) => delivery.status)).toEqual([502, 502, 200, 200])
    expect((await payment(linked, id)).refunds).toEqual([
      expect.objectContaining({ amount: 100, status: "succeeded", reason: "refunded at provider" })
    ])
  })

  it("one Stripe account linked to two applications: the other link's endpoint changes nothing", async () => {
    const owner = await linkedApplication()
    const other = await server.createApplication()
    const linked = await server.request(`/admin/api/v1/applications/${other.application.id}/provider-account`, {
      method: "PUT",
      key: server.adminToken,
      body: { provider: "stripe", secret_key: owner.stripeKey }
    })
    expect(linked.status, linked.text).toBe(200)
    const { id, paymentIntentId } = await paidLivePayment(owner, 1000)
    const made = fake.refundInDashboard(paymentIntentId, 600)
    await fake.settled()
    const sent = eventsAbout(String(made.id)).map((event) => String(event.id))
    const endpoints = new Set(deliveriesOf(sent).map((delivery) => delivery.endpointId))
    expect(endpoints.size).toBe(2)
    expect(deliveriesOf(sent).every((delivery) => delivery.status === 200)).toBe(true)
    expect((await payment(owner, id)).refunds).toEqual([
      expect.objectContaining({ amount: 600, status: "succeeded", reason: "refunded at provider" })
    ])
    expect(await eventNames(id)).toEqual(["payment.partially_refunded"])
    const rows = await query(
      server,
      (sql) => sql`SELECT link_id FROM provider_refunds WHERE provider_refund_id = ${String(made.id)}`
    )
    expect(rows.map((row) => row.link_id)).toEqual([owner.linkId])

    // Kassa's own refund: only the owner's endpoint reads it again. One read for the create's answer and one per
    // event at the owner's endpoint (refund.created, charge.refunded); none for the other link's endpoint.
    const answered = await operatorRefund(id, { amount: 100 })
    expect(answered.status, answered.text).toBe(201)
    await fake.settled()
    const refundId = String((answered.body as WirePayment).refunds.at(-1)?.id)
    const [row] = await query(server, (sql) => sql`SELECT attempts FROM provider_refunds WHERE refund_id = ${refundId}`)
    expect(row?.attempts).toBe(3)
    expect(await eventNames(id)).toEqual(["payment.partially_refunded", "payment.partially_refunded"])
  })
})
