/**
 * Live payments through Stripe, the create (issue 12 §3, decisions §10), over real HTTP on both databases with the
 * stateful fake Stripe and an application linked through the operator API: the session's parameters, the derived
 * Idempotency-Key, a replay that does not ask again, a retry while the first create waits, an event that overtakes
 * the answer, rule 5 before Stripe, Stripe refusing, failing or not answering (502 `provider_error`, `failed`,
 * `payment.failed`; a session made but unanswered is expired in the background), a live create without a link, and a
 * relink or retire holding from the next create. What follows the create: LivePaymentsOutcomes.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "./support/Eventually.ts"
import type { FakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import { checkoutRowOf, eventNamesOf, reconcileOn, startLiveServer } from "./support/LivePaymentsSupport.ts"
import {
  createPayment,
  eventsOf,
  paymentsWithReference,
  query,
  storedStatus,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer } from "./support/TestServer.ts"

describe.each(databases)("live payments on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  beforeAll(async () => {
    const live = await startLiveServer(database)
    fake = live.fake
    server = live.server
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const sessionCreates = (paymentId?: string) =>
    fake.requests.filter(
      (r) =>
        r.method === "POST" &&
        r.path === "/v1/checkout/sessions" &&
        (paymentId === undefined || r.params.client_reference_id === paymentId)
    )

  const checkoutRow = (paymentId: string) => checkoutRowOf(server, paymentId)

  const eventNames = (id: string) => eventNamesOf(server, id)

  const reconcile = () => reconcileOn(server)

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
