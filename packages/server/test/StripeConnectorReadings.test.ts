/**
 * The Stripe connector's side of issue 21 against the stateful fake: a create never sends Stripe an empty product
 * name; a session that Stripe silently filtered the payment's method out of is expired and refused; a reading carries
 * the session's own status words and expiry for operators; and `chargedBack` counts the money disputes took back.
 */
import { Ids } from "@kassa/core"
import { DateTime, Effect } from "effect"
import Stripe from "stripe"
import { describe, expect, it } from "vitest"
import type { ProviderRefused } from "../src/providers/ProviderConnector.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { connector, useStripeConnector } from "./support/StripeConnectorHarness.ts"

const harness = useStripeConnector()
const { run, failureOf } = harness

const sessionCreates = () =>
  harness.fake().requests.filter((request) => request.method === "POST" && request.path === "/v1/checkout/sessions")

const sentName = () => {
  const items = sessionCreates().at(-1)?.params.line_items
  const item = Array.isArray(items) ? items[0] : undefined
  const price = typeof item === "object" && item !== null && !Array.isArray(item) ? item.price_data : undefined
  const product = typeof price === "object" && price !== null && !Array.isArray(price) ? price.product_data : undefined
  return typeof product === "object" && product !== null && !Array.isArray(product) ? product.name : undefined
}

describe("the product name", () => {
  it("Stripe (the fake, as documented) refuses an empty product_data[name]", async () => {
    const fake = harness.fake()
    const stripe = new Stripe(fake.secretKey, { apiVersion, host: fake.host, port: fake.port, protocol: "http" })
    const refused = await stripe.checkout.sessions
      .create({
        mode: "payment",
        line_items: [{ price_data: { currency: "eur", unit_amount: 100, product_data: { name: "" } }, quantity: 1 }],
        success_url: "http://127.0.0.1:9/return"
      })
      .then(
        () => null,
        (error: unknown) => error
      )
    expect(refused).toMatchObject({ statusCode: 400, code: "parameter_invalid_empty" })
  })

  it.each([
    ["empty", ""],
    ["blank", "   "]
  ])("a create with an %s name sends a non-empty one and opens", async (_what, name) => {
    const link = harness.link()
    const request = harness.openRequest({ name })
    const opened = await harness.open(link, request)
    expect(sentName()).toBe(`Payment ${request.paymentId}`)
    expect(harness.fake().session(opened.checkoutId).status).toBe("open")
  })

  it("a given name is sent as it is", async () => {
    await harness.open(harness.link(), harness.openRequest({ name: "Two mugs" }))
    expect(sentName()).toBe("Two mugs")
  })
})

describe("a method Stripe filtered out", () => {
  const refusedOpen = async (overrides: Parameters<typeof harness.openRequest>[0]) => {
    const link = harness.link()
    const request = harness.openRequest(overrides)
    const refused = (await failureOf(Effect.flatMap(connector, (c) => c.open(link, request)))) as ProviderRefused
    return { link, request, refused }
  }

  it("iDEAL in USD: Stripe opens a session without it; the connector expires it and refuses, in words", async () => {
    const fake = harness.fake()
    const { link, request, refused } = await refusedOpen({ method: "ideal", currency: "USD" })
    expect(refused).toMatchObject({ _tag: "ProviderRefused", field: "method", code: null })
    expect(refused.message).toContain(`"ideal"`)
    expect(refused.message).toContain("USD")
    expect(refused.message).toContain("not enabled")
    // Stripe did answer a session (the filter is silent), which offers no iDEAL and is expired at once.
    const [session] = fake.sessions().filter((s) => s.client_reference_id === request.paymentId)
    expect(session).toMatchObject({ allowed_payment_method_types: ["ideal"], payment_method_types: [] })
    expect(session?.status).toBe("expired")
    expect(fake.requests.at(-1)).toMatchObject({
      method: "POST",
      path: `/v1/checkout/sessions/${String(session?.id)}/expire`,
      idempotencyKey: `kassa-expire-${String(session?.id)}`,
      status: 200
    })
    // A retry with the same key replays both calls and is refused again: still one session.
    const again = (await failureOf(Effect.flatMap(connector, (c) => c.open(link, request)))) as ProviderRefused
    expect(again.field).toBe("method")
    expect(fake.sessions().filter((s) => s.client_reference_id === request.paymentId)).toHaveLength(1)
  })

  it("a method the account has not enabled is refused the same way; enabled ones open", async () => {
    const fake = harness.fake()
    fake.disableMethod("bancontact")
    const { refused } = await refusedOpen({ method: "bancontact", currency: "EUR" })
    expect(refused.field).toBe("method")
    const opened = await harness.open(harness.link(), harness.openRequest({ method: "ideal", currency: "EUR" }))
    expect(fake.session(opened.checkoutId)).toMatchObject({ status: "open", payment_method_types: ["ideal"] })
  })
})

