/**
 * Live payments through Stripe (issue 12 §3, decisions §10) over real HTTP, on both databases, with the stateful fake
 * Stripe behind `KASSA_STRIPE_API_URL` and an application linked through the operator API: create (the session's
 * parameters, the derived Idempotency-Key, a replay that does not ask again), Stripe refusing, failing or not
 * answering (502 `provider_error`, `failed`, `payment.failed`), a live create without a link, and lazy expiry leaving
 * live payments to Stripe.
 */
import { verify } from "@kassa/webhook-verify"
import { Duration, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PaymentWrites } from "../src/ledger/PaymentWrites.ts"
import { ProviderReconciler } from "../src/live/ProviderReconciler.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import {
  createPayment,
  eventsOf,
  expireInDatabase,
  fetchPayment,
  paymentsWithReference,
  query,
  storedStatus,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

/**
 * The server's Stripe bound in this file: 4 s instead of production's 10 s (`StripeConnector.callTimeout`, held by
 * StripeConnector.test), so the tests that wait for a call Stripe never answers wait less; long enough for a retry to
 * meet the first call in flight on a loaded machine.
 */
const stripeBound = Duration.seconds(4)

describe.each(databases)("live payments on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  let receiver: WebhookReceiver
  let paths = 0
  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    receiver = await startReceiver()
    server = await startServer(database, { stripeApiUrl: fake.url }, { stripeCallTimeout: stripeBound })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
    await receiver.close()
  })

  const sessionCreates = (paymentId?: string) =>
    fake.requests.filter(
      (r) =>
        r.method === "POST" &&
        r.path === "/v1/checkout/sessions" &&
        (paymentId === undefined || r.params.client_reference_id === paymentId)
    )

  const checkoutRow = async (paymentId: string) =>
    (await query(server, (sql) => sql`SELECT * FROM provider_payments WHERE payment_id = ${paymentId}`))[0]

  it("a linked application's live key creates a pending payment and Stripe gets §10's session", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-create")
    const response = await createPayment(server, shop.liveKey, {
      amount: 2599,
      order_reference: reference,
      description: "Two mugs",
      customer: { email: "ada@example.org" },
      locale: "de-DE"
    })
    expect(response.status, response.text).toBe(201)
    const payment = response.body as WirePayment
    expect(payment).toMatchObject({ status: "pending", mode: "live", amount: 2599 })
    expect(payment.checkout_url).toBe(`${server.baseUrl}/checkout/${payment.id}`)
    const [create] = sessionCreates(payment.id)
    expect(create?.params).toMatchObject({
      mode: "payment",
      line_items: [
        { price_data: { currency: "eur", unit_amount: "2599", product_data: { name: "Two mugs" } }, quantity: "1" }
      ],
      client_reference_id: payment.id,
      metadata: { kassa_payment_id: payment.id },
      payment_intent_data: { metadata: { kassa_payment_id: payment.id } },
      success_url: `${server.baseUrl}/checkout/${payment.id}/return`,
      cancel_url: `${server.baseUrl}/checkout/${payment.id}/return`,
      customer_email: "ada@example.org",
      locale: "de"
    })
    // Without the merchant's key, Kassa's own is derived from the payment id.
    expect(create?.idempotencyKey).toBe(`kassa:${shop.application.id}:live:payment:${payment.id}`)
    // expires_at clamped into Stripe's window (30 min to 24 h): the default lifetime is inside it or clamped up.
    const expiresAt = Number(create?.params.expires_at)
    const createdAt = Date.parse(payment.created_at) / 1000
    expect(expiresAt - createdAt).toBeGreaterThanOrEqual(30 * 60)
    expect(expiresAt - createdAt).toBeLessThanOrEqual(24 * 60 * 60)
    const row = await checkoutRow(payment.id)
    const session = fake.sessions().find((s) => s.client_reference_id === payment.id)
    expect(row).toMatchObject({ state: "open", checkout_id: session?.id, checkout_url: session?.url })
  })

  it("an idempotent replay answers the stored payment and never asks Stripe again; Stripe's key is the payment's", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-idem")
    const key = `idem-${crypto.randomUUID()}`
    const first = await createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(first.status, first.text).toBe(201)
    const replay = await createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    const id = (first.body as WirePayment).id
    expect((replay.body as WirePayment).id).toBe(id)
    expect(sessionCreates(id)).toHaveLength(1)
    // Derived from the payment the merchant's key made, never from the merchant's key itself: a retry after a crash
    // finds that payment and sends the same request under the same key (docs/decisions.md, "Live create").
    expect(sessionCreates(id)[0]?.idempotencyKey).toBe(`kassa:${shop.application.id}:live:payment:${id}`)
  })

  // Waits for the server's Stripe bound (`stripeBound`): 60 s keeps it far from its own bound on a slow machine.
  it("a retry while the first create waits for Stripe gets 409 in progress; then it replays the first's answer", {
    timeout: 60_000
  }, async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-in-flight")
    const key = `in-flight-${crypto.randomUUID()}`
    const before = sessionCreates().length
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang-after" })
    const first = createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    await eventually(() => sessionCreates().length > before, "Stripe to get the create")
    // The payment and the key's record are committed before Stripe hears of the payment (decisions §10), and the
    // Stripe call runs outside the key's transaction: the retry sees the key held, not a free one.
    const id = (await paymentsWithReference(server, reference))[0]?.id
    expect(await storedStatus(server, String(id))).toBe("pending")
    const during = await createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(during.status, during.text).toBe(409)
    expect((during.body as WireError).error.code).toBe("idempotency_request_in_progress")
    expect(during.headers.get("retry-after")).toBe("1")
    const answered = await first
    expect(answered.status, answered.text).toBe(502)
    expect((answered.body as WireError).error).toMatchObject({ code: "provider_error", payment_id: id })
    const after = await createPayment(server, shop.liveKey, { order_reference: reference }, { "idempotency-key": key })
    expect(after.headers.get("idempotent-replayed")).toBe("true")
    expect(after.text).toBe(answered.text)
    expect(await paymentsWithReference(server, reference)).toEqual([{ id, status: "failed" }])
  })

  it("an event that overtakes the create's answer gets 409 payment_busy, and applies when Stripe sends it again", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-overtaken")
    const before = fake.sessions().length
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "delay-after", ms: 1500 })
    const created = createPayment(server, shop.liveKey, { order_reference: reference })
    await eventually(() => fake.sessions().length > before, "Stripe to make the session")
    const session = fake.sessions().at(-1)
    fake.pay(String(session?.id), { name: "Grace Hopper" })
    await fake.settled()
    const event = fake.events.find(
      (e) =>
        e.type === "checkout.session.completed" && (e.data as { object: { id: unknown } }).object.id === session?.id
    )
    const sent = () => fake.deliveries.filter((delivery) => delivery.eventId === event?.id)
    expect(sent().map((delivery) => delivery.status)).toEqual([409])
    const answered = await created
    expect(answered.status, answered.text).toBe(201)
    const id = (answered.body as WirePayment).id
    expect(await storedStatus(server, id)).toBe("pending")
    await fake.resend(String(event?.id))
    expect(sent().map((delivery) => delivery.status)).toEqual([409, 200])
    expect(await storedStatus(server, id)).toBe("paid")
  })

  it("rule 5 comes first: a live create on a reference a live payment holds never reaches Stripe", async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("live-held")
    const first = await createPayment(server, shop.liveKey, { order_reference: reference })
    expect(first.status).toBe(201)
    const before = sessionCreates().length
    const second = await createPayment(server, shop.liveKey, { order_reference: reference })
    expect(second.status).toBe(409)
    expect((second.body as WireError).error).toMatchObject({
      code: "order_reference_already_paid",
      payment_id: (first.body as WirePayment).id
    })
    expect(sessionCreates()).toHaveLength(before)
  })

  const expectFailedCreate = async (liveKey: string, reference: string) => {
    const response = await createPayment(server, liveKey, { order_reference: reference })
    expect(response.status, response.text).toBe(502)
    const error = (response.body as WireError).error
    expect(error.code).toBe("provider_error")
    const paymentId = String(error.payment_id)
    expect(await paymentsWithReference(server, reference)).toEqual([{ id: paymentId, status: "failed" }])
    const events = await eventsOf(server, paymentId)
    expect(events.map((event) => [event.event, event.deliveries])).toEqual([["payment.failed", 1]])
    expect(JSON.parse(events[0]?.body ?? "{}").data).toMatchObject({ id: paymentId, status: "failed", mode: "live" })
    expect(await checkoutRow(paymentId)).toMatchObject({ state: "not_opened", checkout_id: null })
    return paymentId
  }

  for (const [what, fault] of [
    ["fails (500)", { kind: "status", status: 500 }],
    ["is rate limited (429)", { kind: "status", status: 429 }],
    ["refuses (400)", { kind: "status", status: 400 }]
  ] as const) {
    it(`Stripe ${what} at create: 502 provider_error with payment_id, the payment failed with payment.failed`, async () => {
      const shop = await linkedApplication(server, fake)
      fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, fault)
      await expectFailedCreate(shop.liveKey, uniqueReference("live-fault"))
    })
  }

  // Waits for the server's Stripe bound (`stripeBound`): 60 s keeps it far from its own bound on a slow machine.
  it("Stripe does not answer within the bound at create: 502, failed, payment.failed", {
    timeout: 60_000
  }, async () => {
    const shop = await linkedApplication(server, fake)
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang" })
    await expectFailedCreate(shop.liveKey, uniqueReference("live-timeout"))
  })

  it("a live create without a link is refused as before: 502 provider_error, stored failed, Stripe never asked", async () => {
    const { liveKey, application } = await server.createApplication()
    const before = sessionCreates().length
    const reference = uniqueReference("live-unlinked")
    const response = await createPayment(server, liveKey, { order_reference: reference })
    expect(response.status).toBe(502)
    expect((response.body as WireError).error.code).toBe("provider_error")
    expect(await paymentsWithReference(server, reference)).toEqual([
      { id: String((response.body as WireError).error.payment_id), status: "failed" }
    ])
    expect(sessionCreates()).toHaveLength(before)
    // Linked afterwards: the next create opens at Stripe.
    const account = fake.addAccount({ livemode: true })
    const linked = await server.request(`/admin/api/v1/applications/${application.id}/provider-account`, {
      method: "PUT",
      key: server.adminToken,
      body: { provider: "stripe", secret_key: account.key }
    })
    expect(linked.status).toBe(200)
    const opened = await createPayment(server, liveKey, { order_reference: uniqueReference("live-linked-later") })
    expect(opened.status).toBe(201)
    expect(sessionCreates()).toHaveLength(before + 1)
  })

  it("a relink or a retire, even by another process, holds from the next live create (the cached link is checked by the insert)", async () => {
    const shop = await linkedApplication(server, fake)
    const first = await createPayment(server, shop.liveKey, { order_reference: uniqueReference("live-link-a") })
    expect(first.status).toBe(201)
    expect(await checkoutRow((first.body as WirePayment).id)).toMatchObject({ link_id: shop.linkId })
    // Relinked through the operator API: the next create opens its checkout with the new link.
    const account = fake.addAccount({ livemode: true })
    const relinked = await server.request(`/admin/api/v1/applications/${shop.application.id}/provider-account`, {
      method: "PUT",
      key: server.adminToken,
      body: { provider: "stripe", secret_key: account.key }
    })
    expect(relinked.status).toBe(200)
    const newLinkId = String(
      fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/webhook_endpoints").at(-1)?.params.url
    )
      .split("/")
      .at(-1)
    expect(newLinkId).not.toBe(shop.linkId)
    const second = await createPayment(server, shop.liveKey, { order_reference: uniqueReference("live-link-b") })
    expect(second.status).toBe(201)
    expect(await checkoutRow((second.body as WirePayment).id)).toMatchObject({ link_id: newLinkId, state: "open" })
    // Retired behind this process's back (as another server process would): the next create is refused, unasked.
    await query(
      server,
      (sql) => sql`UPDATE provider_links SET status = 'retired', retired_at = now() WHERE id = ${String(newLinkId)}`
    )
    const before = sessionCreates().length
    const reference = uniqueReference("live-link-retired")
    const third = await createPayment(server, shop.liveKey, { order_reference: reference })
    expect(third.status).toBe(502)
    expect((third.body as WireError).error.code).toBe("provider_error")
    expect(await paymentsWithReference(server, reference)).toEqual([
      { id: String((third.body as WireError).error.payment_id), status: "failed" }
    ])
    expect(sessionCreates()).toHaveLength(before)
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

  const eventNames = async (id: string) => (await eventsOf(server, id)).map((event) => event.event)

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

  const reconcile = () => server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))

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

  it("a create Stripe made but did not answer within the bound: failed at once, and its session is expired in the background", {
    timeout: 30_000
  }, async () => {
    const shop = await linkedApplication(server, fake)
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang-after" })
    const paymentId = await expectFailedCreate(shop.liveKey, uniqueReference("live-made-not-answered"))
    // Stripe did make the session: it is open and payable until Kassa cleans it up.
    const made = fake.sessions().find((session) => session.client_reference_id === paymentId)
    expect(made?.status).toBe("open")
    const row = await checkoutRow(paymentId)
    expect(new Date(String(row?.next_read_at)).getTime() - new Date(String(row?.last_read_at)).getTime()).toBe(60_000)
    await query(
      server,
      (sql) =>
        sql`UPDATE provider_payments SET next_read_at = now() - interval '1 second' WHERE payment_id = ${paymentId}`
    )
    await reconcile()
    await eventually(() => fake.session(String(made?.id)).status === "expired", "the session to be expired")
    // The same request under the same key: Stripe answered the session it had made, not a second one.
    expect(fake.sessions().filter((session) => session.client_reference_id === paymentId)).toHaveLength(1)
    await eventually(async () => (await checkoutRow(paymentId))?.next_read_at === null, "the clean-up to be done")
    expect(await storedStatus(server, paymentId)).toBe("failed")
    expect(await eventNames(paymentId)).toEqual(["payment.failed"])
  })
})
