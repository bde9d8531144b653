/**
 * The Mollie connector's operations against the stateful fake over real HTTP, through Mollie's own SDK (decisions
 * §11): every operation in the core's vocabulary (link, open, read, find, close, refund, pings) and the mappings it
 * makes (amounts as strings, locale, method, status table, payer), refusals (a refused key names `secret_key`, a
 * duplicate refund is explained in words), and the stored Idempotency-Key. The wire's failures, the transport, the
 * SDK's loading and `KASSA_MOLLIE_API_URL` are in MollieConnectorTransport.test.ts.
 */
import { randomUUID } from "node:crypto"
import { DateTime, Effect, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import * as MollieConnector from "../src/providers/MollieConnector.ts"
import { type LinkAccess, ProviderRefused } from "../src/providers/ProviderConnector.ts"
import {
  connector,
  failureOf,
  fake,
  linkFor,
  opened,
  openRequest,
  readOf,
  refundId,
  run,
  useMollieConnector
} from "./support/MollieConnectorSupport.ts"

useMollieConnector()

describe("Mollie's words", () => {
  it("locales: the pair Mollie has, else the language's usual country, else none", () => {
    const cases: ReadonlyArray<readonly [string, string | undefined]> = [
      ["nl-NL", "nl_NL"],
      ["nl-BE", "nl_BE"],
      ["de-CH", "de_CH"],
      ["en", "en_US"],
      ["en-AU", "en_US"],
      ["en-GB", "en_GB"],
      ["fr", "fr_FR"],
      ["pt-BR", "pt_PT"],
      ["nb", "nb_NO"],
      ["ja", undefined],
      ["zh-TW", undefined]
    ]
    for (const [kassa, mollie] of cases) expect(MollieConnector.mollieLocale(kassa), kassa).toBe(mollie)
  })

  it("methods: card is creditcard, Mollie's own names pass, others are none", () => {
    expect(MollieConnector.mollieMethod("card")).toBe("creditcard")
    for (const same of ["ideal", "bancontact", "paypal", "banktransfer", "klarna", "eps", "przelewy24"]) {
      expect(MollieConnector.mollieMethod(same)).toBe(same)
    }
    expect(MollieConnector.mollieMethod("sepa_debit")).toBe("directdebit")
    expect(MollieConnector.mollieMethod("sofort")).toBeUndefined()
  })

  it("amounts: a string with the currency's decimals", () => {
    expect(MollieConnector.mollieAmount(1000, "EUR")).toEqual({ currency: "EUR", value: "10.00" })
    expect(MollieConnector.mollieAmount(1000, "JPY")).toEqual({ currency: "JPY", value: "1000" })
    expect(MollieConnector.mollieAmount(1234, "KWD")).toEqual({ currency: "KWD", value: "1.234" })
  })
})

describe("linking", () => {
  it("checks a key with GET /v2/profiles/me: the profile id, and the mode the key is for", async () => {
    expect(await run(Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(fake.apiKey))))).toEqual({
      _tag: "Account",
      accountId: fake.profileId,
      livemode: false
    })
    const live = fake.addProfile({ livemode: true })
    expect(await run(Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(live.key))))).toEqual({
      _tag: "Account",
      accountId: live.profileId,
      livemode: true
    })
    expect(fake.calls("profiles.me")).toBe(2)
  })

  it("a key Mollie refuses (401) names secret_key", async () => {
    const refused = await failureOf(Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make("test_nope"))))
    expect(refused).toBeInstanceOf(ProviderRefused)
    expect(refused).toMatchObject({ field: "secret_key", status: 401 })
  })

  it("webhooks are per payment: registering and retiring call nothing", async () => {
    const link = linkFor(fake.apiKey)
    expect(await run(Effect.flatMap(connector, (c) => c.registerWebhook(link, "https://kassa.example/w")))).toEqual({
      _tag: "PerPayment"
    })
    expect(await run(Effect.flatMap(connector, (c) => c.retireWebhook(link, "none")))).toEqual({ _tag: "Retired" })
    expect(fake.requests).toHaveLength(0)
  })
})

