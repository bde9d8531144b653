/**
 * Live refunds through Stripe (issue 12 §4, decisions §10 "Live refunds") over real HTTP, on both databases, with the
 * stateful fake Stripe behind `KASSA_STRIPE_API_URL`: the operator API's and the dashboard's refund requests reach
 * Stripe with §10's parameters and the refund id as Idempotency-Key, and Stripe's answer is applied — succeeded →
 * `partially_refunded`/`refunded` with the event and its delivery; refused or canceled → released, no event; no
 * answer → `pending`, then the background round retries with the same key and settles it; succeeded-then-failed →
 * recomputed, no event, a discrepancy. Over-refunds are refused before Stripe hears of them; test payments get the
 * operator endpoint's error; every request is audited.
 *
 * Fixture (support/LivePaymentFixture.ts): a paid live payment as Kassa holds one once Stripe took the money — linked
 * through the operator API, a Checkout Session paid at the fake Stripe, the payment and its `provider_payments` row.
 */
import { Ids } from "@kassa/core"
import { DateTime, Duration, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LiveRefunds } from "../src/live/LiveRefunds.ts"
import { ProviderLinkId } from "../src/providers/ProviderConnector.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { type FakeStripe, type JsonObject, startFakeStripe } from "./support/FakeStripe.ts"
import {
  type LinkedForRefunds,
  linkedApplication as linkedFixture,
  paidLivePayment as paidFixture
} from "./support/LivePaymentFixture.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { errorCode, eventsOf, fetchPayment, paidPayment, query, type WirePayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

