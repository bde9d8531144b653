/**
 * The shop in live mode through Mollie, end to end in Chromium (issue 21 §8), as live.e2e.test.ts does through
 * Stripe: the same shop code, given a live key of an application whose operator linked a Mollie key. Kassa runs in
 * process with `KASSA_MOLLIE_API_URL` at the fake Mollie (reached only through Mollie's SDK). The customer buys on
 * the shop's page, is sent through `checkout_url` to the payment's page at Mollie (the fake's test-mode checkout,
 * where the tester picks the outcome as in Mollie's test mode), chooses "Paid", comes back through Kassa's return page
 * to the order page, and the order turns paid only when Kassa's signed `payment.paid` reaches the shop's webhook —
 * sent once Mollie's unsigned ping made Kassa read the payment from Mollie. Then a member of the shop asks for refunds
 * in the dashboard: Mollie takes them as pending, the dashboard says so, and the shop learns
 * `payment.partially_refunded`, then `payment.refunded`, only once Mollie has refunded each and pinged Kassa.
 *
 * The fake Mollie, the in-process server and the browser launcher are the server's test support, imported by
 * relative path as live.e2e.test.ts imports the fake Stripe (its header says why).
 */
import { Kassa } from "@kassa/client"
import { type KassaEvent, verify } from "@kassa/webhook-verify"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch, screenshot } from "../../../packages/server/test/support/Browser.ts"
import { createUser, type DashboardUser } from "../../../packages/server/test/support/DashboardClient.ts"
import { type FakeMollie, startFakeMollie } from "../../../packages/server/test/support/FakeMollie.ts"
import {
  type MollieLinkedApplication,
  mollieLinkedApplication
} from "../../../packages/server/test/support/MollieLink.ts"
import { query } from "../../../packages/server/test/support/PaymentFixtures.ts"
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

