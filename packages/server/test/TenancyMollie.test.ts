/**
 * The live tenancy matrix of Tenancy.test.ts for Mollie links (issue 21 §8), on both databases, with the stateful fake
 * Mollie behind `KASSA_MOLLIE_API_URL` and applications linked through the operator API.
 *
 * What belongs to an application at Mollie — its link, its live payments there, their refunds and Mollie's pings for
 * them — is out of reach of another application's keys and users and of the same application's test key, and Mollie
 * hears nothing of their attempts. A ping is unsigned, so its link URL is all that places it: a ping naming one
 * application's payment, posted at another application's Mollie link (even one linked to the same Mollie profile), or
 * at the Stripe path, changes nothing and makes no call to Mollie (http/ProviderWebhookRoutes.ts reads only ids it
 * knows under that link's account and application). Operator calls on one application's link leave another's alone;
 * application A on Stripe and B on Mollie at the same time each settle and refund only their own payments, each at
 * its own provider.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeMollie, startFakeMollie } from "./support/FakeMollie.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import { type MollieLinkedApplication, mollieLinkedApplication } from "./support/MollieLink.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import {
  createPayment,
  errorCode,
  eventsOf,
  fetchPayment,
  query,
  refund,
  simulate,
  storedStatus,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

describe.each(databases)("Mollie live tenancy on %s", (database) => {
  let mollie: FakeMollie
  let stripe: FakeStripe
  let server: RunningServer
  let owner: MollieLinkedApplication
  let stranger: MollieLinkedApplication
  beforeAll(async () => {
    mollie = await startFakeMollie()
    stripe = await startFakeStripe({ apiVersion })
    server = await startServer(
      database,
      { mollieApiUrl: mollie.url, stripeApiUrl: stripe.url },
      { passwordCost: testPasswordCost }
    )
    owner = await mollieLinkedApplication(server, mollie)
    stranger = await mollieLinkedApplication(server, mollie)
  })
  afterAll(async () => {
    await server?.close()
    await mollie?.close()
    await stripe?.close()
  })

  /** The Mollie payment Kassa opened for a payment (its `tr_…` id, as stored). */
  const molliePaymentOf = async (paymentId: string) => {
    const [row] = await query(
      server,
      (sql) => sql`SELECT checkout_id FROM provider_payments WHERE payment_id = ${paymentId}`
    )
    return String(row?.checkout_id)
  }

  /** A live payment of `app` through the real path: created with its live key, a payment open at Mollie. */
  const pendingLive = async (app: { readonly liveKey: string }, body: Record<string, unknown> = {}) => {
    const created = await createPayment(server, app.liveKey, { method: "card", ...body })
    expect(created.status, created.text).toBe(201)
    const payment = created.body as WirePayment
    return { payment, molliePaymentId: await molliePaymentOf(payment.id) }
  }

  /** Paid at Mollie; Mollie's ping to the link settled it. */
  const paidLive = async (app: MollieLinkedApplication, body: Record<string, unknown> = {}) => {
    const { payment, molliePaymentId } = await pendingLive(app, body)
    mollie.setStatus(molliePaymentId, "paid", { name: "Ann Buyer" })
    await eventually(async () => (await storedStatus(server, payment.id)) === "paid", "the payment to be paid")
    const paid = await fetchPayment(server, app.liveKey, payment.id)
    return { payment: paid.body as WirePayment, molliePaymentId }
  }

  /** What must not move when a stranger tries: the payment as its owner sees it, its events, Mollie's log. */
  const snapshot = async (app: MollieLinkedApplication, paymentId: string) => ({
    payment: (await fetchPayment(server, app.liveKey, paymentId)).body,
    events: (await eventsOf(server, paymentId)).length,
    mollieCalls: mollie.requests.length
  })

  const ping = (provider: "mollie" | "stripe", linkId: string, id: string) =>
    fetch(`${server.baseUrl}/provider-webhooks/${provider}/${linkId}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "Mollie.com/Webhook" },
      body: new URLSearchParams({ id }).toString()
    })

  const activeLinkId = async (applicationId: string) => {
    const [link] = await query(
      server,
      (sql) => sql`SELECT id FROM provider_links WHERE application_id = ${applicationId} AND status = 'active'`
    )
    return String(link?.id)
  }

  const strangers = () => [
    ["another application's live key", stranger.liveKey],
    ["another application's test key", stranger.testKey],
    ["the same application's test key", owner.testKey]
  ]

  it("keys of another application or mode get 404 on a Mollie live payment, and Mollie hears nothing of them", async () => {
    // A bank transfer, which Mollie would let Kassa cancel: a cancel that got through would show at Mollie.
    const pending = await pendingLive(owner, { method: "banktransfer" })
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
      const withKey = await refund(server, key_, paid.payment.id, {}, { "idempotency-key": crypto.randomUUID() })
      expect([withKey.status, errorCode(withKey)], String(who)).toEqual([404, "not_found"])
      const listed = (await server.request("/api/v1/payments?limit=100", { key: key_ })).body as {
        data: Array<WirePayment>
      }
      expect(
        listed.data.map((entry) => entry.id),
        String(who)
      ).not.toContain(paid.payment.id)
    }
    // Nothing asked of Mollie (no cancel, no refund, no read), the payment still open there, both as they were.
    expect(mollie.requests.length).toBe(before[1]?.mollieCalls)
    expect(mollie.payment(pending.molliePaymentId).status).toBe("open")
    expect(mollie.payment(paid.molliePaymentId).amountRefunded).toMatchObject({ value: "0.00" })
    expect([await snapshot(owner, pending.payment.id), await snapshot(owner, paid.payment.id)]).toEqual(before)
  })

  it("another application's dashboard users neither see nor refund a Mollie live payment", async () => {
    const paid = await paidLive(owner)
    const before = await snapshot(owner, paid.payment.id)
    const user = await createUser(server, { roles: [[stranger.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, user)
    const own = `/dashboard/apps/${stranger.application.id}`
    const theirs = `/dashboard/apps/${owner.application.id}`
    const list = await client.get(`${own}/payments`)
    expect(list.status).toBe(200)
    expect(list.html).not.toContain(paid.payment.id)
    expect(list.html).not.toContain(paid.molliePaymentId)
    // Through its own application's path, the payment does not exist; the owner's application is closed to it.
    expect((await client.get(`${own}/payments/${paid.payment.id}`)).status).toBe(404)
    expect([403, 404]).toContain((await client.get(`${theirs}/payments/${paid.payment.id}`)).status)
    await client.get(`${own}/payments`)
    const viaOwn = await client.post(`${own}/payments/${paid.payment.id}/refunds`, { amount: "100", reason: "x" })
    expect(viaOwn.status, viaOwn.html).toBe(404)
    await client.get(`${own}/payments`)
    const viaTheirs = await client.post(`${theirs}/payments/${paid.payment.id}/refunds`, { amount: "100" })
    expect([403, 404]).toContain(viaTheirs.status)
    // Operators' pages (every application's discrepancies, the link's page) are closed to it too.
    expect([403, 404]).toContain((await client.get("/dashboard/operator/provider")).status)
    expect([403, 404]).toContain((await client.get(`/dashboard/operator/applications/${owner.application.id}`)).status)
    expect(await snapshot(owner, paid.payment.id)).toEqual(before)
    expect(
      mollie.requests.filter((r) => r.endpoint === "refunds.create" && r.path.includes(paid.molliePaymentId))
    ).toEqual([])
  })

  it("a ping for one application's payment at another application's Mollie link, or at the Stripe path, reads nothing and changes nothing", async () => {
    // A second application linked to the owner's own Mollie profile: same account, other application.
    const sibling = await server.createApplication({ methods: ["card"] })
    const linked = await operatorRequest(server, `/applications/${sibling.application.id}/provider-account`, {
      method: "PUT",
      body: { provider: "mollie", secret_key: owner.mollieKey }
    })
    expect(linked.status, linked.text).toBe(200)
    const siblingLinkId = await activeLinkId(sibling.application.id)
    expect(siblingLinkId).not.toBe(owner.linkId)

    const { payment, molliePaymentId } = await pendingLive(owner)
    // The customer pays; Mollie's ping to the owner's link is lost, so only the pings below can settle it.
    mollie.pingFault({ drop: true, count: 1 })
    mollie.setStatus(molliePaymentId, "paid", { name: "Ann Buyer" })
    await mollie.settled()
    const calls = mollie.requests.length
    for (const [where, answer] of [
      ["another application's link", await ping("mollie", stranger.linkId, molliePaymentId)],
      ["another application's link to the same profile", await ping("mollie", siblingLinkId, molliePaymentId)],
      ["the owner's link at the Stripe path", await ping("stripe", owner.linkId, molliePaymentId)]
    ] as const) {
      // Mollie's pings get 200 for ids the link does not know (it would retry anything else); the Stripe path knows
      // no Mollie link.
      expect(answer.status, where).toBe(where.includes("Stripe") ? 404 : 200)
      expect(mollie.requests.length, where).toBe(calls)
      expect(await storedStatus(server, payment.id), where).toBe("pending")
      expect(await eventsOf(server, payment.id), where).toEqual([])
    }
    // The sibling's and the stranger's applications learnt nothing either.
    for (const key of [sibling.liveKey, stranger.liveKey]) {
      const listed = (await server.request("/api/v1/payments?limit=100", { key })).body as { data: Array<WirePayment> }
      expect(listed.data.map((entry) => entry.id)).not.toContain(payment.id)
    }

    // The same ping at the owner's link is what settles it: one read of the payment at Mollie.
    const own = await ping("mollie", owner.linkId, molliePaymentId)
    expect(own.status).toBe(200)
    await eventually(async () => (await storedStatus(server, payment.id)) === "paid", "the owner's ping to settle it")
    expect(mollie.requests.slice(calls).map((r) => [r.endpoint, r.path])).toContainEqual([
      "payments.get",
      `/v2/payments/${molliePaymentId}`
    ])
    expect((await eventsOf(server, payment.id)).map((event) => event.event)).toEqual(["payment.paid"])
  })

  it("operator calls on one application's Mollie link leave another's alone", async () => {
    const first = await mollieLinkedApplication(server, mollie)
    const second = await mollieLinkedApplication(server, mollie)
    const linkOf = async (app: MollieLinkedApplication) =>
      operatorRequest(server, `/applications/${app.application.id}/provider-account`, {})
    const firstLink = (await linkOf(first)).body as { account_id: string; status: string; provider: string }
    expect(firstLink).toMatchObject({ provider: "mollie", account_id: first.profileId, status: "active" })
    expect(((await linkOf(second)).body as { account_id: string }).account_id).toBe(second.profileId)
    const paid = await paidLive(first, { amount: 2000 })

    // The second application re-linked to another Mollie profile, then to Stripe, then retired.
    for (const secret_key of [mollie.addProfile({ livemode: true }).key, stripe.addAccount({ livemode: true }).key]) {
      const provider = secret_key.startsWith("sk_") ? "stripe" : "mollie"
      const relinked = await operatorRequest(server, `/applications/${second.application.id}/provider-account`, {
        method: "PUT",
        body: { provider, secret_key }
      })
      expect(relinked.status, relinked.text).toBe(200)
    }
    const retired = await operatorRequest(server, `/applications/${second.application.id}/provider-account`, {
      method: "DELETE"
    })
    expect(retired.status, retired.text).toBe(200)
    expect((await linkOf(first)).body).toEqual(firstLink)
    expect(await activeLinkId(first.application.id)).toBe(first.linkId)

    // The first application still creates live payments at its own profile, and an operator's refund of its payment
    // goes to that profile (Mollie's payments belong to one profile: another key would get 404).
    const next = await pendingLive(first)
    expect(mollie.payment(next.molliePaymentId).profileId).toBe(first.profileId)
    const refunded = await operatorRequest(server, `/payments/${paid.payment.id}/refunds`, {
      method: "POST",
      body: { amount: 400 }
    })
    expect(refunded.status, refunded.text).toBe(201)
    expect((refunded.body as WirePayment).refunds.map((r) => [r.amount, r.status])).toEqual([[400, "pending"]])
    const asked = mollie.requests.filter((r) => r.endpoint === "refunds.create")
    expect(
      asked.filter((r) => r.path === `/v2/payments/${paid.molliePaymentId}/refunds`).map((r) => [r.body, r.status])
    ).toEqual([[expect.objectContaining({ amount: { currency: "EUR", value: "4.00" } }), 201]])
    expect(mollie.payment(paid.molliePaymentId).profileId).toBe(first.profileId)
  })

  it("application A on Stripe and B on Mollie at the same time: each provider hears only its own, each settles only its own", async () => {
    const onStripe = await linkedApplication(server, stripe)
    const onMollie = await mollieLinkedApplication(server, mollie, { methods: ["card"] })
    const stripeCalls = () => stripe.requests.length
    const mollieCalls = () => mollie.requests.length

    // Each create goes to its application's provider, and only there.
    let [stripeBefore, mollieBefore] = [stripeCalls(), mollieCalls()]
    const atStripe = await createPayment(server, onStripe.liveKey, { amount: 1100 })
    expect(atStripe.status, atStripe.text).toBe(201)
    const stripePayment = atStripe.body as WirePayment
    expect(mollieCalls()).toBe(mollieBefore)
    const session = stripe.sessions().find((candidate) => candidate.client_reference_id === stripePayment.id)
    expect(session).toBeDefined()
    stripeBefore = stripeCalls()
    const { payment: molliePayment, molliePaymentId } = await pendingLive(onMollie, { amount: 2200 })
    expect(stripeCalls()).toBe(stripeBefore)
    expect(mollie.payments().map((p) => (p.metadata as { kassa_payment_id?: string }).kassa_payment_id)).not.toContain(
      stripePayment.id
    )
    expect(stripe.sessions().map((s) => s.client_reference_id)).not.toContain(molliePayment.id)
    // Each checkout sends the customer to its own provider.
    const toStripe = await fetch(String(stripePayment.checkout_url), { redirect: "manual" })
    expect(toStripe.headers.get("location")).toBe(session?.url)
    const toMollie = await fetch(String(molliePayment.checkout_url), { redirect: "manual" })
    expect(toMollie.headers.get("location")).toBe(`${mollie.url}/checkout/test-mode/${molliePaymentId}`)

    // Stripe's customer pays: A's payment is paid by Stripe's event; B's stays pending and Mollie is asked nothing.
    mollieBefore = mollieCalls()
    stripe.pay(String(session?.id), { name: "Stripe Buyer" })
    await stripe.settled()
    expect(await storedStatus(server, stripePayment.id)).toBe("paid")
    expect(await storedStatus(server, molliePayment.id)).toBe("pending")
    expect(mollieCalls()).toBe(mollieBefore)

    // A ping naming B's Mollie payment at A's link (a Stripe link) is refused at either path and reads nothing.
    expect((await ping("mollie", onStripe.linkId, molliePaymentId)).status).toBe(404)
    expect((await ping("stripe", onStripe.linkId, molliePaymentId)).status).toBe(400)
    expect(mollieCalls()).toBe(mollieBefore)

    // Mollie's customer pays: B's payment is paid by Mollie's ping; Stripe is asked nothing.
    stripeBefore = stripeCalls()
    mollie.setStatus(molliePaymentId, "paid", { name: "Mollie Buyer" })
    await eventually(async () => (await storedStatus(server, molliePayment.id)) === "paid", "B's payment to be paid")
    expect(stripeCalls()).toBe(stripeBefore)
    expect((await eventsOf(server, stripePayment.id)).map((event) => event.event)).toEqual(["payment.paid"])
    expect((await eventsOf(server, molliePayment.id)).map((event) => event.event)).toEqual(["payment.paid"])

    // An operator's refunds go to each payment's own provider; each application lists only its own payment.
    const operatorRefund = (paymentId: string, amount: number) =>
      operatorRequest(server, `/payments/${paymentId}/refunds`, { method: "POST", body: { amount } })
    mollieBefore = mollieCalls()
    const stripeRefund = await operatorRefund(stripePayment.id, 100)
    expect(stripeRefund.status, stripeRefund.text).toBe(201)
    expect(mollieCalls()).toBe(mollieBefore)
    // Stripe's events for its refund are read back from Stripe: let them land before counting.
    await stripe.settled()
    stripeBefore = stripeCalls()
    const mollieRefund = await operatorRefund(molliePayment.id, 200)
    expect(mollieRefund.status, mollieRefund.text).toBe(201)
    await mollie.settled()
    expect(stripeCalls()).toBe(stripeBefore)
    expect(mollie.requests.filter((r) => r.endpoint === "refunds.create").at(-1)?.path).toBe(
      `/v2/payments/${molliePaymentId}/refunds`
    )
    const listed = async (key: string) =>
      ((await server.request("/api/v1/payments?limit=100", { key })).body as { data: Array<WirePayment> }).data.map(
        (entry) => entry.id
      )
    expect(await listed(onStripe.liveKey)).toEqual([stripePayment.id])
    expect(await listed(onMollie.liveKey)).toEqual([molliePayment.id])
  })
})
