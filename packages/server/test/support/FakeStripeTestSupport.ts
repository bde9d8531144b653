/**
 * What FakeStripe.test.ts's requests are made with: the official `stripe` SDK's client as the Kassa adapter builds it
 * (pinned API version, the fake's address, its timeout and no SDK retries), §10's Checkout Session parameters, the
 * SDK error a refused call ends with, an event's object, and a button pressed on the fake's hosted page.
 */
import Stripe from "stripe"
import type { FakeStripe } from "./FakeStripe.ts"

/** The API version stripe 23.1.0 ships with (`stripe/esm/apiVersion.js`); the adapter pins the same pair. */
export const apiVersion = "2026-10-28.endive" as const

/**
 * The client as the adapter will build it: the fake's protocol/host/port (KASSA_STRIPE_API_URL), 10 s timeout
 * (decisions §10), and no SDK retries by default — Kassa retries itself with the same Idempotency-Key (the
 * reconciler, the expiry retry), so one call is one bounded attempt and a 10 s bound means 10 s, not 10 s per retry
 * plus backoff.
 */
export const client = (fake: FakeStripe, key = fake.secretKey, maxNetworkRetries = 0, timeout = 10_000) =>
  new Stripe(key, {
    apiVersion,
    protocol: fake.protocol,
    host: fake.host,
    port: fake.port,
    timeout,
    maxNetworkRetries,
    telemetry: false
  })

/** The SDK's error for a call that must fail (anything else fails the test). */
export const failure = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    if (error instanceof Stripe.errors.StripeError) return error
    throw error
  }
  throw new Error("expected the SDK to reject")
}

/** §10's Checkout Session for a payment. */
export const sessionParams = (
  fake: FakeStripe,
  paymentId: string,
  amount = 2_500
): Stripe.Checkout.SessionCreateParams => ({
  mode: "payment",
  line_items: [
    { price_data: { currency: "eur", unit_amount: amount, product_data: { name: "Order 42" } }, quantity: 1 }
  ],
  client_reference_id: paymentId,
  metadata: { kassa_payment_id: paymentId },
  payment_intent_data: { metadata: { kassa_payment_id: paymentId } },
  success_url: `http://127.0.0.1:9/checkout/${paymentId}/return`,
  cancel_url: `http://127.0.0.1:9/checkout/${paymentId}/return`,
  expires_at: fake.now() + 3_600,
  customer_email: "ada@example.com",
  locale: "en",
  // §10 says `payment_method_types`; under the pinned API version the parameter is `allowed_payment_method_types`.
  allowed_payment_method_types: ["card"]
})

/** The object an event carries (the test fails when the event is missing). */
export const objectOf = <A>(event: Stripe.Event | undefined): A => {
  if (event === undefined) throw new Error("expected an event")
  return event.data.object as A
}

/** A button pressed on the fake's hosted checkout page, the form posted as a browser posts it. */
export const payOnPage = async (session: Stripe.Checkout.Session, action: "pay" | "decline" | "abandon") =>
  fetch(String(session.url), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ action, name: "Ada Lovelace", email: "ada@example.com", phone: "" }).toString()
  })