describe.each(databases)("live checkout through Mollie end to end in Chromium on %s", (database) => {
  let fake: FakeMollie
  let kassa: RunningServer
  let shop: Shop
  let shopServer: ShopServer
  let shopUrl: string
  let linked: MollieLinkedApplication
  let member: DashboardUser
  let context: BrowserContext
  let deliveries: Array<Delivery>

  beforeAll(async () => {
    fake = await startFakeMollie()
    kassa = await startServer(database, { mollieApiUrl: fake.url })
    shopServer = await startShopServer(() => shop)
    shopUrl = shopServer.url
    deliveries = shopServer.deliveries
    // The operator links a live Mollie key through the operator API, as production does it. Cards only: the shop
    // sends no method, as in test mode.
    linked = await mollieLinkedApplication(kassa, fake, {
      name: "Tea shop",
      webhook_url: `${shopUrl}/webhooks/kassa`,
      return_url_host: "127.0.0.1",
      methods: ["card"]
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
  let molliePaymentId = ""
  let orderUrl = ""

  it("the customer pays on Mollie's page, returns to the shop, and the order is paid by the verified webhook", async () => {
    const page = await context.newPage()
    await page.goto(shopUrl)
    await page.getByRole("button", { name: "Buy" }).click()

    // The shop created a live payment and sent the customer to its checkout_url, which Kassa answered with a
    // redirect to the payment Mollie opened for it.
    await page.waitForURL((url: URL) => url.origin === fake.url && url.pathname.startsWith("/checkout/test-mode/tr_"))
    molliePaymentId = page.url().split("/").at(-1) ?? ""
    const atMollie = fake.payment(molliePaymentId)
    expect(atMollie).toMatchObject({
      mode: "live",
      status: "open",
      method: "creditcard",
      amount: { currency: "EUR", value: "12.50" },
      description: "Cast-iron teapot"
    })
    paymentId = String((atMollie.metadata as { kassa_payment_id: string }).kassa_payment_id)
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
    expect(await page.locator("#amount").textContent()).toBe("EUR 12.50")
    await screenshot(page, "live-mollie-01-mollie-checkout")

    // Mollie's test mode: the tester picks the payment's outcome.
    await page.getByLabel("Paid").check()
    await page.getByRole("button", { name: "Continue" }).click()

    // Mollie sends the customer to Kassa's return page (the payment's redirectUrl); once Mollie's ping has made
    // Kassa read the payment, the page offers the way back to the shop (until then it asks for a reload).
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
    await screenshot(page, "live-mollie-02-kassa-return")
    await page.getByRole("link", { name: "Back to the shop" }).click()
    await page.waitForURL(orderUrl)
    await orderStatusBecomes(page, "paid")
    await screenshot(page, "live-mollie-03-shop-order-paid")

    // What the shop applied came from Kassa's signed webhook, for a live payment, paid by the customer of the visit.
    const events = await deliveredEvents()
    expect(events.map((event) => event.event)).toEqual(["payment.paid"])
    const paid = events[0] as KassaEvent
    expect(paid.data).toMatchObject({ id: paymentId, mode: "live", status: "paid", amount: 1250 })
    // The card holder Mollie reports (its test mode's), no e-mail for a card; the browser of the visit.
    expect(paid.data.payer).toMatchObject({ name: "T. TEST", email: null, ip: "127.0.0.1" })
    expect(String(paid.data.payer?.user_agent)).toContain("Chrome")
    expect(shop.order(orderId)?.events.map((event) => event.event)).toEqual(["payment.paid"])
    // Mollie's ping reached Kassa at the link's URL and was answered 200, at the first attempt.
    const pings = fake.pings.filter((ping) => ping.paymentId === molliePaymentId)
    expect(pings.map((ping) => [ping.url, ping.attempt, ping.status])).toContainEqual([
      `${kassa.baseUrl}/provider-webhooks/mollie/${linked.linkId}`,
      1,
      200
    ])
    expect(pings.every((ping) => ping.status === 200)).toBe(true)
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

  /**
   * Requests a refund of `amount` cents on the payment's dashboard page, as the member would; Mollie takes it as
   * pending (refunds run after a delay at Mollie), which the page says. Answers Mollie's refund id.
   */
  const requestRefund = async (page: Page, amount: number, reason: string) => {
    const paymentPage = `${kassa.baseUrl}/dashboard/apps/${linked.application.id}/payments/${paymentId}`
    await page.goto(paymentPage)
    await page.getByLabel("Amount").fill(String(amount))
    await page.getByLabel("Reason (optional)").fill(reason)
    await page.getByRole("button", { name: "Request refund" }).click()
    await page.waitForURL(`${paymentPage}?notice=refund_requested`)
    const [row] = await query(
      kassa,
      (sql) => sql`
        SELECT pr.provider_refund_id FROM provider_refunds pr JOIN refunds r ON r.id = pr.refund_id
        WHERE r.payment_id = ${paymentId} AND r.amount = ${amount}
      `
    )
    return String(row?.provider_refund_id)
  }

  it("refunds requested in the dashboard reach Mollie, and the shop learns payment.partially_refunded, then payment.refunded", async () => {
    expect(paymentId).not.toBe("")
    const page = await context.newPage()
    await signIn(page)

    const first = await requestRefund(page, 250, "Chipped lid")
    await screenshot(page, "live-mollie-04-dashboard-refund-pending")
    const shopPage = await context.newPage()
    await shopPage.goto(orderUrl)
    // Pending at Mollie: nothing changes for the shop yet.
    expect(await statusOf(shopPage)).toBe("paid")
    expect(fake.refund(first)).toMatchObject({ status: "pending", amount: { currency: "EUR", value: "2.50" } })
    // Mollie refunds it and pings Kassa, which reads the payment's refunds and tells the shop.
    fake.settleRefund(first, "refunded")
    await orderStatusBecomes(shopPage, "partially_refunded")

    const second = await requestRefund(page, 1000, "Returned")
    fake.settleRefund(second, "refunded")
    await orderStatusBecomes(shopPage, "refunded")
    await screenshot(shopPage, "live-mollie-05-shop-order-refunded")

    // Mollie was asked for each refund once, on the payment, keyed by Kassa's refund id.
    const payment = await kassa.request(`/api/v1/payments/${paymentId}`, { key: linked.liveKey })
    const refunds = (payment.body as { refunds: ReadonlyArray<{ id: string; amount: number; status: string }> }).refunds
    expect(refunds.map(({ amount, status }) => ({ amount, status }))).toEqual([
      { amount: 250, status: "succeeded" },
      { amount: 1000, status: "succeeded" }
    ])
    expect(payment.body).toMatchObject({ status: "refunded", refunded_amount: 1250 })
    const asked = fake.requests.filter((request) => request.endpoint === "refunds.create")
    expect(asked.map((request) => [request.path, request.body])).toEqual([
      [
        `/v2/payments/${molliePaymentId}/refunds`,
        expect.objectContaining({ amount: { currency: "EUR", value: "2.50" } })
      ],
      [
        `/v2/payments/${molliePaymentId}/refunds`,
        expect.objectContaining({ amount: { currency: "EUR", value: "10.00" } })
      ]
    ])
    expect(new Set(asked.map((request) => request.idempotencyKey))).toEqual(new Set(refunds.map((r) => r.id)))
    expect(fake.payment(molliePaymentId)).toMatchObject({ status: "paid", amountRefunded: { value: "12.50" } })

    // The dashboard shows both refunds confirmed, with who asked for them.
    await page.reload()
    const shown = (await page.locator("main").textContent()) ?? ""
    expect(shown).toContain("Returned")
    expect(shown).toContain(member.email)
    await screenshot(page, "live-mollie-06-dashboard-refunded")

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
