/**
 * Live payments through Stripe after the create (issue 12 §3, decisions §10), over real HTTP on both databases with
 * the stateful fake Stripe and an application linked through the operator API: paid on Stripe's page and settled
 * with the payer and a verified live webhook, the return page, duplicate, reordered, badly signed and other links'
 * events, the reconciler's read after a lost event, cancel and expiry asked of Stripe first, and lazy expiry leaving
 * live payments to Stripe. The create itself: LivePaymentsCreate.test.ts.
 */
import { verify } from "@kassa/webhook-verify"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PaymentWrites } from "../src/ledger/PaymentWrites.ts"
import { ProviderReconciler } from "../src/live/ProviderReconciler.ts"
import { eventually } from "./support/Eventually.ts"
import type { FakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import { checkoutRowOf, eventNamesOf, reconcileOn, startLiveServer } from "./support/LivePaymentsSupport.ts"
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
import { databases, type RunningServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

describe.each(databases)("live payments on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  let receiver: WebhookReceiver
  let paths = 0
  beforeAll(async () => {
    const live = await startLiveServer(database)
    fake = live.fake
    server = live.server
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
    await receiver.close()
  })

  const checkoutRow = (paymentId: string) => checkoutRowOf(server, paymentId)

  /** A linked shop whose merchant webhooks go to a path of its own, and a pending live payment of it. */
  const livePayment = async (body: Record<string, unknown> = {}) => {
    const path = `/live-${paths++}`
    const shop = await linkedApplication(server, fake, { webhook_url: receiver.url(path) })
    const created = await createPayment(server, shop.liveKey, { return_url: "https://shop.example/done", ...body })
    expect(created.status, created.text).toBe(201)
    const payment = created.body as WirePayment
    const session = fake.sessions().find((s) => s.client_reference_id === payment.id)
    return { shop, path, payment, sessionId: String(session?.id), sessionUrl: String(session?.url) }
  }

  const statusOf = async (liveKey: string, id: string) =>
    ((await fetchPayment(server, liveKey, id)).body as WirePayment).status

  const eventNames = (id: string) => eventNamesOf(server, id)

  it("checkout → Stripe's page (visit recorded) → paid there → settled paid with the payer → verified live webhook", async () => {
    const { shop, path, payment, sessionId, sessionUrl } = await livePayment()
    const visit = await fetch(String(payment.checkout_url), {
      redirect: "manual",
      headers: { "user-agent": "TestBrowser/1.0" }
    })
    expect(visit.status).toBe(303)
    expect(visit.headers.get("location")).toBe(sessionUrl)
    expect(await checkoutRow(payment.id)).toMatchObject({ visit_ip: "127.0.0.1", visit_user_agent: "TestBrowser/1.0" })

    fake.pay(sessionId, { name: "Ada Lovelace", email: "ada@example.org", phone: "+44 20 7946 0000" })
    await eventually(async () => (await statusOf(shop.liveKey, payment.id)) === "paid", "the payment to be paid")
    const paid = (await fetchPayment(server, shop.liveKey, payment.id)).body as WirePayment
    expect(paid.payer).toEqual({
      name: "Ada Lovelace",
      email: "ada@example.org",
      phone: "+44 20 7946 0000",
      ip: "127.0.0.1",
      user_agent: "TestBrowser/1.0"
    })
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
    // The payment intent is kept for refunds; a final payment is not read again.
    expect(await checkoutRow(payment.id)).toMatchObject({
      provider_payment_id: expect.stringMatching(/^pi_/),
      next_read_at: null
    })

    const [delivered] = await receiver.waitFor(1, path, 10_000)
    const signature = String(delivered?.headers["x-service-signature"])
    const event = (await verify(String(delivered?.body), signature, shop.webhookSecret)) as unknown as {
      event: string
      data: Record<string, unknown>
    }
    expect(event.event).toBe("payment.paid")
    expect(event.data).toMatchObject({ id: payment.id, status: "paid", mode: "live" })

    // The way back from Stripe shows the status and, now that it is final, the way to the shop.
    const back = await fetch(`${server.baseUrl}/checkout/${payment.id}/return`)
    const page = await back.text()
    expect(back.status).toBe(200)
    expect(page).toContain("https://shop.example/done")
    expect(page).toContain("paid")
  })

  it("the return page of a payment Stripe has not confirmed shows it pending, without the way back yet", async () => {
    const { payment } = await livePayment()
    const back = await fetch(`${server.baseUrl}/checkout/${payment.id}/return`)
    const page = await back.text()
    expect(back.status).toBe(200)
    expect(page).toContain("has not confirmed")
    expect(page).not.toContain("https://shop.example/done")
  })

  it("a duplicate event and reordered events change nothing twice", async () => {
    const { shop, payment, sessionId } = await livePayment({ method: "card" })
    fake.hold()
    fake.pay(sessionId, { name: "Grace Hopper" }, { delayed: true })
    fake.settleDelayed(sessionId, "succeeded")
    // The later event first: its re-read already says paid; the older one then finds nothing new.
    await fake.release("reversed")
    await fake.settled()
    expect(await statusOf(shop.liveKey, payment.id)).toBe("paid")
    const sent = fake.deliveries.filter((d) => d.url.endsWith(shop.linkId) && d.type.startsWith("checkout.session."))
    expect(sent.map((d) => d.status)).toEqual([200, 200])
    await fake.resend(String(sent[0]?.eventId))
    await fake.settled()
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
    const seen = await query(server, (sql) => sql`SELECT event_id FROM provider_events WHERE link_id = ${shop.linkId}`)
    expect(seen).toHaveLength(2)
  })

  it("a bad signature gets 400 and changes nothing", async () => {
    const { shop, payment, sessionId } = await livePayment()
    fake.hold()
    fake.pay(sessionId, { name: "Mallory" })
    const event = fake.events.at(-1)
    const body = JSON.stringify(event)
    const t = Math.floor(Date.now() / 1000)
    const response = await fetch(`${server.baseUrl}/provider-webhooks/stripe/${shop.linkId}`, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": `t=${t},v1=${"0".repeat(64)}` },
      body
    })
    expect(response.status).toBe(400)
    expect(await storedStatus(server, payment.id)).toBe("pending")
    expect(await eventNames(payment.id)).toEqual([])
    const seen = await query(server, (sql) => sql`SELECT event_id FROM provider_events WHERE link_id = ${shop.linkId}`)
    expect(seen).toEqual([])
    await fake.release()
    await fake.settled()
  })

  it("an event for another link's payment changes nothing there (one Stripe account linked to two applications)", async () => {
    const { shop, payment, sessionId } = await livePayment()
    // A second application linked to the same Stripe account: its endpoint gets every event of the account too.
    const other = await server.createApplication()
    const relinked = await server.request(`/admin/api/v1/applications/${other.application.id}/provider-account`, {
      method: "PUT",
      key: server.adminToken,
      body: { provider: "stripe", secret_key: shop.stripeKey }
    })
    expect(relinked.status).toBe(200)
    const otherUrl = fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/webhook_endpoints").at(-1)
      ?.params.url
    const otherLinkId = String(otherUrl).split("/").at(-1)
    fake.pay(sessionId, { name: "Ada" })
    await fake.settled()
    const toOther = fake.deliveries.filter((d) => d.url.endsWith(String(otherLinkId)))
    expect(toOther.map((d) => d.status)).toEqual([200])
    const seenByOther = await query(
      server,
      (sql) => sql`SELECT event_id FROM provider_events WHERE link_id = ${String(otherLinkId)}`
    )
    expect(seenByOther).toEqual([])
    // Its own link settled it, once.
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
  })

  it("a lost event delays the outcome only until the reconciler's read: 60 s after the visit, then every 5 minutes", async () => {
    const { shop, payment, sessionId } = await livePayment()
    const visit = await fetch(String(payment.checkout_url), { redirect: "manual" })
    expect(visit.status).toBe(303)
    const row = await checkoutRow(payment.id)
    expect(new Date(String(row?.next_read_at)).getTime() - new Date(String(row?.visited_at)).getTime()).toBe(60_000)
    // The first read, due (the visit moved two minutes back), before the payment is made: still pending, read again
    // 5 minutes later.
    await query(
      server,
      (sql) => sql`
        UPDATE provider_payments SET visited_at = visited_at - interval '2 minutes', next_read_at = now() - interval '1 second'
        WHERE payment_id = ${payment.id}
      `
    )
    await server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))
    // (Due a second ago: the database's clock and the server's need not agree to the millisecond.) The server's own
    // round may have claimed it first: then its read lands a moment later.
    await eventually(async () => (await checkoutRow(payment.id))?.last_read_at != null, "the first read")
    const again = await checkoutRow(payment.id)
    expect(new Date(String(again?.next_read_at)).getTime() - new Date(String(again?.last_read_at)).getTime()).toBe(
      300_000
    )
    // Paid, and Stripe's event is lost.
    fake.hold()
    fake.pay(sessionId, { name: "Ada" })
    await query(
      server,
      (sql) =>
        sql`UPDATE provider_payments SET next_read_at = now() - interval '1 second' WHERE payment_id = ${payment.id}`
    )
    await server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))
    await eventually(async () => (await statusOf(shop.liveKey, payment.id)) === "paid", "the read that finds it paid")
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
    const [settled] = await query(server, (sql) => sql`SELECT settled_via FROM payments WHERE id = ${payment.id}`)
    expect(settled?.settled_via).toBe("provider_read")
    expect(await checkoutRow(payment.id)).toMatchObject({ next_read_at: null })
    // The event, when it arrives after all, changes nothing.
    await fake.release()
    await fake.settled()
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
  })

  const cancelLive = (liveKey: string, id: string) =>
    server.request(`/api/v1/payments/${id}/cancel`, { method: "POST", key: liveKey })

  it("cancel asks Stripe first: the session is expired there, then the payment is cancelled with its event", async () => {
    const { shop, payment, sessionId } = await livePayment()
    const response = await cancelLive(shop.liveKey, payment.id)
    expect(response.status, response.text).toBe(200)
    expect((response.body as WirePayment).status).toBe("cancelled")
    expect(fake.session(sessionId).status).toBe("expired")
    // Stripe's checkout.session.expired event, arriving after, changes nothing (and is not an expiry).
    await fake.settled()
    expect(await eventNames(payment.id)).toEqual(["payment.cancelled"])
  })

  it("cancel of a payment already paid at Stripe (event not yet here): it becomes paid, cancel gets 409 with status paid", async () => {
    const { shop, payment, sessionId } = await livePayment()
    fake.hold()
    fake.pay(sessionId, { name: "Ada" })
    const response = await cancelLive(shop.liveKey, payment.id)
    expect(response.status, response.text).toBe(409)
    expect((response.body as WireError).error).toMatchObject({ code: "payment_not_cancellable", status: "paid" })
    expect(await statusOf(shop.liveKey, payment.id)).toBe("paid")
    await fake.release()
    await fake.settled()
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
  })

  it("cancel when Stripe does not answer: 502 provider_error and the payment unchanged", async () => {
    const { shop, payment } = await livePayment()
    fake.inject({ method: "POST", path: /\/expire$/ }, { kind: "status", status: 500 })
    const response = await cancelLive(shop.liveKey, payment.id)
    expect(response.status, response.text).toBe(502)
    expect((response.body as WireError).error.code).toBe("provider_error")
    expect(await storedStatus(server, payment.id)).toBe("pending")
    expect(await eventNames(payment.id)).toEqual([])
  })
  const reconcile = () => reconcileOn(server)

  it("expiry asks Stripe first: at expires_at the session is expired there, then the payment is expired once", async () => {
    const { shop, payment, sessionId } = await livePayment()
    await expireInDatabase(server, payment.id)
    await reconcile()
    await eventually(async () => (await storedStatus(server, payment.id)) === "expired", "the expiry")
    expect(fake.session(sessionId).status).toBe("expired")
    await fake.settled()
    expect(await eventNames(payment.id)).toEqual(["payment.expired"])
    expect(await statusOf(shop.liveKey, payment.id)).toBe("expired")
  })

  it("expiry of a payment already paid at Stripe (event lost): it becomes paid, not expired", async () => {
    const { payment, sessionId } = await livePayment()
    fake.hold()
    fake.pay(sessionId, { name: "Ada" })
    await expireInDatabase(server, payment.id)
    await reconcile()
    await eventually(async () => (await storedStatus(server, payment.id)) === "paid", "the payment found paid")
    await fake.release()
    await fake.settled()
    expect(await eventNames(payment.id)).toEqual(["payment.paid"])
  })

  it("expiry when Stripe does not answer: the payment stays pending and is tried again within a minute", async () => {
    const { payment } = await livePayment()
    fake.inject({ method: "POST", path: /\/expire$/ }, { kind: "status", status: 503 }, 1)
    await expireInDatabase(server, payment.id)
    await reconcile()
    await eventually(async () => (await checkoutRow(payment.id))?.last_read_at != null, "the unanswered expiry")
    expect(await storedStatus(server, payment.id)).toBe("pending")
    expect(await eventNames(payment.id)).toEqual([])
    const row = await checkoutRow(payment.id)
    const retryIn = new Date(String(row?.next_read_at)).getTime() - new Date(String(row?.last_read_at)).getTime()
    expect(retryIn).toBe(60_000)
    expect(row?.closing).toBe("expire")
  })

  it("lazy expiry and the sweeper leave a live payment past expires_at to Stripe", async () => {
    const shop = await linkedApplication(server, fake)
    const created = await createPayment(server, shop.liveKey)
    const id = (created.body as WirePayment).id
    // As if the reconciler's expiry at Stripe held it (leased for an hour), so its background round cannot expire it
    // at Stripe during this test: what is checked here is that nothing else expires it.
    await query(
      server,
      (sql) => sql`
        UPDATE provider_payments SET closing = 'expire', next_read_at = now() + interval '1 hour' WHERE payment_id = ${id}
      `
    )
    await expireInDatabase(server, id)
    const fetched = await fetchPayment(server, shop.liveKey, id)
    expect((fetched.body as WirePayment).status).toBe("pending")
    const listed = await server.request(`/api/v1/payments?limit=100`, { key: shop.liveKey })
    expect((listed.body as { data: Array<WirePayment> }).data.find((p) => p.id === id)?.status).toBe("pending")
    await server.run(Effect.flatMap(PaymentWrites, (writes) => writes.expireDue()))
    expect(await storedStatus(server, id)).toBe("pending")
    expect(await eventsOf(server, id)).toEqual([])
  })
})
