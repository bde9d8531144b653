/**
 * The shop in live mode, end to end in Chromium (issue 12 §6): the same shop code as in test mode, given a live key
 * of an application whose operator linked a Stripe account. Kassa runs in process with `KASSA_STRIPE_API_URL` at the
 * fake Stripe (the one fake the bar allows; Kassa reaches it only through the `stripe` SDK). The customer buys on the
 * shop's page, is sent through `checkout_url` to the fake's hosted page, pays there, comes back through Kassa's return
 * page to the order page, and the order turns paid only when Kassa's signed `payment.paid` reaches the shop's webhook
 * (verified by @kassa/webhook-verify inside the shop). Then a member of the shop asks for refunds in the dashboard,
 * in the browser too: Stripe confirms them and the shop learns `payment.partially_refunded`, then `payment.refunded`.
 *
 * The fake Stripe, the in-process server and the browser launcher are the server's test support, imported by
 * relative path like TestServer.ts in checkout.e2e.test.ts: they are test code of @kassa/server, not part of its
 * published surface (an exported "test-support" entry would ship a fake Stripe to every user of the package), and the
 * relative import resolves their own dependencies (playwright-core) from the server package, so the example gains no
 * dependency for them.
 */
import { Kassa } from "@kassa/client"
import { type KassaEvent, verify } from "@kassa/webhook-verify"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../../../packages/server/src/providers/StripeConnector.ts"
import { launch, screenshot } from "../../../packages/server/test/support/Browser.ts"
import { createUser, type DashboardUser } from "../../../packages/server/test/support/DashboardClient.ts"
import { type FakeStripe, startFakeStripe } from "../../../packages/server/test/support/FakeStripe.ts"
import { type LinkedApplication, linkedApplication } from "../../../packages/server/test/support/LiveLink.ts"
import { databases, type RunningServer, startServer } from "../../../packages/server/test/support/TestServer.ts"
import { createShop, type Shop } from "../src/shop.ts"
import { type Delivery, type ShopServer, startShopServer } from "./support/ShopServer.ts"

// playwright-core's types, named through the server's launcher: the example does not depend on playwright-core itself.
type Browser = Awaited<ReturnType<typeof launch>>
type BrowserContext = Awaited<ReturnType<Browser["newContext"]>>
type Page = Awaited<ReturnType<BrowserContext["newPage"]>>

const catalog = [{ id: "teapot", name: "Cast-iron teapot", amount: 1250 }]

let browser: Browser
beforeAll(async () => {
  browser = await launch()
}, 60_000)
afterAll(async () => {
  await browser?.close()
})