describe("open", () => {
  it("creates a payment as decisions §11 says, with Kassa's Idempotency-Key", async () => {
    const link = linkFor(fake.apiKey)
    const request = openRequest({ name: "x".repeat(300) })
    const answer = await opened(link, request)
    const sent = fake.requests.find((r) => r.endpoint === "payments.create")
    expect(sent?.idempotencyKey).toBe(request.idempotencyKey)
    expect(sent?.body).toEqual({
      amount: { currency: "EUR", value: "25.00" },
      description: "x".repeat(255),
      redirectUrl: request.returnUrl,
      cancelUrl: request.returnUrl,
      webhookUrl: request.webhookUrl,
      method: "creditcard",
      locale: "nl_NL",
      metadata: { kassa_payment_id: request.paymentId }
    })
    const payment = fake.payment(answer.checkoutId)
    expect(answer).toEqual({
      _tag: "Opened",
      checkoutId: payment.id,
      providerPaymentId: payment.id,
      url: (payment._links as { checkout: { href: string } }).checkout.href,
      expiresAt: DateTime.makeUnsafe(String(payment.expiresAt))
    })
  })

  it("zero-decimal currencies, a bare language, and no locale where Mollie has none", async () => {
    const link = linkFor(fake.apiKey)
    await opened(link, openRequest({ currency: "JPY", amount: 1000, locale: "en", method: "paypal" }))
    await opened(link, openRequest({ locale: "ja" }))
    const [first, second] = fake.requests.filter((r) => r.endpoint === "payments.create").map((r) => r.body)
    expect(first).toMatchObject({ amount: { currency: "JPY", value: "1000" }, locale: "en_US", method: "paypal" })
    expect(second).not.toHaveProperty("locale")
  })

  it("the same key again replays the same payment (a retry after a lost answer)", async () => {
    const link = linkFor(fake.apiKey)
    const request = openRequest()
    fake.inject({ method: "POST", path: "/v2/payments" }, { kind: "status-after", status: 502 })
    expect(await run(Effect.flatMap(connector, (c) => c.open(link, request)))).toEqual({
      _tag: "NoAnswer",
      reason: "unavailable"
    })
    const retried = await opened(link, request)
    expect(fake.requests.at(-1)?.replayed).toBe(true)
    expect(fake.payments().map((p) => p.id)).toEqual([retried.checkoutId])
  })

  it("a method not active on the profile is refused (422 naming method); one Mollie lacks is refused unsent", async () => {
    const link = linkFor(fake.apiKey)
    fake.deactivateMethod(fake.apiKey, "ideal")
    const inactive = await failureOf(Effect.flatMap(connector, (c) => c.open(link, openRequest({ method: "ideal" }))))
    expect(inactive).toMatchObject({ _tag: "ProviderRefused", status: 422, field: "method" })
    const before = fake.requests.length
    const unknown = await failureOf(Effect.flatMap(connector, (c) => c.open(link, openRequest({ method: "sofort" }))))
    expect(unknown).toMatchObject({ _tag: "ProviderRefused", field: "method" })
    expect(fake.requests).toHaveLength(before)
  })
})

describe("read", () => {
  const readAfter = async (method: string, change: (id: string) => void) => {
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link, openRequest({ method }))
    change(checkoutId)
    return readOf(link, checkoutId)
  }

  it("maps Mollie's statuses (decisions §11's table)", async () => {
    const open = await readAfter("ideal", () => {})
    expect(open).toMatchObject({ state: { _tag: "Open" }, providerStatus: "open", awaitingCapture: false })
    expect(open._tag === "Checkout" && open.providerExpiresAt).not.toBeNull()
    for (const [status, tag] of [
      ["pending", "Open"],
      ["failed", "Failed"],
      ["canceled", "Cancelled"],
      ["expired", "Expired"]
    ] as const) {
      const reading = await readAfter("ideal", (id) => fake.setStatus(id, status))
      expect(reading, status).toMatchObject({ _tag: "Checkout", state: { _tag: tag }, providerStatus: status })
    }
    const authorized = await readAfter("klarna", (id) => fake.setStatus(id, "authorized"))
    expect(authorized).toMatchObject({ state: { _tag: "Open" }, providerStatus: "authorized", awaitingCapture: true })
  })

  it("paid: the payer from details (consumerName, cardHolder, PayPal's e-mail)", async () => {
    const payer = { name: "Ada Lovelace", email: "ada@example.com" }
    const ideal = await readAfter("ideal", (id) => fake.setStatus(id, "paid", payer))
    expect(ideal).toMatchObject({ state: { _tag: "Paid", customer: { name: payer.name, email: null, phone: null } } })
    const card = await readAfter("card", (id) => fake.setStatus(id, "paid", payer))
    expect(card).toMatchObject({ state: { _tag: "Paid", customer: { name: payer.name, email: null } } })
    const paypal = await readAfter("paypal", (id) => fake.setStatus(id, "paid", payer))
    expect(paypal).toMatchObject({ state: { _tag: "Paid", customer: { name: payer.name, email: payer.email } } })
    expect(paypal).toMatchObject({ providerStatus: "paid", providerExpiresAt: null, chargedBack: 0 })
  })

  it("a chargeback is counted in minor units; the status stays paid", async () => {
    const reading = await readAfter("ideal", (id) => {
      fake.setStatus(id, "paid")
      fake.chargeBack(id, 1_000)
    })
    expect(reading).toMatchObject({ state: { _tag: "Paid" }, chargedBack: 1_000 })
  })

  it("the test checkout page offers Mollie's outcomes and sends the customer back", async () => {
    const link = linkFor(fake.apiKey)
    const request = openRequest()
    const { checkoutId, url } = await opened(link, request)
    const page = await (await fetch(url)).text()
    for (const outcome of ["paid", "failed", "canceled", "expired", "open"])
      expect(page).toContain(`value="${outcome}"`)
    const chose = await fetch(url, {
      method: "POST",
      body: new URLSearchParams({ final_state: "paid" }),
      redirect: "manual"
    })
    expect(chose.status).toBe(303)
    expect(chose.headers.get("location")).toBe(request.returnUrl)
    expect(await readOf(link, checkoutId)).toMatchObject({ state: { _tag: "Paid" } })
  })
})