describe("a reading's words for operators", () => {
  it("open, complete/paid, complete/unpaid, expired; the session's expiry; no capture waits", async () => {
    const fake = harness.fake()
    const link = harness.link()
    const opened = await harness.open(link)
    const open = await harness.read(link, opened.checkoutId)
    expect(open).toMatchObject({ providerStatus: "open", chargedBack: 0, awaitingCapture: false })
    expect(open.providerExpiresAt).toEqual(opened.expiresAt)
    fake.pay(opened.checkoutId)
    expect((await harness.read(link, opened.checkoutId)).providerStatus).toBe("complete/paid")

    const delayed = await harness.open(link)
    fake.pay(delayed.checkoutId, {}, { delayed: true })
    expect(await harness.read(link, delayed.checkoutId)).toMatchObject({
      state: { _tag: "Unpaid" },
      providerStatus: "complete/unpaid"
    })

    const closed = await harness.open(link)
    const answer = await run(Effect.flatMap(connector, (c) => c.close(link, closed.checkoutId)))
    // Stripe reports a close as an expiry: never Cancelled, never Unclosable.
    expect(answer).toMatchObject({ _tag: "Checkout", state: { _tag: "Expired" }, providerStatus: "expired" })
  })
})

describe("chargedBack: what disputes took back", () => {
  const paid = async () => {
    const fake = harness.fake()
    const link = harness.link()
    const { checkoutId } = await harness.open(link)
    fake.pay(checkoutId)
    return { fake, link, checkoutId, intent: String(fake.session(checkoutId).payment_intent) }
  }
  const disputeLists = () => harness.fake().requests.filter((request) => request.path === "/v1/disputes")

  it("an undisputed payment reads 0 in one call (its disputes are not listed)", async () => {
    const { link, checkoutId } = await paid()
    expect((await harness.read(link, checkoutId)).chargedBack).toBe(0)
    expect(disputeLists()).toHaveLength(0)
  })

  it("a chargeback counts from its opening; won, it is given back", async () => {
    const { fake, link, checkoutId, intent } = await paid()
    const dispute = fake.dispute(intent)
    const disputed = await harness.read(link, checkoutId)
    expect(disputed).toMatchObject({ state: { _tag: "Paid" }, chargedBack: 2_500, providerPaymentId: intent })
    expect(disputeLists().at(-1)?.params).toMatchObject({ payment_intent: intent })
    fake.closeDispute(String(dispute.id), "won")
    expect((await harness.read(link, checkoutId)).chargedBack).toBe(0)
  })

  it("lost, it stays taken; a partial dispute counts its own amount", async () => {
    const first = await paid()
    first.fake.closeDispute(String(first.fake.dispute(first.intent).id), "lost")
    expect((await harness.read(first.link, first.checkoutId)).chargedBack).toBe(2_500)
    const second = await paid()
    second.fake.dispute(second.intent, { amount: 1_000 })
    expect((await harness.read(second.link, second.checkoutId)).chargedBack).toBe(1_000)
  })

  it("an inquiry takes nothing, open or closed", async () => {
    const { fake, link, checkoutId, intent } = await paid()
    const inquiry = fake.dispute(intent, { inquiry: true })
    expect((await harness.read(link, checkoutId)).chargedBack).toBe(0)
    fake.closeDispute(String(inquiry.id), "lost")
    expect((await harness.read(link, checkoutId)).chargedBack).toBe(0)
  })

  it("close (read instead on a paid session) and findCheckouts carry it too", async () => {
    const { fake, link, checkoutId, intent } = await paid()
    fake.dispute(intent)
    const closed = await run(Effect.flatMap(connector, (c) => c.close(link, checkoutId)))
    expect(closed).toMatchObject({ _tag: "Checkout", state: { _tag: "Paid" }, chargedBack: 2_500 })
    const session = fake.session(checkoutId)
    const paymentId = Ids.PaymentId.make(String(session.client_reference_id))
    const created = Number(session.created)
    const window = {
      from: DateTime.makeUnsafe((created - 60) * 1000),
      to: DateTime.makeUnsafe((created + 60) * 1000)
    }
    const found = await run(Effect.flatMap(connector, (c) => c.findCheckouts(link, paymentId, window)))
    expect(found).toMatchObject({ _tag: "Found", checkouts: [{ checkoutId, reading: { chargedBack: 2_500 } }] })
  })
})
