/**
 * Every payment belongs to one application and one mode: another application's key, and the same application's
 * key of the other mode, get 404 `not_found` on every endpoint, and the payment is unchanged afterwards.
 *
 * Live mode (issue 12) adds what belongs to an application at its provider: its provider link, its live payments'
 * checkouts, their refunds and the provider's events. Another application's keys, users and provider events never
 * see or change them, and Stripe hears nothing of their attempts; operator calls on one application's link leave the
 * others' alone. Two applications linked to the same Stripe account each receive every event of it and settle only
 * their own payments.
 */
import { Effect, Option, Redacted } from "effect"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ProviderLinkId } from "../src/providers/ProviderConnector.ts"
import { ProviderLinks } from "../src/providers/ProviderLinks.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { type FakeStripe, type JsonObject, startFakeStripe } from "./support/FakeStripe.ts"
import { type LinkedApplication, linkedApplication } from "./support/LiveLink.ts"
import {
  createPayment,
  errorCode,
  eventsOf,
  fetchPayment,
  paidPayment,
  pendingPayment,
  refund,
  simulate,
  storedStatus,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

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

describe.each(databases)("live tenancy on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  let owner: LinkedApplication
  let stranger: LinkedApplication
  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url }, { passwordCost: testPasswordCost })
    owner = await linkedApplication(server, fake)
    stranger = await linkedApplication(server, fake)
  })
  afterAll(async () => {
    await server?.close()
    await fake?.close()
  })

  const sessionOf = (paymentId: string) => {
    const session = fake.sessions().find((candidate) => candidate.client_reference_id === paymentId)
    if (session === undefined) throw new Error(`no Checkout Session for ${paymentId}`)
    return session
  }

  /** A live payment of `app` through the real path: created with its live key, a Checkout Session open at Stripe. */
  const pendingLive = async (app: LinkedApplication, amount = 1000) => {
    const created = await createPayment(server, app.liveKey, { amount })
    expect(created.status, created.text).toBe(201)
    const payment = created.body as WirePayment
    return { payment, sessionId: String(sessionOf(payment.id).id) }
  }

  /** Paid on Stripe's page; Stripe's event settled it at the link's endpoint. */
  const paidLive = async (app: LinkedApplication, amount = 1000) => {
    const { payment, sessionId } = await pendingLive(app, amount)
    fake.pay(sessionId, { name: "Ann Buyer" })
    await fake.settled()
    const paid = await fetchPayment(server, app.liveKey, payment.id)
    expect(paid.body).toMatchObject({ status: "paid" })
    return {
      payment: paid.body as WirePayment,
      sessionId,
      paymentIntentId: String(fake.session(sessionId).payment_intent)
    }
  }

  /** What must not move when a stranger tries: the payment as its owner sees it, its events, Stripe's log. */
  const snapshot = async (app: LinkedApplication, paymentId: string) => ({
    payment: (await fetchPayment(server, app.liveKey, paymentId)).body,
    events: (await eventsOf(server, paymentId)).length,
    stripeCalls: fake.requests.length
  })

  const endpointSecret = (linkId: string) =>
    server.run(
      Effect.gen(function* () {
        const links = yield* ProviderLinks
        const link = Option.getOrThrow(yield* links.find(ProviderLinkId.make(linkId)))
        return Redacted.value(yield* links.access(link).endpointSecret)
      })
    )

  /** Posts `event` to a link's provider-webhook URL, signed with Stripe's scheme under `secret`. */
  const postEvent = async (linkId: string, event: JsonObject, secret: string) => {
    const payload = JSON.stringify(event)
    return fetch(`${server.baseUrl}/provider-webhooks/stripe/${linkId}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "stripe-signature": Stripe.webhooks.generateTestHeaderString({ payload, secret })
      },
      body: payload
    })
  }

  const strangers = () => [
    ["another application's live key", stranger.liveKey],
    ["another application's test key", stranger.testKey],
    ["the same application's test key", owner.testKey]
  ]

  it("keys of another application or mode get 404 on a live payment, and Stripe hears nothing of them", async () => {
    const pending = await pendingLive(owner)
    const paid = await paidLive(owner)
    const before = [await snapshot(owner, pending.payment.id), await snapshot(owner, paid.payment.id)]
    for (const [who, key] of strangers()) {
      const key_ = String(key)
      for (const id of [pending.payment.id, paid.payment.id]) {
        expect((await fetchPayment(server, key_, id)).status, String(who)).toBe(404)
        expect((await simulate(server, key_, id, "paid")).status, String(who)).toBe(404)
      }
      const cancelled = await server.request(`/api/v1/payments/${pending.payment.id}/cancel`, {
        method: "POST",
        key: key_
      })
      expect([cancelled.status, errorCode(cancelled)], String(who)).toEqual([404, "not_found"])
      const refunded = await refund(server, key_, paid.payment.id, { amount: 100 })
      expect([refunded.status, errorCode(refunded)], String(who)).toEqual([404, "not_found"])
      const listed = (await server.request("/api/v1/payments?limit=100", { key: key_ })).body as {
        data: Array<WirePayment>
      }
      expect(
        listed.data.map((entry) => entry.id),
        String(who)
      ).not.toContain(paid.payment.id)
    }
    // Nothing asked of Stripe (no expire, no refund), the session still open, both payments as they were.
    expect(fake.requests.length).toBe(before[1]?.stripeCalls)
    expect(fake.session(pending.sessionId).status).toBe("open")
    expect([await snapshot(owner, pending.payment.id), await snapshot(owner, paid.payment.id)]).toEqual(before)
  })

  it("another application's dashboard users neither see nor refund a live payment", async () => {
    const paid = await paidLive(owner)
    const before = await snapshot(owner, paid.payment.id)
    const user = await createUser(server, { roles: [[stranger.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, user)
    const own = `/dashboard/apps/${stranger.application.id}`
    const theirs = `/dashboard/apps/${owner.application.id}`
    const list = await client.get(`${own}/payments`)
    expect(list.status).toBe(200)
    expect(list.html).not.toContain(paid.payment.id)
    // Through its own application's path, the payment does not exist; the owner's application is closed to it.
    expect((await client.get(`${own}/payments/${paid.payment.id}`)).status).toBe(404)
    expect([403, 404]).toContain((await client.get(`${theirs}/payments/${paid.payment.id}`)).status)
    await client.get(`${own}/payments`)
    const viaOwn = await client.post(`${own}/payments/${paid.payment.id}/refunds`, { amount: "100", reason: "x" })
    expect(viaOwn.status, viaOwn.html).toBe(404)
    await client.get(`${own}/payments`)
    const viaTheirs = await client.post(`${theirs}/payments/${paid.payment.id}/refunds`, { amount: "100" })
    expect([403, 404]).toContain(viaTheirs.status)
    // Operators' pages (the provider's discrepancies of every application, the link's page) are closed to it too.
    expect([403, 404]).toContain((await client.get("/dashboard/operator/provider")).status)
    expect([403, 404]).toContain((await client.get(`/dashboard/operator/applications/${owner.application.id}`)).status)
    expect(await snapshot(owner, paid.payment.id)).toEqual(before)
  })

  it("a Stripe event signed for one link is refused (400) at another link's URL and changes nothing", async () => {
    const { payment, sessionId } = await pendingLive(owner)
    // The customer pays; Stripe's event to the owner's endpoint is lost, so only the posts below can settle it.
    fake.eventFault({ type: "checkout.session.completed", drop: true })
    fake.pay(sessionId, { name: "Ann Buyer" })
    const event = fake.events.filter((candidate) => candidate.type === "checkout.session.completed").at(-1)
    if (event === undefined) throw new Error("no checkout.session.completed")
    expect(((event.data as JsonObject).object as JsonObject).id).toBe(sessionId)
    const ownerSecret = await endpointSecret(owner.linkId)
    const strangerSecret = await endpointSecret(stranger.linkId)
    expect(ownerSecret).not.toBe(strangerSecret)

    const misdirected = await postEvent(stranger.linkId, event, ownerSecret)
    expect(misdirected.status).toBe(400)
    // Signed with the stranger's own secret, the owner's checkout is still none of its link's business.
    const foreign = await postEvent(stranger.linkId, event, strangerSecret)
    expect(foreign.status).toBe(200)
    expect(await storedStatus(server, payment.id)).toBe("pending")
    expect(await eventsOf(server, payment.id)).toEqual([])
    // The same event at its own link's URL, with its own signature, is what settles it.
    expect((await postEvent(owner.linkId, event, ownerSecret)).status).toBe(200)
    expect(await storedStatus(server, payment.id)).toBe("paid")
  })

  it("another account's session or refund naming a payment in its metadata changes nothing of that payment", async () => {
    const paid = await paidLive(owner)
    const before = await snapshot(owner, paid.payment.id)
    // The stranger's own Stripe account opens and pays a session that claims the owner's payment id.
    const response = await fetch(`${fake.url}/v1/checkout/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${stranger.stripeKey}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        mode: "payment",
        "line_items[0][price_data][currency]": "eur",
        "line_items[0][price_data][unit_amount]": "1000",
        "line_items[0][price_data][product_data][name]": "Spoof",
        "line_items[0][quantity]": "1",
        success_url: "https://kassa.example/return",
        client_reference_id: paid.payment.id,
        "metadata[kassa_payment_id]": paid.payment.id,
        "payment_intent_data[metadata][kassa_payment_id]": paid.payment.id
      }).toString()
    })
    expect(response.status).toBe(200)
    const spoof = (await response.json()) as JsonObject
    const completed = fake.pay(String(spoof.id), { name: "Mallory" })
    await fake.settled()
    // Then refunds it in Stripe's dashboard: a refund Kassa does not know, on a charge that names the payment.
    fake.refundInDashboard(String(completed.payment_intent))
    await fake.settled()
    const atStranger = fake.deliveries.filter(
      (delivery) => delivery.url.endsWith(`/provider-webhooks/stripe/${stranger.linkId}`) && delivery.status === 200
    )
    expect(atStranger.map((delivery) => delivery.type)).toEqual(
      expect.arrayContaining(["checkout.session.completed", "refund.created", "charge.refunded"])
    )
    expect(await snapshot(owner, paid.payment.id)).toEqual({ ...before, stripeCalls: fake.requests.length })
    expect((before.payment as WirePayment).refunds).toEqual([])
  })

  it("operator calls on one application's provider link leave another's alone", async () => {
    const first = await linkedApplication(server, fake)
    const second = await linkedApplication(server, fake)
    const linkOf = async (app: LinkedApplication) =>
      server.request(`/admin/api/v1/applications/${app.application.id}/provider-account`, { key: server.adminToken })
    const firstLink = (await linkOf(first)).body as { account_id: string; webhook_endpoint_id: string; status: string }
    expect(firstLink).toMatchObject({ account_id: first.accountId, status: "active" })
    expect(((await linkOf(second)).body as { account_id: string }).account_id).toBe(second.accountId)
    const paid = await paidLive(first)

    // Relinking and retiring the second application's account: the first keeps its link and its endpoint at Stripe.
    const relinked = await server.request(`/admin/api/v1/applications/${second.application.id}/provider-account`, {
      method: "PUT",
      key: server.adminToken,
      body: { provider: "stripe", secret_key: fake.addAccount({ livemode: true }).key }
    })
    expect(relinked.status, relinked.text).toBe(200)
    const retired = await server.request(`/admin/api/v1/applications/${second.application.id}/provider-account`, {
      method: "DELETE",
      key: server.adminToken
    })
    expect(retired.status, retired.text).toBe(200)
    expect((await linkOf(first)).body).toEqual(firstLink)
    const deletedEndpoints = fake.requests
      .filter((request) => request.method === "DELETE" && request.path.startsWith("/v1/webhook_endpoints/"))
      .map((request) => request.path.split("/").at(-1))
    expect(deletedEndpoints).not.toContain(firstLink.webhook_endpoint_id)

    // The first application still creates live payments, and an operator's refund of its payment goes to its own
    // account (Stripe's objects belong to one account: another key would get "No such payment_intent").
    expect((await createPayment(server, first.liveKey)).status).toBe(201)
    const refunded = await server.request(`/admin/api/v1/payments/${paid.payment.id}/refunds`, {
      method: "POST",
      key: server.adminToken,
      body: { amount: 400 }
    })
    expect(refunded.status, refunded.text).toBe(201)
    expect(refunded.body).toMatchObject({ status: "partially_refunded", refunded_amount: 400 })
    const asked = fake.requests.filter(
      (request) =>
        request.method === "POST" &&
        request.path === "/v1/refunds" &&
        request.params.payment_intent === paid.paymentIntentId
    )
    expect(asked.map((request) => [request.params.amount, request.status])).toEqual([["400", 200]])
  })

  it("two applications linked to one Stripe account each get its events and settle only their own payments", async () => {
    const account = fake.addAccount({ livemode: true })
    const link = async () => {
      const created = await server.createApplication()
      const linked = await server.request(`/admin/api/v1/applications/${created.application.id}/provider-account`, {
        method: "PUT",
        key: server.adminToken,
        body: { provider: "stripe", secret_key: account.key }
      })
      expect(linked.status, linked.text).toBe(200)
      const url = fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/webhook_endpoints").at(-1)
        ?.params.url
      return {
        ...created,
        linkId: String(url).split("/").at(-1) ?? "",
        stripeKey: account.key,
        accountId: account.accountId
      }
    }
    const left = await link()
    const right = await link()
    const paid = await paidLive(left)
    // Both endpoints got the event; the right's link answered without touching anything.
    const completedAt = fake.deliveries
      .filter((delivery) => delivery.type === "checkout.session.completed" && delivery.status === 200)
      .map((delivery) => delivery.url.split("/").at(-1))
    expect(completedAt).toEqual(expect.arrayContaining([left.linkId, right.linkId]))
    expect(await eventsOf(server, paid.payment.id)).toHaveLength(1)

    // A refund made in Stripe's dashboard reaches both links; it is recorded once, on the left's payment.
    fake.refundInDashboard(paid.paymentIntentId, 300)
    await fake.settled()
    const after = (await fetchPayment(server, left.liveKey, paid.payment.id)).body as WirePayment
    expect(after).toMatchObject({ status: "partially_refunded", refunded_amount: 300 })
    expect(after.refunds.map((entry) => [entry.amount, entry.status, entry.reason])).toEqual([
      [300, "succeeded", "refunded at provider"]
    ])
    expect((await eventsOf(server, paid.payment.id)).map((event) => event.event)).toEqual([
      "payment.paid",
      "payment.partially_refunded"
    ])
    const rightPayments = (await server.request("/api/v1/payments?limit=100", { key: right.liveKey })).body as {
      data: Array<WirePayment>
    }
    expect(rightPayments.data).toEqual([])
  })
})