describe("findCheckouts", () => {
  it("pages newest first back to the window's start and keeps the payment's own", async () => {
    const link = linkFor(fake.apiKey)
    const mine = openRequest()
    const from = DateTime.makeUnsafe(Date.now() - 1_000)
    const { checkoutId } = await opened(link, mine)
    // 260 later payments of other orders: the match is on the second page (250 a page).
    for (let index = 0; index < 260; index++) {
      await fetch(`${fake.url}/v2/payments`, {
        method: "POST",
        headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          amount: { currency: "EUR", value: "1.00" },
          description: `other ${index}`,
          redirectUrl: "https://shop.example/r",
          metadata: { kassa_payment_id: randomUUID() }
        })
      })
    }
    const window = { from, to: DateTime.makeUnsafe(Date.now() + 1_000) }
    const found = await run(Effect.flatMap(connector, (c) => c.findCheckouts(link, mine.paymentId, window)))
    expect(found).toMatchObject({ _tag: "Found", checkouts: [{ checkoutId, reading: { state: { _tag: "Open" } } }] })
    expect(fake.calls("payments.list")).toBe(2)
    // A window that starts after every payment stops at the first page.
    // (Mollie's whole-second times and another clock: the connector lists a minute before `from`.)
    const later = { from: DateTime.makeUnsafe(Date.now() + 120_000), to: DateTime.makeUnsafe(Date.now() + 180_000) }
    expect(await run(Effect.flatMap(connector, (c) => c.findCheckouts(link, mine.paymentId, later)))).toEqual({
      _tag: "Found",
      checkouts: []
    })
    expect(fake.calls("payments.list")).toBe(3)
  })
})

describe("close", () => {
  it("an open card or iDEAL checkout is Unclosable until Mollie's expiresAt, and nothing is deleted", async () => {
    const link = linkFor(fake.apiKey)
    const { checkoutId, expiresAt } = await opened(link, openRequest({ method: "ideal" }))
    expect(await run(Effect.flatMap(connector, (c) => c.close(link, checkoutId)))).toEqual({
      _tag: "Unclosable",
      expiresAt
    })
    expect(fake.calls("payments.cancel")).toBe(0)
  })

  it("a cancelable payment (an open bank transfer) is cancelled with DELETE", async () => {
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link, openRequest({ method: "banktransfer" }))
    expect(await run(Effect.flatMap(connector, (c) => c.close(link, checkoutId)))).toMatchObject({
      _tag: "Checkout",
      state: { _tag: "Cancelled" },
      providerStatus: "canceled"
    })
    expect(fake.calls("payments.cancel")).toBe(1)
  })

  it("a final payment is read, not cancelled", async () => {
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link, openRequest({ method: "banktransfer" }))
    fake.setStatus(checkoutId, "paid")
    expect(await run(Effect.flatMap(connector, (c) => c.close(link, checkoutId)))).toMatchObject({
      state: { _tag: "Paid" }
    })
    expect(fake.calls("payments.cancel")).toBe(0)
  })
})

