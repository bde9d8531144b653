/**
 * The shop end to end against the real Kassa server (in process, on PGlite): an order placed over HTTP, paid on the
 * hosted checkout the way a browser would, and marked paid only by the webhook Kassa's delivery engine sends.
 */
import { Kassa } from "@kassa/client"
import { type KassaEvent, sign } from "@kassa/webhook-verify"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databases, type RunningServer, startServer } from "../../../packages/server/test/support/TestServer.ts"
import { createShop, type Shop } from "../src/shop.ts"
import { type Delivery, type ShopServer, startShopServer } from "./support/ShopServer.ts"

interface Attempt {
  readonly kind: string
  readonly response_body: string | null
}

const catalog = [{ id: "mug", name: 'Mug <b>"bold"</b> & co', amount: 1250 }]

describe.each(databases)("checkout end to end on %s", (database) => {
  let kassa: RunningServer
  let shop: Shop
  let shopServer: ShopServer
  let shopUrl: string
  let testKey: string
  let applicationId: string
  let webhookSecret: string
  let deliveries: Array<Delivery>

  beforeAll(async () => {
    kassa = await startServer(database)
    // The shop listens first: Kassa needs its webhook URL, and the shop needs the application's secret.
    shopServer = await startShopServer(() => shop)
    shopUrl = shopServer.url
    deliveries = shopServer.deliveries
    const application = await kassa.createApplication({
      webhook_url: `${shopUrl}/webhooks/kassa`,
      return_url_host: "127.0.0.1"
    })
    testKey = application.testKey
    applicationId = application.application.id
    webhookSecret = application.webhookSecret
    shop = createShop({
      kassa: new Kassa({ apiKey: application.testKey, baseUrl: kassa.baseUrl }),
      webhookSecret: application.webhookSecret,
      baseUrl: shopUrl,
      catalog
    })
  })

  afterAll(async () => {
    await shopServer?.close()
    if (kassa !== undefined) await kassa.close()
  })

  const orderPage = async (orderId: string) => {
    const response = await fetch(`${shopUrl}/orders/${orderId}`)
    expect(response.status).toBe(200)
    return response.text()
  }
  const statusOf = (html: string) => /data-status="([^"]+)"/.exec(html)?.[1]
  const eventRows = (html: string) => html.match(/<tr class="event">/g)?.length ?? 0

  const waitForStatus = async (orderId: string, status: string) => {
    const deadline = Date.now() + 10_000
    for (;;) {
      const html = await orderPage(orderId)
      if (statusOf(html) === status || Date.now() > deadline) return html
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  const postWebhook = (body: Buffer | string, signature: string | undefined) =>
    fetch(`${shopUrl}/webhooks/kassa`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(signature === undefined ? {} : { "x-service-signature": signature })
      },
      body: typeof body === "string" ? body : new Uint8Array(body)
    })

  let orderId = ""
  let paidHtml = ""

  it("an order paid on the hosted checkout becomes paid through the verified webhook", async () => {
    // The customer buys a mug: the shop creates the payment with the SDK and sends them to Kassa.
    const placed = await fetch(`${shopUrl}/orders`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ product: "mug" }).toString()
    })
    expect(placed.status).toBe(303)
    const checkoutUrl = placed.headers.get("location") ?? ""
    expect(checkoutUrl).toMatch(new RegExp(`^${kassa.baseUrl}/checkout/`))
    const paymentId = checkoutUrl.split("/").pop() ?? ""

    // The payment as Kassa stored it: the catalog's price, the order as reference, the order page as return URL.
    const payment = await kassa.request(`/api/v1/payments/${paymentId}`, { key: testKey })
    const stored = payment.body as { amount: number; order_reference: string; return_url: string }
    expect(stored.amount).toBe(1250)
    orderId = stored.order_reference
    expect(stored.return_url).toBe(`${shopUrl}/orders/${orderId}`)

    // Before any webhook the order waits; the page escapes the product's name.
    const before = await orderPage(orderId)
    expect(statusOf(before)).toBe("awaiting_payment")
    expect(before).toContain("Mug &lt;b&gt;&quot;bold&quot;&lt;/b&gt; &amp; co")
    expect(before).not.toContain("<b>")

    // The hosted checkout, as a browser drives it.
    const checkout = await fetch(checkoutUrl)
    expect(checkout.status).toBe(200)
    const cookie = (checkout.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    expect(cookie).toMatch(/^kassa_checkout=/)
    const csrf = /name="csrf" value="([^"]+)"/.exec(await checkout.text())?.[1] ?? ""
    expect(csrf).not.toBe("")
    const paid = await fetch(checkoutUrl, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: kassa.baseUrl },
      body: new URLSearchParams({ csrf, action: "pay", name: "Ada Lovelace" }).toString()
    })
    expect(paid.status).toBe(303)
    expect(paid.headers.get("location")).toBe(`${shopUrl}/orders/${orderId}`)

    // Only the webhook makes it paid.
    paidHtml = await waitForStatus(orderId, "paid")
    expect(statusOf(paidHtml)).toBe("paid")
    expect(paidHtml).toContain(paymentId)
    expect(eventRows(paidHtml)).toBe(1)
    expect(deliveries.map((delivery) => delivery.event)).toEqual(["payment.paid"])
  })

  it("refuses a webhook with a bad signature (400) and changes nothing", async () => {
    const [delivery] = deliveries
    if (delivery === undefined) throw new Error("no delivery recorded")
    // A forged refund: the body changed under the genuine signature.
    const forged = delivery.body.toString("utf8").replace('"status":"paid"', '"status":"refunded"')
    expect(forged).not.toBe(delivery.body.toString("utf8"))
    const refusals = [
      await postWebhook(forged, delivery.signature),
      await postWebhook(delivery.body, delivery.signature.replace(/v1=[0-9a-f]/, "v1=x")),
      await postWebhook(delivery.body, `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}`),
      await postWebhook(delivery.body, undefined)
    ]
    for (const response of refusals) expect(response.status).toBe(400)
    expect(await refusals[2]?.text()).toMatch(/^no_matching_signature/)
    expect(await orderPage(orderId)).toBe(paidHtml)
  })

  it("handles a duplicate delivery (the same signed request replayed) once", async () => {
    const [delivery] = deliveries
    if (delivery === undefined) throw new Error("no delivery recorded")
    const replay = await postWebhook(delivery.body, delivery.signature)
    expect(replay.status).toBe(200)
    expect(await replay.text()).toMatch(/duplicate/)
    const html = await orderPage(orderId)
    expect(statusOf(html)).toBe("paid")
    expect(eventRows(html)).toBe(1)
  })

  it("a Resend from the operator API (same event id) is acknowledged as a duplicate and not applied again", async () => {
    const admin = { authorization: `Bearer ${kassa.adminToken}` }
    const list = await kassa.request(`/admin/api/v1/applications/${applicationId}/deliveries?event=payment.paid`, {
      headers: admin
    })
    expect(list.status).toBe(200)
    const [paidDelivery] = (list.body as { data: ReadonlyArray<{ id: string; event_id: string }> }).data
    if (paidDelivery === undefined) throw new Error("Kassa lists no payment.paid delivery")
    const resent = await kassa.request(`/admin/api/v1/deliveries/${paidDelivery.id}/resend`, {
      method: "POST",
      headers: admin
    })
    expect(resent.status).toBe(202)
    const deadline = Date.now() + 10_000
    while (deliveries.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(deliveries).toHaveLength(2)
    expect(JSON.parse(String(deliveries[1]?.body)).id).toBe(paidDelivery.event_id)
    // Kassa records the shop's answer to the manual attempt.
    let answer: string | null | undefined
    while (answer == null && Date.now() < deadline) {
      const again = await kassa.request(`/admin/api/v1/applications/${applicationId}/deliveries?event=payment.paid`, {
        headers: admin
      })
      const [delivery] = (again.body as { data: ReadonlyArray<{ attempts: ReadonlyArray<Attempt> }> }).data
      answer = delivery?.attempts.find((attempt) => attempt.kind === "manual")?.response_body
      if (answer == null) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(answer).toMatch(/duplicate/)
    const html = await orderPage(orderId)
    expect(statusOf(html)).toBe("paid")
    expect(eventRows(html)).toBe(1)
  })

  it("trusts the newest event's data.status: a late, older payment.paid does not undo a refund", async () => {
    const [paidDelivery] = deliveries
    if (paidDelivery === undefined) throw new Error("no delivery recorded")
    const paidEvent = JSON.parse(paidDelivery.body.toString("utf8")) as KassaEvent
    await new Kassa({ apiKey: testKey, baseUrl: kassa.baseUrl }).payments.refund(paidEvent.data.id)
    expect(statusOf(await waitForStatus(orderId, "refunded"))).toBe("refunded")

    // Another payment.paid, older than the refund, arrives only now (a retry that was stuck, say).
    const late = JSON.stringify({ ...paidEvent, id: `evt_${crypto.randomUUID()}` })
    const response = await postWebhook(late, await sign(late, webhookSecret))
    expect(response.status).toBe(200)
    const html = await orderPage(orderId)
    expect(statusOf(html)).toBe("refunded")
    expect(eventRows(html)).toBe(3)
  })

  it("shows a 404 for an unknown order", async () => {
    expect((await fetch(`${shopUrl}/orders/ord_unknown`)).status).toBe(404)
  })
})