describe.each(databases)("live refunds on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url }, { passwordCost: testPasswordCost })
    // These cases cover Stripe's answers and the background round: Stripe's events are kept (still recorded in
    // `fake.events`) so they cannot settle a refund first; LiveRefundEvents.test.ts sends them.
    fake.hold()
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const linkedApplication = () => linkedFixture(server, fake)
  const paidLivePayment = (linked: LinkedForRefunds, amount = 1000) => paidFixture(server, fake, linked, amount)

  /** One round of the background fiber, at `now` (a test never waits for the clock). */
  const settleDue = (now?: DateTime.Utc) =>
    server.run(
      Effect.gen(function* () {
        return yield* (yield* LiveRefunds).refreshDue({ now })
      })
    )
  /** What a provider event about the refund leads to: Kassa asks Stripe again and applies its answer. */
  const refresh = (refundId: string) =>
    server.run(
      Effect.gen(function* () {
        return yield* (yield* LiveRefunds).refresh(Ids.RefundId.make(refundId))
      })
    )

  const applyProviderRefund = (hint: { linkId: string; providerRefundId: string; paymentIntentId: string | null }) =>
    server.run(
      Effect.gen(function* () {
        return yield* (yield* LiveRefunds).applyProviderRefund({
          linkId: ProviderLinkId.make(hint.linkId),
          providerRefundId: hint.providerRefundId,
          // Stripe's payment intent is the provider's payment.
          providerPaymentId: hint.paymentIntentId
        })
      })
    )

  const operatorRefund = (paymentId: string, body: Record<string, unknown>) =>
    operatorRequest(server, `/payments/${paymentId}/refunds`, { method: "POST", body })

  const refundCalls = (paymentIntentId: string) =>
    fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/refunds" && r.params.payment_intent === paymentIntentId
    )
  /** Refunds Stripe actually made for the payment intent (a replayed key makes none). */
  const refundsAtStripe = (paymentIntentId: string) =>
    fake.events.filter(
      (event) =>
        event.type === "refund.created" &&
        ((event.data as JsonObject).object as JsonObject).payment_intent === paymentIntentId
    )

  const providerRefund = async (refundId: string) =>
    (await query(server, (sql) => sql`SELECT * FROM provider_refunds WHERE refund_id = ${refundId}`))[0]
  const discrepancies = (paymentId: string) =>
    query(server, (sql) => sql`SELECT * FROM provider_discrepancies WHERE payment_id = ${paymentId}`)
  const auditOf = async (applicationId: string) => {
    const answer = await server.request(`/admin/api/v1/audit?limit=100&application_id=${applicationId}`, {
      key: server.adminToken
    })
    expect(answer.status, answer.text).toBe(200)
    return (
      answer.body as {
        data: Array<{ actor: string; action: string; target: string | null; details: Record<string, unknown> }>
      }
    ).data
  }

  it("operator API: §10's call to Stripe with the refund id as key; succeeded → partially_refunded, then refunded, each with its event and delivery", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)

    const partial = await operatorRefund(id, { amount: 400, reason: "Returned item" })
    expect(partial.status, partial.text).toBe(201)
    const payment = partial.body as WirePayment
    expect(payment).toMatchObject({ id, status: "partially_refunded", refunded_amount: 400 })
    expect(payment.refunds).toHaveLength(1)
    const refund = payment.refunds[0]
    expect(refund).toMatchObject({ amount: 400, status: "succeeded", reason: "Returned item" })
    const [call] = refundCalls(paymentIntentId)
    expect(call?.params).toEqual({
      payment_intent: paymentIntentId,
      amount: "400",
      metadata: { kassa_refund_id: refund?.id }
    })
    expect(call?.idempotencyKey).toBe(refund?.id)
    expect(call?.stripeVersion).toBe(apiVersion)
    const stored = await providerRefund(String(refund?.id))
    expect(stored).toMatchObject({ payment_id: id, link_id: linked.linkId, next_read_at: null })
    expect(String(stored?.provider_refund_id)).toMatch(/^re_/)

    // No amount: everything still refundable.
    const rest = await operatorRefund(id, {})
    expect(rest.status, rest.text).toBe(201)
    expect(rest.body).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    expect(refundCalls(paymentIntentId).at(-1)?.params.amount).toBe("600")

    const events = await eventsOf(server, id)
    expect(events.map((event) => [event.event, event.deliveries])).toEqual([
      ["payment.partially_refunded", 1],
      ["payment.refunded", 1]
    ])
    expect(JSON.parse(events[1]?.body ?? "{}").data).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    // Fetch through the merchant API says the same.
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched.refunds.map((entry) => [entry.amount, entry.status])).toEqual([
      [400, "succeeded"],
      [600, "succeeded"]
    ])
  })

  it("operator API: audited as refund.requested with the refund, amount and reason", async () => {
    const linked = await linkedApplication()
    const { id } = await paidLivePayment(linked, 1000)
    const answer = await operatorRefund(id, { amount: 250, reason: "Goodwill" })
    expect(answer.status, answer.text).toBe(201)
    const refundId = (answer.body as WirePayment).refunds[0]?.id
    const entries = (await auditOf(linked.application.id)).filter((entry) => entry.action === "refund.requested")
    expect(entries).toEqual([
      expect.objectContaining({
        actor: "admin token",
        target: id,
        details: { refund_id: refundId, amount: 250, currency: "EUR", reason: "Goodwill" }
      })
    ])
  })

  it("dashboard: a live refund request goes to Stripe and settles the same way, audited with the user", async () => {
    const linked = await linkedApplication()
    const developer = await createUser(server, { roles: [[linked.application.id, "developer"]] })
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    const client = await DashboardClient.signIn(server, developer)
    const base = `/dashboard/apps/${linked.application.id}`
    await client.get(`${base}/payments/${id}`)
    const requested = await client.post(`${base}/payments/${id}/refunds`, { amount: "300", reason: "Damaged" })
    expect(requested.status, requested.html).toBe(303)
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 300 })
    const refundId = fetched.refunds[0]?.id
    expect(refundCalls(paymentIntentId).map((call) => call.idempotencyKey)).toEqual([refundId])
    expect((await eventsOf(server, id)).map((event) => event.event)).toEqual(["payment.partially_refunded"])
    const entries = (await auditOf(linked.application.id)).filter((entry) => entry.action === "refund.requested")
    expect(entries).toEqual([
      expect.objectContaining({
        actor: developer.email,
        target: id,
        details: { refund_id: refundId, amount: 300, currency: "EUR", reason: "Damaged" }
      })
    ])
  })

  it("Stripe refuses (4xx) or cancels the refund → failed, its amount released, no event", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    fake.inject({ method: "POST", path: "/v1/refunds" }, { kind: "status", status: 400 })
    // A refusal is answered 502 with the provider's reason in words (decisions §11, the same for both providers).
    const refused = await operatorRefund(id, { amount: 1000 })
    expect(refused.status, refused.text).toBe(502)
    expect(refused.body).toMatchObject({ error: { code: "provider_error", payment_id: id } })
    expect((refused.body as { error: { message: string } }).error.message).toContain("The provider said:")
    const afterRefusal = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(afterRefusal).toMatchObject({ status: "paid", refunded_amount: 0 })
    expect(afterRefusal.refunds.map((entry) => entry.status)).toEqual(["failed"])

    fake.nextRefundStatus("canceled")
    const canceled = await operatorRefund(id, { amount: 1000 })
    fake.nextRefundStatus("succeeded")
    expect(canceled.status, canceled.text).toBe(201)
    expect(canceled.body).toMatchObject({ status: "paid", refunded_amount: 0 })
    expect((canceled.body as WirePayment).refunds.map((entry) => entry.status)).toEqual(["failed", "failed"])
    expect(await eventsOf(server, id)).toHaveLength(0)

    // Released: the whole amount can be refunded again.
    const again = await operatorRefund(id, { amount: 1000 })
    expect(again.body).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    expect(refundCalls(paymentIntentId)).toHaveLength(3)
  })

  it("Stripe does not answer → pending; the background round retries with the same key and settles it, one refund at Stripe", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    // Stripe makes the refund but its answer is lost (a 500 on the way back).
    fake.inject({ method: "POST", path: "/v1/refunds" }, { kind: "status-after", status: 500 })
    const answered = await operatorRefund(id, { amount: 700 })
    expect(answered.status, answered.text).toBe(201)
    expect(answered.body).toMatchObject({ status: "paid", refunded_amount: 0 })
    const refundId = String((answered.body as WirePayment).refunds[0]?.id)
    expect((answered.body as WirePayment).refunds[0]?.status).toBe("pending")
    expect(await eventsOf(server, id)).toHaveLength(0)
    const waiting = await providerRefund(refundId)
    expect(waiting?.provider_refund_id).toBeNull()
    expect(waiting?.attempts).toBe(1)
    // §10: a pending refund is asked again 5 minutes after the last attempt during its first hour (measured from the
    // attempt, not the request: the call itself takes time, and crossing a second made this flaky).
    const due = new Date(String(waiting?.next_read_at)).getTime() - new Date(String(waiting?.last_read_at)).getTime()
    expect(due).toBe(5 * 60_000)
    // Pending reserves its amount: 300 are left.
    const over = await operatorRefund(id, { amount: 301 })
    expect(over.status).toBe(422)
    expect(errorCode(over)).toBe("refund_amount_exceeds_refundable")

    // Nothing is due yet: the round leaves it.
    expect(await settleDue()).toBe(0)
    const later = DateTime.addDuration(DateTime.makeUnsafe(Date.now()), Duration.minutes(6))
    const settled = await settleDue(later)
    expect(settled).toBe(1)
    const calls = refundCalls(paymentIntentId)
    expect(calls.map((call) => call.idempotencyKey)).toEqual([refundId, refundId])
    expect(calls[1]?.replayed).toBe(true)
    expect(refundsAtStripe(paymentIntentId)).toHaveLength(1)
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 700 })
    expect(fetched.refunds[0]?.status).toBe("succeeded")
    expect((await eventsOf(server, id)).map((event) => event.event)).toEqual(["payment.partially_refunded"])
    expect(await providerRefund(refundId)).toMatchObject({ next_read_at: null, attempts: 2 })
  })

  it("Stripe 5xx before running it → pending; the retry makes the refund once", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    fake.inject({ method: "POST", path: "/v1/refunds" }, { kind: "status", status: 503 })
    const answered = await operatorRefund(id, {})
    expect((answered.body as WirePayment).refunds[0]?.status).toBe("pending")
    expect(refundsAtStripe(paymentIntentId)).toHaveLength(0)
    const later = DateTime.addDuration(DateTime.makeUnsafe(Date.now()), Duration.minutes(6))
    await settleDue(later)
    expect(refundsAtStripe(paymentIntentId)).toHaveLength(1)
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    expect((await eventsOf(server, id)).map((event) => event.event)).toEqual(["payment.refunded"])
  })

  it("a refund Stripe reports failed after it had succeeded: failed, refunded_amount and status recomputed, no event, a discrepancy", async () => {
    const linked = await linkedApplication()
    const { id } = await paidLivePayment(linked, 1000)
    const first = await operatorRefund(id, { amount: 400 })
    const second = await operatorRefund(id, { amount: 600 })
    expect(second.body).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    const refundId = String((first.body as WirePayment).refunds[0]?.id)
    const stored = await providerRefund(refundId)
    fake.failSucceededRefund(String(stored?.provider_refund_id))
    // What a `refund.failed` event's hint leads to: Kassa reads the refund from Stripe and applies it.
    await refresh(refundId)
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 600 })
    expect(fetched.refunds.map((entry) => [entry.amount, entry.status])).toEqual([
      [400, "failed"],
      [600, "succeeded"]
    ])
    expect((await eventsOf(server, id)).map((event) => event.event)).toEqual([
      "payment.partially_refunded",
      "payment.refunded"
    ])
    const found = await discrepancies(id)
    expect(found).toHaveLength(1)
    expect(found[0]).toMatchObject({ refund_id: refundId, kind: "refund_failed_after_success", resolved_at: null })
    // Read again: nothing changes twice.
    await refresh(refundId)
    expect(await discrepancies(id)).toHaveLength(1)
  })

  it("a refund made in Stripe's dashboard (charge.refunded's hint): recorded succeeded, reason \"refunded at provider\", with its event, once", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    const made = fake.refundInDashboard(paymentIntentId, 250)
    const hint = { linkId: linked.linkId, providerRefundId: String(made.id), paymentIntentId }
    await applyProviderRefund(hint)
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 250 })
    expect(fetched.refunds).toEqual([
      expect.objectContaining({ amount: 250, status: "succeeded", reason: "refunded at provider" })
    ])
    // The same event again (or refund.created after charge.refunded): nothing changes twice.
    await applyProviderRefund(hint)
    await applyProviderRefund({ ...hint, paymentIntentId: null })
    expect(((await fetchPayment(server, linked.liveKey, id)).body as WirePayment).refunds).toHaveLength(1)
    expect((await eventsOf(server, id)).map((event) => event.event)).toEqual(["payment.partially_refunded"])
    expect(await providerRefund(String(fetched.refunds[0]?.id))).toMatchObject({ provider_refund_id: made.id })
  })

  it("Stripe's event for Kassa's refund whose answer was lost settles it without calling create again", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    fake.inject({ method: "POST", path: "/v1/refunds" }, { kind: "status-after", status: 500 })
    const answered = await operatorRefund(id, { amount: 100 })
    expect((answered.body as WirePayment).refunds[0]?.status).toBe("pending")
    const created = refundsAtStripe(paymentIntentId).map((event) => (event.data as JsonObject).object as JsonObject)
    expect(created).toHaveLength(1)
    const providerRefundId = String(created[0]?.id)
    await applyProviderRefund({ linkId: linked.linkId, providerRefundId, paymentIntentId: null })
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched).toMatchObject({ status: "partially_refunded", refunded_amount: 100 })
    expect(refundCalls(paymentIntentId)).toHaveLength(1)
    expect(await providerRefund(String(fetched.refunds[0]?.id))).toMatchObject({
      provider_refund_id: providerRefundId,
      next_read_at: null
    })
  })

  it("an over-refund is refused before Stripe is called; nothing is reserved", async () => {
    const linked = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(linked, 1000)
    const over = await operatorRefund(id, { amount: 1001 })
    expect(over.status).toBe(422)
    expect(errorCode(over)).toBe("refund_amount_exceeds_refundable")
    expect(refundCalls(paymentIntentId)).toHaveLength(0)
    const fetched = (await fetchPayment(server, linked.liveKey, id)).body as WirePayment
    expect(fetched.refunds).toHaveLength(0)
    const bad = await operatorRefund(id, { amount: 12.5, reason: "x".repeat(256) })
    expect(bad.status).toBe(422)
    expect(errorCode(bad)).toBe("validation_failed")
    expect(refundCalls(paymentIntentId)).toHaveLength(0)
  })

  it("a test payment through the operator endpoint: 409 payment_not_refundable, nothing recorded", async () => {
    const { testKey } = await server.createApplication()
    const payment = await paidPayment(server, testKey)
    const answer = await operatorRefund(payment.id, { amount: 100 })
    expect(answer.status, answer.text).toBe(409)
    expect(errorCode(answer)).toBe("payment_not_refundable")
    expect(((await fetchPayment(server, testKey, payment.id)).body as WirePayment).refunds).toHaveLength(0)
  })

  it("unknown and malformed payment ids: 404; the admin token is required", async () => {
    expect((await operatorRefund(crypto.randomUUID(), {})).status).toBe(404)
    expect((await operatorRefund("not-a-uuid", {})).status).toBe(404)
    const linked = await linkedApplication()
    const { id } = await paidLivePayment(linked, 1000)
    const anonymous = await server.request(`/admin/api/v1/payments/${id}/refunds`, { method: "POST", body: {} })
    expect(anonymous.status).toBe(401)
    const withLiveKey = await server.request(`/admin/api/v1/payments/${id}/refunds`, {
      method: "POST",
      key: linked.liveKey,
      body: {}
    })
    expect(withLiveKey.status).toBe(401)
  })

  it("tenancy: a dashboard user of another application cannot refund the payment; nothing reaches Stripe", async () => {
    const owner = await linkedApplication()
    const other = await linkedApplication()
    const { id, paymentIntentId } = await paidLivePayment(owner, 1000)
    const developer = await createUser(server, { roles: [[other.application.id, "developer"]] })
    const client = await DashboardClient.signIn(server, developer)
    const base = `/dashboard/apps/${other.application.id}`
    // The page is there for the user's own application's payments: the other application's payment is not found.
    expect((await client.get(`${base}/payments`)).status).toBe(200)
    const answer = await client.post(`${base}/payments/${id}/refunds`, { amount: "100", reason: "" })
    expect(answer.status).toBe(404)
    expect(answer.html).not.toContain("No such path")
    expect(refundCalls(paymentIntentId)).toHaveLength(0)
    expect(((await fetchPayment(server, owner.liveKey, id)).body as WirePayment).refunds).toHaveLength(0)
    // The merchant API with the other application's live key does not see it either.
    expect((await fetchPayment(server, other.liveKey, id)).status).toBe(404)
  })
})
