/**
 * Provider events against the attacks of issue 21 §10, over real HTTP on both databases with the fake Stripe behind
 * `KASSA_STRIPE_API_URL` (http/ProviderWebhookRoutes.ts):
 * - replays of an applied, validly signed event read nothing at Stripe (the event id is looked up first);
 * - a provider webhook over the body limit gets 413, as every other route;
 * - re-linking a new key of the same Stripe account does not orphan what the old link opened: a payment paid, or a
 *   refund made in Stripe's dashboard, after the re-link settles at once through the new link's endpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { type LinkedApplication, linkedApplication } from "./support/LiveLink.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { createPayment, eventsOf, fetchPayment, type WirePayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("provider events under attack on %s", (database) => {
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

  const livePayment = async (shop: LinkedApplication) => {
    const created = await createPayment(server, shop.liveKey, { return_url: "https://shop.example/done" })
    expect(created.status, created.text).toBe(201)
    const payment = created.body as WirePayment
    const session = fake.sessions().find((s) => s.client_reference_id === payment.id)
    return { payment, sessionId: String(session?.id) }
  }
  const statusOf = async (shop: LinkedApplication, id: string) =>
    ((await fetchPayment(server, shop.liveKey, id)).body as WirePayment).status
  const reads = (path: RegExp) => fake.requests.filter((r) => r.method === "GET" && path.test(r.path)).length

  it("500 replays of an applied event and 50 of a refund event read nothing at Stripe", async () => {
    const shop = await linkedApplication(server, fake)
    const { payment, sessionId } = await livePayment(shop)
    fake.pay(sessionId, { name: "Ada" })
    await fake.settled()
    expect(await statusOf(shop, payment.id)).toBe("paid")
    const completed = fake.deliveries.find(
      (d) => d.url.endsWith(shop.linkId) && d.type === "checkout.session.completed"
    )
    expect(completed?.status).toBe(200)
    const sessionReads = reads(/^\/v1\/checkout\/sessions\//)
    for (let round = 0; round < 50; round++) {
      await Promise.all(Array.from({ length: 10 }, () => fake.resend(String(completed?.eventId))))
    }
    await fake.settled()
    expect(reads(/^\/v1\/checkout\/sessions\//)).toBe(sessionReads)

    const refunded = await operatorRequest(server, `/payments/${payment.id}/refunds`, {
      method: "POST",
      body: { amount: 400 }
    })
    expect(refunded.status, refunded.text).toBe(201)
    await fake.settled()
    const refundEvent = fake.deliveries.find((d) => d.url.endsWith(shop.linkId) && d.type === "charge.refunded")
    expect(refundEvent?.status).toBe(200)
    const refundReads = reads(/^\/v1\/refunds/)
    for (let replay = 0; replay < 50; replay++) await fake.resend(String(refundEvent?.eventId))
    await fake.settled()
    expect(reads(/^\/v1\/refunds/)).toBe(refundReads)
    expect((await eventsOf(server, payment.id)).map((event) => event.event)).toEqual([
      "payment.paid",
      "payment.partially_refunded"
    ])
  })

  it("a provider webhook of 2 MiB gets 413, as every other route does", async () => {
    const shop = await linkedApplication(server, fake)
    const response = await fetch(`${server.baseUrl}/provider-webhooks/stripe/${shop.linkId}`, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": "t=1,v1=00" },
      body: JSON.stringify({ padding: "x".repeat(2 * 1024 * 1024) })
    })
    expect(response.status).toBe(413)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("http_error")
  })

  it("after a re-link with a new key of the same account, the old link's payments settle at once at the new endpoint", async () => {
    const shop = await linkedApplication(server, fake)
    const paid = await livePayment(shop)
    fake.pay(paid.sessionId, { name: "Ada" })
    await fake.settled()
    expect(await statusOf(shop, paid.payment.id)).toBe("paid")
    const open = await livePayment(shop)

    // The operator rolls the key at Stripe and links the new one: the old link is retired, its endpoint deleted.
    const relinked = await operatorRequest(server, `/applications/${shop.application.id}/provider-account`, {
      method: "PUT",
      body: { provider: "stripe", secret_key: fake.addKey(shop.accountId) }
    })
    expect(relinked.status, relinked.text).toBe(200)
    await eventually(
      () => fake.webhookEndpoints().every((e) => !String(e.url).endsWith(shop.linkId)),
      "the old endpoint's deletion"
    )
    const newLinkId = String(fake.webhookEndpoints().at(-1)?.url).split("/").at(-1)

    // The customer pays the checkout opened before the re-link: the event reaches only the new endpoint.
    fake.pay(open.sessionId, { name: "Grace" })
    await fake.settled()
    const completed = fake.deliveries.filter(
      (d) => d.type === "checkout.session.completed" && d.url.endsWith(String(newLinkId))
    )
    expect(completed.map((d) => d.status)).toEqual([200])
    expect(await statusOf(shop, open.payment.id)).toBe("paid")

    // A refund made in Stripe's dashboard for the payment the old link opened is recorded, with its event.
    const intent = fake.sessions().find((s) => s.id === paid.sessionId)?.payment_intent
    fake.refundInDashboard(String(intent), 300)
    await fake.settled()
    const refundedPayment = (await fetchPayment(server, shop.liveKey, paid.payment.id)).body as WirePayment
    expect(refundedPayment.refunded_amount).toBe(300)
    expect(refundedPayment.status).toBe("partially_refunded")
    expect((await eventsOf(server, paid.payment.id)).map((event) => event.event)).toEqual([
      "payment.paid",
      "payment.partially_refunded"
    ])
  })
})