describe("refunds", () => {
  const paidPayment = async (link: LinkAccess) => {
    const { checkoutId } = await opened(link)
    fake.setStatus(checkoutId, "paid")
    return checkoutId
  }
  const refund = (link: LinkAccess, providerPaymentId: string, amount: number, id = refundId()) =>
    run(Effect.flatMap(connector, (c) => c.refund(link, { refundId: id, providerPaymentId, amount, currency: "EUR" })))

  it("creates a refund in the payment's currency, with Kassa's id as metadata and Idempotency-Key", async () => {
    const link = linkFor(fake.apiKey)
    const tr = await paidPayment(link)
    const id = refundId()
    const answer = await refund(link, tr, 300, id)
    const sent = fake.requests.find((r) => r.endpoint === "refunds.create")
    expect(sent).toMatchObject({
      idempotencyKey: id,
      body: { amount: { currency: "EUR", value: "3.00" }, metadata: { kassa_refund_id: id } }
    })
    expect(answer).toMatchObject({
      _tag: "Refund",
      kassaMade: true,
      providerPaymentId: tr,
      refund: { refund_id: id, amount: 300, status: "pending" }
    })
    // The same refund sent again (a retry) is the same refund, not a duplicate.
    expect(await refund(link, tr, 300, id)).toEqual(answer)
    expect(fake.requests.at(-1)?.replayed).toBe(true)
  })

  it("a second refund of the same amount within the hour: Mollie's 409, explained in words", async () => {
    const link = linkFor(fake.apiKey)
    const tr = await paidPayment(link)
    await refund(link, tr, 500)
    const refused = await failureOf(
      Effect.flatMap(connector, (c) =>
        c.refund(link, { refundId: refundId(), providerPaymentId: tr, amount: 500, currency: "EUR" })
      )
    )
    expect(refused).toMatchObject({
      _tag: "ProviderRefused",
      status: 409,
      message: MollieConnector.duplicateRefundMessage
    })
    expect(MollieConnector.duplicateRefundMessage).toContain("same amount")
    expect(MollieConnector.duplicateRefundMessage).toContain("within an hour")
    // Another amount is no duplicate.
    expect(await refund(link, tr, 400)).toMatchObject({ refund: { amount: 400 } })
  })

  it("reads Mollie's refund statuses as Kassa's", async () => {
    const link = linkFor(fake.apiKey)
    const tr = await paidPayment(link)
    for (const [status, kassa, amount] of [
      ["queued", "pending", 101],
      ["processing", "pending", 102],
      ["refunded", "succeeded", 103],
      ["failed", "failed", 104],
      ["canceled", "canceled", 105]
    ] as const) {
      const created = await refund(link, tr, amount)
      if (created._tag !== "Refund") throw new Error("no refund")
      fake.settleRefund(created.refund.provider_refund_id, status)
      const target = { providerRefundId: created.refund.provider_refund_id, providerPaymentId: tr }
      const reading = await run(Effect.flatMap(connector, (c) => c.readRefund(link, target, refundId())))
      expect(reading, status).toMatchObject({ refund: { status: kassa, amount, refund_id: created.refund.refund_id } })
    }
  })

  it("a refund made in Mollie's dashboard: not Kassa's, found without its payment, listed oldest first", async () => {
    const link = linkFor(fake.apiKey)
    const tr = await paidPayment(link)
    const ours = await refund(link, tr, 200)
    const dashboard = fake.refundInDashboard(tr, 300)
    const unknownAs = refundId()
    const target = { providerRefundId: String(dashboard.id), providerPaymentId: null }
    expect(await run(Effect.flatMap(connector, (c) => c.readRefund(link, target, unknownAs)))).toMatchObject({
      kassaMade: false,
      providerPaymentId: tr,
      refund: { refund_id: unknownAs, amount: 300, status: "succeeded" }
    })
    expect(fake.calls("refunds.all")).toBe(1)
    expect(await run(Effect.flatMap(connector, (c) => c.listRefunds(link, tr)))).toEqual({
      _tag: "Refunds",
      ids: [ours._tag === "Refund" ? ours.refund.provider_refund_id : "", dashboard.id]
    })
    const missing = { providerRefundId: "re_missing00", providerPaymentId: null }
    expect(await failureOf(Effect.flatMap(connector, (c) => c.readRefund(link, missing, unknownAs)))).toMatchObject({
      _tag: "ProviderRefused",
      status: 404
    })
  })
})

describe("pings", () => {
  it("id=tr_… is a hint about that checkout; the link's key gives the mode; anything else is rejected", async () => {
    const test = linkFor(fake.apiKey)
    const live = linkFor(fake.addProfile({ livemode: true }).key)
    const parse = (link: LinkAccess, body: string) =>
      run(
        Effect.flatMap(connector, (c) =>
          c.parseEvent(link, body, { "content-type": "application/x-www-form-urlencoded" })
        )
      )
    expect(await parse(test, "id=tr_WDqYK6vllg")).toEqual({
      id: null,
      type: "payment",
      livemode: false,
      subject: { _tag: "CheckoutChanged", checkoutId: "tr_WDqYK6vllg" }
    })
    expect(await parse(live, "id=tr_WDqYK6vllg")).toMatchObject({ livemode: true })
    for (const body of ["", "id=", "id=re_WDqYK6vllg", "id=tr_..%2Fx", '{"id":"tr_WDqYK6vllg"}', "ids=tr_a"]) {
      const rejected = await failureOf(Effect.flatMap(connector, (c) => c.parseEvent(test, body, {})))
      expect(rejected, body).toMatchObject({ _tag: "EventRejected" })
    }
    expect(fake.requests).toHaveLength(0)
  })
})
