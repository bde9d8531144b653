/**
 * Issue 21 §10 through the real server on both databases, with the fake Stripe behind `KASSA_STRIPE_API_URL`: the
 * checkout visit that becomes the payer's IP and User-Agent is a browser's GET, never a HEAD (a link checker, a
 * scanner); a create with an empty description sends Stripe a product name; a create whose method Stripe silently
 * filtered out fails 502 `provider_error` and leaves no payable session.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import {
  createPayment,
  query,
  storedStatus,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("live checkout edges on %s", (database) => {
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

  const checkoutRow = async (paymentId: string) =>
    (await query(server, (sql) => sql`SELECT * FROM provider_payments WHERE payment_id = ${paymentId}`))[0]

  const createsOf = (paymentId: string) =>
    fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/checkout/sessions" && r.params.client_reference_id === paymentId
    )

  it("a HEAD of the checkout answers like the GET but records nothing; the browser's GET after it is the visit", async () => {
    const shop = await linkedApplication(server, fake)
    const response = await createPayment(server, shop.liveKey, { order_reference: uniqueReference("head") })
    expect(response.status, response.text).toBe(201)
    const payment = response.body as WirePayment
    const session = fake.sessions().find((s) => s.client_reference_id === payment.id)

    const head = await fetch(String(payment.checkout_url), {
      method: "HEAD",
      redirect: "manual",
      headers: { "user-agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)" }
    })
    expect(head.status).toBe(303)
    expect(head.headers.get("location")).toBe(session?.url)
    expect(await checkoutRow(payment.id)).toMatchObject({ visit_ip: null, visit_user_agent: null, visited_at: null })

    const get = await fetch(String(payment.checkout_url), {
      redirect: "manual",
      headers: { "user-agent": "PayerBrowser/2.0" }
    })
    expect(get.status).toBe(303)
    expect(await checkoutRow(payment.id)).toMatchObject({ visit_ip: "127.0.0.1", visit_user_agent: "PayerBrowser/2.0" })

    // A later HEAD changes nothing either.
    await fetch(String(payment.checkout_url), {
      method: "HEAD",
      redirect: "manual",
      headers: { "user-agent": "Scanner" }
    })
    expect(await checkoutRow(payment.id)).toMatchObject({ visit_user_agent: "PayerBrowser/2.0" })
  })

  it('a create with "description": "" opens, and Stripe gets the order reference as the product name', async () => {
    const shop = await linkedApplication(server, fake)
    const reference = uniqueReference("empty-description")
    const response = await createPayment(server, shop.liveKey, { order_reference: reference, description: "" })
    expect(response.status, response.text).toBe(201)
    const payment = response.body as WirePayment
    const [create] = createsOf(payment.id)
    expect(create?.params).toMatchObject({
      line_items: [{ price_data: { product_data: { name: reference } } }]
    })
    expect(create?.status).toBe(200)
  })

  it("iDEAL in USD: Stripe filters it out silently, so the create fails 502 provider_error and the session is expired", async () => {
    const shop = await linkedApplication(server, fake, { methods: ["card", "ideal"], currencies: ["EUR", "USD"] })
    const response = await createPayment(server, shop.liveKey, {
      order_reference: uniqueReference("ideal-usd"),
      method: "ideal",
      currency: "USD"
    })
    expect(response.status, response.text).toBe(502)
    const error = (response.body as WireError).error
    expect(error.code).toBe("provider_error")
    const paymentId = String(error.payment_id)
    expect(await storedStatus(server, paymentId)).toBe("failed")
    const session = fake.sessions().find((s) => s.client_reference_id === paymentId)
    expect(session).toMatchObject({ payment_method_types: [], status: "expired" })
  })
})
