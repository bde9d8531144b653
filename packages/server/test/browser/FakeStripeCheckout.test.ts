/**
 * The fake Stripe's hosted checkout in a real browser: what the live-mode end-to-end test will click through.
 * The session is created with the official SDK, as the adapter will.
 */
import type { Browser } from "playwright-core"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkAccessible, launch } from "../support/Browser.ts"
import { type FakeStripe, startFakeStripe } from "../support/FakeStripe.ts"
import { startReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

let browser: Browser
let fake: FakeStripe
let merchant: WebhookReceiver
let stripe: Stripe

beforeAll(async () => {
  browser = await launch()
  fake = await startFakeStripe()
  merchant = await startReceiver()
  merchant.answer({ status: 200, headers: { "content-type": "text/html" }, body: "<h1>Back at the shop</h1>" })
  stripe = new Stripe(fake.secretKey, {
    apiVersion: "2026-10-28.endive",
    protocol: fake.protocol,
    host: fake.host,
    port: fake.port,
    timeout: 10_000,
    maxNetworkRetries: 0,
    telemetry: false
  })
})
afterAll(async () => {
  await browser.close()
  await fake.close()
  await merchant.close()
})

const newSession = () =>
  stripe.checkout.sessions.create({
    mode: "payment",
    line_items: [{ price_data: { currency: "eur", unit_amount: 1_250, product_data: { name: "Tea" } }, quantity: 1 }],
    success_url: merchant.url("/return?session={CHECKOUT_SESSION_ID}"),
    cancel_url: merchant.url("/cancelled"),
    customer_email: "ada@example.com"
  })

describe("the fake Stripe's hosted checkout in Chromium", () => {
  it("Pay completes the session and returns the customer to success_url", async () => {
    const session = await newSession()
    const page = await browser.newPage()
    await page.goto(String(session.url))
    await expect.poll(() => page.locator("#amount").textContent()).toBe("12.50 EUR")
    await checkAccessible(page)
    await page.getByLabel("Name").fill("Ada Lovelace")
    await page.getByRole("button", { name: "Pay" }).click()
    await page.waitForURL(merchant.url(`/return?session=${session.id}`))
    const paid = await stripe.checkout.sessions.retrieve(session.id)
    expect(paid).toMatchObject({ status: "complete", payment_status: "paid" })
    expect(paid.customer_details).toMatchObject({ name: "Ada Lovelace", email: "ada@example.com" })
    await page.close()
  })

  it("Decline shows the decline and stays; Abandon returns to cancel_url; the session stays open", async () => {
    const session = await newSession()
    const page = await browser.newPage()
    await page.goto(String(session.url))
    await page.getByRole("button", { name: "Decline" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toBe("Your card was declined.")
    await page.getByRole("button", { name: "Abandon" }).click()
    await page.waitForURL(merchant.url("/cancelled"))
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe("open")
    await page.close()
  })
})
