/**
 * Live payments through Mollie (issue 21 §3–§7, decisions §11) over real HTTP, on both databases, with the stateful
 * fake Mollie behind `KASSA_MOLLIE_API_URL` (reached through Mollie's own SDK) and an application linked through the
 * operator API: create (the request Mollie gets), checkout and return, settlement from unsigned pings (unknown ids
 * read nothing, a flood is coalesced), refunds (Kassa's, the duplicate Mollie refuses, one made in Mollie's
 * dashboard), cancel and expiry when Mollie can and cannot cancel, "paid after cancel", chargebacks and
 * authorizations among the discrepancies.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ProviderReconciler } from "../src/live/ProviderReconciler.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeMollie, startFakeMollie } from "./support/FakeMollie.ts"
import { type MollieLinkedApplication, mollieLinkedApplication } from "./support/MollieLink.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import {
  createPayment,
  eventsOf,
  expireInDatabase,
  fetchPayment,
  query,
  storedStatus,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

describe.each(databases)("live payments through Mollie on %s", (database) => {
  let fake: FakeMollie
  let server: RunningServer
  beforeAll(async () => {
    fake = await startFakeMollie()
    // The flood of pings below comes from one address on 1,000 connections at once (Mollie's come from its range):
    // above the per-address cap a server keeps by default, so this server allows more.
    server = await startServer(
      database,
      { mollieApiUrl: fake.url, maxConnectionsPerAddress: 2000 },
      { passwordCost: testPasswordCost }
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const livePayment = async (shop: MollieLinkedApplication, body: Record<string, unknown> = {}) => {
    const created = await createPayment(server, shop.liveKey, {
      return_url: "https://shop.example/done",
      method: "card",
      ...body
    })
    expect(created.status, created.text).toBe(201)
    const payment = created.body as WirePayment
    const [row] = await query(
      server,
      (sql) => sql`SELECT checkout_id FROM provider_payments WHERE payment_id = ${payment.id}`
    )
    return { payment, molliePaymentId: String(row?.checkout_id) }
  }
  // Read from the database: polling the merchant API would meet its rate limit.
  const statusOf = async (_shop: MollieLinkedApplication, id: string) => String(await storedStatus(server, id))
  const refundedAmount = async (id: string) =>
    Number(
      (await query(server, (sql) => sql`SELECT refunded_amount FROM payments WHERE id = ${id}`))[0]?.refunded_amount
    )
  const eventNames = async (id: string) => (await eventsOf(server, id)).map((event) => event.event)
  const ping = (shop: MollieLinkedApplication, id: string) =>
    fetch(`${server.baseUrl}/provider-webhooks/mollie/${shop.linkId}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ id }).toString()
    })
  const discrepancies = async (paymentId: string) =>
    (
      await query(
        server,
        (sql) => sql`SELECT kind, message FROM provider_discrepancies WHERE payment_id = ${paymentId} ORDER BY id`
      )
    ).map((row) => String(row.kind))

  it("a live create sends Mollie section 11's payment; the checkout sends the customer there; paid with the payer", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const { payment, molliePaymentId } = await livePayment(shop, {
      amount: 1050,
      currency: "EUR",
      method: "card",
      locale: "nl-NL",
      description: ""
    })
    expect(payment.status).toBe("pending")
    const create = fake.requests.find(
      (r) => r.endpoint === "payments.create" && r.status === 201 && JSON.stringify(r.body).includes(payment.id)
    )
    expect(create?.body).toMatchObject({
      amount: { currency: "EUR", value: "10.50" },
      // An empty description is no name: the order reference stands in (issue 21 §10).
      description: payment.order_reference,
      redirectUrl: `${server.baseUrl}/checkout/${payment.id}/return`,
      cancelUrl: `${server.baseUrl}/checkout/${payment.id}/return`,
      webhookUrl: `${server.baseUrl}/provider-webhooks/mollie/${shop.linkId}`,
      locale: "nl_NL",
      method: "creditcard",
      metadata: { kassa_payment_id: payment.id }
    })
    expect(create?.idempotencyKey).toMatch(new RegExp(`${payment.id}$`))
    expect(JSON.stringify(create?.body)).not.toMatch(/testmode|profileId/)

    const visit = await fetch(String(payment.checkout_url), {
      redirect: "manual",
      headers: { "user-agent": "TestBrowser/2.0" }
    })
    expect(visit.status).toBe(303)
    expect(visit.headers.get("location")).toBe(`${fake.url}/checkout/test-mode/${molliePaymentId}`)

    fake.setStatus(molliePaymentId, "paid", { name: "Ada Lovelace" })
    await eventually(async () => (await statusOf(shop, payment.id)) === "paid", "the payment to be paid")
    const paid = (await fetchPayment(server, shop.liveKey, payment.id)).body as WirePayment
    expect(paid.payer).toMatchObject({ name: "Ada Lovelace", user_agent: "TestBrowser/2.0" })
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])

    // Operators see which provider it went through, with Mollie's id, status and expiry (issue 21 §7).
    const owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const page = await (await DashboardClient.signIn(server, owner)).get(
      `/dashboard/apps/${shop.application.id}/payments/${payment.id}`
    )
    expect(page.html).toContain("At Mollie")
    expect(page.html).toContain(`<code>${molliePaymentId}</code>`)
    expect(page.html).toContain("<dt>Status at Mollie</dt><dd><code>paid</code></dd>")
    expect(page.html).toMatch(/<dt>Checkout expires<\/dt><dd>20[0-9-]+ [0-9:]+ UTC<\/dd>/)
  })

  it("an unknown id gets 200 and no call to Mollie; 1,000 pings in a second for one payment make a handful of reads", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const before = fake.calls("payments.get")
    const unknown = await ping(shop, "tr_unknown12345")
    expect(unknown.status).toBe(200)
    expect(fake.calls("payments.get")).toBe(before)

    const { payment, molliePaymentId } = await livePayment(shop)
    // Mollie's own ping is lost: only the flood below tells Kassa.
    fake.pingFault({ drop: true, count: 1 })
    fake.setStatus(molliePaymentId, "paid", { name: "Flood" })
    const reads = fake.calls("payments.get")
    const answers = await Promise.all(Array.from({ length: 1000 }, () => ping(shop, molliePaymentId)))
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200]))
    expect(fake.calls("payments.get") - reads).toBeLessThanOrEqual(4)
    expect(await statusOf(shop, payment.id)).toBe("paid")
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
  })

  it("refunds: Kassa's settle on the ping; Mollie's duplicate within the hour is 502 in words; a dashboard refund is recorded", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const { payment, molliePaymentId } = await livePayment(shop, { amount: 5000 })
    fake.setStatus(molliePaymentId, "paid", { name: "Refund Me" })
    await eventually(async () => (await statusOf(shop, payment.id)) === "paid", "paid")

    fake.nextRefundStatus("pending")
    const first = await operatorRequest(server, `/payments/${payment.id}/refunds`, {
      method: "POST",
      body: { amount: 1000 }
    })
    expect(first.status, first.text).toBe(201)
    const refundCreate = fake.requests.filter((r) => r.endpoint === "refunds.create").at(-1)
    expect(refundCreate?.body).toMatchObject({ amount: { currency: "EUR", value: "10.00" } })
    const refund = (first.body as WirePayment).refunds[0]
    expect(refund?.status).toBe("pending")
    expect(refundCreate?.idempotencyKey).toBe(refund?.id)
    const mollieRefund = fake.payments().find((p) => p.id === molliePaymentId)
    expect(mollieRefund).toBeDefined()
    const [row] = await query(
      server,
      (sql) => sql`SELECT provider_refund_id FROM provider_refunds WHERE refund_id = ${String(refund?.id)}`
    )
    fake.settleRefund(String(row?.provider_refund_id), "refunded")
    await eventually(
      async () => (await statusOf(shop, payment.id)) === "partially_refunded",
      "the refund to be settled by the ping"
    )

    // The same amount again within the hour: Mollie refuses it as a duplicate (409).
    const duplicate = await operatorRequest(server, `/payments/${payment.id}/refunds`, {
      method: "POST",
      body: { amount: 1000 }
    })
    expect(duplicate.status, duplicate.text).toBe(502)
    const error = (duplicate.body as WireError).error
    expect(error.code).toBe("provider_error")
    expect(error.message).toMatch(/same amount/i)
    const afterDuplicate = (await fetchPayment(server, shop.liveKey, payment.id)).body as WirePayment
    expect(afterDuplicate.refunds.map((r) => r.status)).toEqual(["succeeded", "failed"])
    expect(afterDuplicate.refunded_amount).toBe(1000)

    // Refunded in Mollie's dashboard: recorded on the ping, with its event.
    fake.refundInDashboard(molliePaymentId, 500)
    await eventually(async () => (await refundedAmount(payment.id)) === 1500, "the dashboard refund to be recorded")
    const atMollie = ((await fetchPayment(server, shop.liveKey, payment.id)).body as WirePayment).refunds.find(
      (r) => r.reason === "refunded at provider"
    )
    expect(atMollie).toMatchObject({ amount: 500, status: "succeeded" })
    expect(await eventNames(payment.id)).toEqual([
      "payment.paid",
      "payment.partially_refunded",
      "payment.partially_refunded"
    ])
  })

  it("the dashboard shows Mollie's refusal of a duplicate refund in words, with the failed refund", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const { payment, molliePaymentId } = await livePayment(shop, { amount: 3000 })
    fake.setStatus(molliePaymentId, "paid", { name: "Twice" })
    await eventually(async () => (await statusOf(shop, payment.id)) === "paid", "paid")
    const owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, owner)
    const page = `/dashboard/apps/${shop.application.id}/payments/${payment.id}`
    await client.get(page)
    const first = await client.post(`${page}/refunds`, { amount: "700", reason: "" })
    expect(first.status, first.html).toBe(303)
    await client.get(page)
    const second = await client.post(`${page}/refunds`, { amount: "700", reason: "" })
    expect(second.status).toBe(502)
    expect(second.html).toMatch(/same amount/i)
    expect(second.html).toContain("recorded as failed")
  })

  it("cancel Mollie allows (bank transfer): canceled there, cancelled here with its event", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const { payment, molliePaymentId } = await livePayment(shop, { method: "banktransfer" })
    const cancelled = await server.request(`/api/v1/payments/${payment.id}/cancel`, {
      method: "POST",
      key: shop.liveKey
    })
    expect(cancelled.status, cancelled.text).toBe(200)
    expect((cancelled.body as WirePayment).status).toBe("cancelled")
    expect(fake.payment(molliePaymentId).status).toBe("canceled")
    expect(fake.calls("payments.cancel")).toBeGreaterThan(0)
    expect(await eventNames(payment.id)).toEqual(["payment.cancelled"])
  })

  it("cancel Mollie cannot carry out (an open card checkout) is honoured; a later payment there is 'paid after final'", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const { payment, molliePaymentId } = await livePayment(shop, { method: "card" })
    await fetch(String(payment.checkout_url), { redirect: "manual", headers: { "user-agent": "Browser" } })
    const cancels = fake.calls("payments.cancel")
    const cancelled = await server.request(`/api/v1/payments/${payment.id}/cancel`, {
      method: "POST",
      key: shop.liveKey
    })
    expect(cancelled.status, cancelled.text).toBe(200)
    expect((cancelled.body as WirePayment).status).toBe("cancelled")
    // Mollie was asked nothing it would refuse: it said the payment is not cancelable.
    expect(fake.calls("payments.cancel")).toBe(cancels)
    expect(fake.payment(molliePaymentId).status).toBe("open")
    // The checkout no longer sends anyone to Mollie.
    const visit = await fetch(String(payment.checkout_url), { redirect: "manual" })
    expect(visit.headers.get("location") ?? "").not.toContain(fake.url)

    fake.setStatus(molliePaymentId, "paid", { name: "Too Late" })
    await eventually(async () => (await discrepancies(payment.id)).includes("paid_after_final"), "the discrepancy")
    expect(await statusOf(shop, payment.id)).toBe("cancelled")
    expect(await eventNames(payment.id)).toEqual(["payment.cancelled"])
    // Pinged again: listed once.
    await ping(shop, molliePaymentId)
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    await ping(shop, molliePaymentId)
    expect(await discrepancies(payment.id)).toEqual(["paid_after_final"])

    // An operator refunds it in full at Mollie with one click; the payment stays cancelled.
    const admin = await createUser(server, { operatorAdmin: true })
    const operator = await DashboardClient.signIn(server, admin)
    const page = await operator.get("/dashboard/operator/provider")
    expect(page.html).toContain("Refund in full at Mollie")
    const [row] = await query(
      server,
      (sql) => sql`SELECT id FROM provider_discrepancies WHERE payment_id = ${payment.id} AND kind = 'paid_after_final'`
    )
    const refunded = await operator.post("/dashboard/operator/provider/refund", { discrepancy_id: String(row?.id) })
    expect(refunded.location).toBe("/dashboard/operator/provider?notice=discrepancy_refunded")
    const refundCreate = fake.requests.filter((r) => r.endpoint === "refunds.create").at(-1)
    expect(refundCreate?.path).toBe(`/v2/payments/${molliePaymentId}/refunds`)
    expect(refundCreate?.body).toMatchObject({ amount: { currency: "EUR", value: "10.00" } })
    expect(await statusOf(shop, payment.id)).toBe("cancelled")
    // Mollie's ping about its refund records nothing on the cancelled payment: the refund is Kassa's own.
    await fake.settled()
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    await ping(shop, molliePaymentId)
    expect(await discrepancies(payment.id)).toEqual(["paid_after_final"])
    expect(await eventNames(payment.id)).toEqual(["payment.cancelled"])
  })

  it("expiry waits for Mollie's own expiresAt when Mollie cannot cancel; then the payment is expired once", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const { payment, molliePaymentId } = await livePayment(shop, { method: "ideal" })
    await expireInDatabase(server, payment.id)
    await server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))
    expect(await statusOf(shop, payment.id)).toBe("pending")
    expect(fake.payment(molliePaymentId).status).toBe("open")
    fake.advance(16 * 60)
    expect(fake.payment(molliePaymentId).status).toBe("expired")
    // Mollie's ping for the expiry settles it.
    await eventually(async () => (await statusOf(shop, payment.id)) === "expired", "the payment to expire")
    expect(await eventNames(payment.id)).toEqual(["payment.expired"])
  })

  it("a chargeback and an authorization awaiting capture are listed among the discrepancies; statuses stay", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    const charged = await livePayment(shop)
    fake.setStatus(charged.molliePaymentId, "paid", { name: "Bank" })
    await eventually(async () => (await statusOf(shop, charged.payment.id)) === "paid", "paid")
    fake.chargeBack(charged.molliePaymentId)
    await eventually(async () => (await discrepancies(charged.payment.id)).includes("charged_back"), "the chargeback")
    expect(await statusOf(shop, charged.payment.id)).toBe("paid")

    const held = await livePayment(shop, { method: "klarna" })
    fake.setStatus(held.molliePaymentId, "authorized")
    await eventually(
      async () => (await discrepancies(held.payment.id)).includes("awaiting_capture"),
      "the authorization"
    )
    expect(await statusOf(shop, held.payment.id)).toBe("pending")
  })

  it("Mollie refusing the create (a method not active on the profile) → 502 provider_error, the payment failed", async () => {
    const shop = await mollieLinkedApplication(server, fake)
    fake.deactivateMethod(shop.mollieKey, "ideal")
    const created = await createPayment(server, shop.liveKey, { method: "ideal" })
    expect(created.status, created.text).toBe(502)
    const error = (created.body as WireError).error as WireError["error"] & { payment_id?: string }
    expect(error.code).toBe("provider_error")
    expect(await eventNames(String(error.payment_id))).toEqual(["payment.failed"])
  })
})
