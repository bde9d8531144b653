/**
 * Fixture for live refund tests (issue 12 §4): a paid live payment as Kassa holds one once Stripe took the money — a
 * linked application (operator API, as production links it), a Checkout Session created and paid at the fake
 * Stripe, and the payment with its `provider_payments` row (session id, payment intent id) inserted directly. It
 * stands in for the live create path and the `checkout.session.completed` event, which other tests cover; it is not
 * a stub of Kassa's refund behaviour.
 */
import { expect } from "vitest"
import type { FakeStripe, JsonObject } from "./FakeStripe.ts"
import { type LinkedApplication, linkedApplication } from "./LiveLink.ts"
import { query } from "./PaymentFixtures.ts"
import { annBuyer, annPayer, expr, insertPayment } from "./PaymentSeed.ts"
import type { RunningServer } from "./TestServer.ts"

/** An application with a live Stripe account of the fake linked through the operator API (LiveLink.ts). */
export type LinkedForRefunds = LinkedApplication
export { linkedApplication }

/** A Checkout Session created at the fake Stripe with the account's key, then paid by the customer. */
export const paidSession = async (fake: FakeStripe, key: string, amount = 1000) => {
  const response = await fetch(`${fake.url}/v1/checkout/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      mode: "payment",
      "line_items[0][price_data][currency]": "eur",
      "line_items[0][price_data][unit_amount]": String(amount),
      "line_items[0][price_data][product_data][name]": "A live order",
      "line_items[0][quantity]": "1",
      success_url: "https://kassa.example/return"
    }).toString()
  })
  expect(response.status).toBe(200)
  const session = (await response.json()) as JsonObject
  const paid = fake.pay(String(session.id), { name: "Ann Buyer", email: "ann@buyer.example" })
  return { sessionId: String(paid.id), paymentIntentId: String(paid.payment_intent) }
}

/** A paid live payment of `linked`, opened at the fake Stripe (see the module comment). */
export const paidLivePayment = async (
  server: RunningServer,
  fake: FakeStripe,
  linked: LinkedForRefunds,
  amount = 1000
) => {
  const { sessionId, paymentIntentId } = await paidSession(fake, linked.stripeKey, amount)
  // The payment's own events (checkout.session.completed…) handled before Kassa's rows exist: one still in flight
  // afterwards would hold the payment's row while the test refunds, which then answers 409 payment_busy.
  await fake.settled()
  const id = crypto.randomUUID()
  await insertPayment(server, {
    id,
    application_id: linked.application.id,
    mode: "live",
    status: "paid",
    amount,
    order_reference: `live-${id.slice(0, 8)}`,
    description: "A live order",
    customer: annBuyer,
    payer: annPayer,
    paid_at: expr("now()")
  })
  await query(
    server,
    (sql) => sql`
      INSERT INTO provider_payments (payment_id, link_id, state, checkout_id, provider_payment_id, idempotency_key,
        created_at, updated_at)
      VALUES (${id}, ${linked.linkId}, 'open', ${sessionId}, ${paymentIntentId}, ${`kassa-${id}`}, now(), now())
    `
  )
  return { id, paymentIntentId }
}