describe.each(databases)("live checkout end to end in Chromium on %s", (database) => {
  let fake: FakeStripe
  let kassa: RunningServer
  let shop: Shop
  let shopServer: ShopServer
  let shopUrl: string
  let linked: LinkedApplication
  let member: DashboardUser
  let context: BrowserContext
  let deliveries: Array<Delivery>

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    kassa = await startServer(database, { stripeApiUrl: fake.url })
    shopServer = await startShopServer(() => shop)
    shopUrl = shopServer.url
    deliveries = shopServer.deliveries
    // The operator links a live Stripe account through the operator API, as production does it.
    linked = await linkedApplication(kassa, fake, {
      name: "Tea shop",
      webhook_url: `${shopUrl}/webhooks/kassa`,
      return_url_host: "127.0.0.1"
    })
    // The shop is the test-mode shop, given the live key: nothing else changes for the merchant.
    shop = createShop({
      kassa: new Kassa({ apiKey: linked.liveKey, baseUrl: kassa.baseUrl }),
      webhookSecret: linked.webhookSecret,
      baseUrl: shopUrl,
      catalog
    })
    member = await createUser(kassa, { roles: [[linked.application.id, "developer"]] })
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    // Short waits, so a missing element fails with its locator rather than the test's timeout.
    context.setDefaultTimeout(10_000)
  })

  afterAll(async () => {
    await context?.close()
    await shopServer?.close()
    await kassa?.close()
    await fake?.close()
  })

  const statusOf = (page: Page) => page.locator("[data-status]").getAttribute("data-status")

  /** The order page refreshes itself every 3 s; reloading at once keeps the test short. */
  const orderStatusBecomes = async (page: Page, status: string) => {
    await expect
      .poll(
        async () => {
          await page.reload()
          return statusOf(page)
        },
        { timeout: 15_000, interval: 200 }
      )
      .toBe(status)
  }

  /** Events Kassa delivered to the shop, decoded after checking each signature as the shop does. */
  const deliveredEvents = () =>
    Promise.all(deliveries.map((delivery) => verify(delivery.body, delivery.signature, linked.webhookSecret)))

  let paymentId = ""
  let orderUrl = ""

  it("the customer pays on Stripe's page, returns to the shop, and the order is paid by the verified webhook", async () => {
    const page = await context.newPage()
    await page.goto(shopUrl)
    await page.getByRole("button", { name: "Buy" }).click()

    // The shop created a live payment and sent the customer to its checkout_url, which Kassa answered with a
    // redirect to the Checkout Session Stripe opened for it.
    await page.waitForURL((url: URL) => url.origin === fake.url && url.pathname.startsWith("/pay/cs_live_"))
    const [session] = fake.sessions()
    expect(session).toMatchObject({ livemode: true, amount_total: 1250, currency: "eur", status: "open" })
    paymentId = String(session?.client_reference_id)
    const payment = await kassa.request(`/api/v1/payments/${paymentId}`, { key: linked.liveKey })
    expect(payment.body).toMatchObject({
      mode: "live",
      status: "pending",
      amount: 1250,
      description: "Cast-iron teapot",
      checkout_url: `${kassa.baseUrl}/checkout/${paymentId}`
    })
    const orderId = String((payment.body as { order_reference: string }).order_reference)
    orderUrl = `${shopUrl}/orders/${orderId}`
    expect((payment.body as { return_url: string }).return_url).toBe(orderUrl)
    expect(await page.locator("#amount").textContent()).toBe("12.50 EUR")
    await screenshot(page, "live-01-stripe-checkout")

    await page.getByLabel("Name").fill("Ada Lovelace")
    await page.getByLabel("Email").fill("ada@example.com")
    await page.getByRole("button", { name: "Pay" }).click()

    // Stripe sends the customer to Kassa's return page; once Stripe's event has settled the payment it offers the
    // way back to the shop (until then it asks for a reload).
    await page.waitForURL(`${kassa.baseUrl}/checkout/${paymentId}/return`)
    await expect
      .poll(
        async () => {
          const back = await page.getByRole("link", { name: "Back to the shop" }).count()
          if (back === 0) await page.reload()
          return back
        },
        { timeout: 15_000, interval: 200 }
      )
      .toBe(1)
    await screenshot(page, "live-02-kassa-return")
    await page.getByRole("link", { name: "Back to the shop" }).click()
    await page.waitForURL(orderUrl)
    await orderStatusBecomes(page, "paid")
    await screenshot(page, "live-03-shop-order-paid")

    // What the shop applied came from Kassa's signed webhook, for a live payment, paid by the customer of the visit.
    const events = await deliveredEvents()
    expect(events.map((event) => event.event)).toEqual(["payment.paid"])
    const paid = events[0] as KassaEvent
    expect(paid.data).toMatchObject({ id: paymentId, mode: "live", status: "paid", amount: 1250 })
    expect(paid.data.payer).toMatchObject({ name: "Ada Lovelace", email: "ada@example.com" })
    expect(String(paid.data.payer?.user_agent)).toContain("Chrome")
    expect(paid.data.payer?.ip).toBe("127.0.0.1")
    expect(shop.order(orderId)?.events.map((event) => event.event)).toEqual(["payment.paid"])
    // Stripe's event reached Kassa at the link's endpoint and was accepted.
    const completed = fake.deliveries.filter((delivery) => delivery.type === "checkout.session.completed")
    expect(completed.map((delivery) => delivery.status)).toEqual([200])
    expect(completed[0]?.url).toBe(`${kassa.baseUrl}/provider-webhooks/stripe/${linked.linkId}`)
    await page.close()
  })

  /** Signs in as the shop's member in this browser context (the session cookie is kept for later tests). */
  const signIn = async (page: Page) => {
    await page.goto(`${kassa.baseUrl}/dashboard/login`)
    await page.getByLabel("E-mail address").fill(member.email)
    await page.getByLabel("Password").fill(member.password)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForURL((url: URL) => !url.pathname.startsWith("/dashboard/login"))
  }

  /** Requests a refund of `amount` cents on the payment's dashboard page, as the member would. */
  const requestRefund = async (page: Page, amount: number, reason: string) => {
    const paymentPage = `${kassa.baseUrl}/dashboard/apps/${linked.application.id}/payments/${paymentId}`
    await page.goto(paymentPage)
    await page.getByLabel("Amount").fill(String(amount))
    await page.getByLabel("Reason (optional)").fill(reason)
    await page.getByRole("button", { name: "Request refund" }).click()
    // The fake confirms a refund in its answer, as Stripe does for cards: the page says it is refunded.
    await page.waitForURL(`${paymentPage}?notice=refund_succeeded`)
  }

  it("refunds requested in the dashboard reach Stripe, and the shop learns payment.partially_refunded, then payment.refunded", async () => {
    expect(paymentId).not.toBe("")
    const page = await context.newPage()
    await signIn(page)

    await requestRefund(page, 250, "Chipped lid")
    const shopPage = await context.newPage()
    await shopPage.goto(orderUrl)
    await orderStatusBecomes(shopPage, "partially_refunded")
    await screenshot(page, "live-04-dashboard-partial-refund")

    await requestRefund(page, 1000, "Returned")
    await orderStatusBecomes(shopPage, "refunded")
    await screenshot(shopPage, "live-05-shop-order-refunded")

    // Stripe was asked for each refund once, on the payment's PaymentIntent, keyed by Kassa's refund id.
    const payment = await kassa.request(`/api/v1/payments/${paymentId}`, { key: linked.liveKey })
    const refunds = (payment.body as { refunds: ReadonlyArray<{ id: string; amount: number; status: string }> }).refunds
    expect(refunds.map(({ amount, status }) => ({ amount, status }))).toEqual([
      { amount: 250, status: "succeeded" },
      { amount: 1000, status: "succeeded" }
    ])
    expect(payment.body).toMatchObject({ status: "refunded", refunded_amount: 1250 })
    const asked = fake.requests.filter((request) => request.method === "POST" && request.path === "/v1/refunds")
    const intent = fake.sessions().find((session) => session.client_reference_id === paymentId)?.payment_intent
    expect(asked.map((request) => [request.params.payment_intent, request.params.amount])).toEqual([
      [intent, "250"],
      [intent, "1000"]
    ])
    expect(new Set(asked.map((request) => request.idempotencyKey))).toEqual(new Set(refunds.map((r) => r.id)))

    // The dashboard shows both refunds confirmed, with who asked for them.
    await page.reload()
    const shown = (await page.locator("main").textContent()) ?? ""
    expect(shown).toContain("Returned")
    expect(shown).toContain(member.email)
    await screenshot(page, "live-06-dashboard-refunded")

    const events = await deliveredEvents()
    expect(events.map((event) => [event.event, event.data.mode, event.data.refunded_amount])).toEqual([
      ["payment.paid", "live", 0],
      ["payment.partially_refunded", "live", 250],
      ["payment.refunded", "live", 1250]
    ])
    await page.close()
    await shopPage.close()
  })
})
