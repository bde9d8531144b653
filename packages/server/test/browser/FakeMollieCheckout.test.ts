/**
 * The fake Mollie's test-mode checkout in a real browser: the page the live-mode end-to-end test through Mollie
 * (examples/merchant-app/test/live-mollie.e2e.test.ts) clicks through. As in Mollie's test mode the tester picks the
 * outcome — paid, failed, canceled, expired, or leaves it open — and is sent on to `redirectUrl` (`cancelUrl` for a
 * cancel); the payment is created and read with Mollie's SDK, as the connector does.
 */
import { Client } from "mollie-api-typescript"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkAccessible, launch } from "../support/Browser.ts"
import { type FakeMollie, startFakeMollie } from "../support/FakeMollie.ts"
import { startReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

let browser: Browser
let fake: FakeMollie
let merchant: WebhookReceiver
let mollie: Client

beforeAll(async () => {
  browser = await launch()
  fake = await startFakeMollie()
  merchant = await startReceiver()
  merchant.answer({ status: 200, headers: { "content-type": "text/html" }, body: "<h1>Back at the shop</h1>" })
  mollie = new Client({ security: { apiKey: fake.apiKey }, serverURL: fake.url, retryConfig: { strategy: "none" } })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await fake?.close()
  await merchant?.close()
})

const newPayment = () =>
  mollie.payments.create({
    idempotencyKey: crypto.randomUUID(),
    paymentRequest: {
      amount: { currency: "EUR", value: "12.50" },
      description: "Tea",
      redirectUrl: merchant.url("/return"),
      cancelUrl: merchant.url("/cancelled"),
      webhookUrl: merchant.url("/mollie"),
      method: "creditcard"
    }
  })

describe("the fake Mollie's test-mode checkout in Chromium", () => {
  it("shows the payment and its outcomes, labelled and chosen by keyboard; Paid returns to redirectUrl", async () => {
    const payment = await newPayment()
    const page = await browser.newPage()
    await page.goto(String(payment.links.checkout?.href))
    expect(await page.locator("#amount").textContent()).toBe("EUR 12.50")
    // Every choice is labelled, and Tab reaches the radio group (once: the arrow keys move within it, as below).
    for (const outcome of ["Paid", "Failed", "Canceled", "Expired", "Open"]) {
      expect(await page.getByLabel(outcome).count(), outcome).toBe(1)
    }
    await checkAccessible(page)
    expect(await page.getByLabel("Paid").isChecked()).toBe(true)
    await page.getByLabel("Paid").focus()
    await page.keyboard.press("ArrowDown")
    expect(await page.getByLabel("Failed").isChecked()).toBe(true)
    await page.keyboard.press("ArrowUp")
    expect(await page.getByLabel("Paid").isChecked()).toBe(true)
    await page.getByRole("button", { name: "Continue" }).click()
    await page.waitForURL(merchant.url("/return"))
    expect((await mollie.payments.get({ paymentId: payment.id })).status).toBe("paid")
    // Back on the page of a payment that is final: no choices, the way back to the shop.
    await page.goto(String(payment.links.checkout?.href))
    expect(await page.getByRole("heading").textContent()).toBe("Payment paid")
    expect(await page.getByRole("radio").count()).toBe(0)
    await page.close()
  })

  it("Canceled returns to cancelUrl; Failed and Expired to redirectUrl; Open changes nothing", async () => {
    for (const [outcome, status, back] of [
      ["Canceled", "canceled", "/cancelled"],
      ["Failed", "failed", "/return"],
      ["Expired", "expired", "/return"],
      ["Open", "open", "/return"]
    ] as const) {
      const payment = await newPayment()
      const page = await browser.newPage()
      await page.goto(String(payment.links.checkout?.href))
      await page.getByLabel(outcome).check()
      await page.getByRole("button", { name: "Continue" }).click()
      await page.waitForURL(merchant.url(back))
      expect((await mollie.payments.get({ paymentId: payment.id })).status, outcome).toBe(status)
      await page.close()
    }
  })
})
