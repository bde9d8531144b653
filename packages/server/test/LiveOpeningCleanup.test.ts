/**
 * The clean-up of live creates that died between their Stripe call and their commit (issue 12 §3, decisions §10,
 * docs/decisions.md "Live create"), on both databases, with the stateful fake Stripe behind the `stripe` SDK.
 *
 * A process that dies there leaves the payment `pending` with its checkout row `opening` and no session id (the state
 * test/LiveCrash.test.ts produces with a real kill -9); here a payment opened normally is put back into that state in
 * the database, with its creation moved back past `openingStaleAfter`. The reconciler's round then finds what Stripe
 * has for the payment by a read (sessions listed by creation time, matched by `client_reference_id`), expires an open
 * session at Stripe and fails the payment with `payment.failed` and its delivery — or adopts the session when Stripe
 * says it was paid meanwhile. Stripe lists sessions newest first and the connector reads at most 10 pages of 100 of a
 * window, so the search starts with the minutes in which the create could have made its session: a busy account's
 * later sessions do not hide it.
 */
import { Effect } from "effect"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ProviderReconciler } from "../src/live/ProviderReconciler.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { type LinkedApplication, linkedApplication } from "./support/LiveLink.ts"
import {
  createPayment,
  eventsOf,
  query,
  storedStatus,
  uniqueReference,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("stuck live creates on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  let shop: LinkedApplication
  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url })
    shop = await linkedApplication(server, fake)
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const reconcile = () => server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))

  const checkoutRow = async (paymentId: string) =>
    (await query(server, (sql) => sql`SELECT * FROM provider_payments WHERE payment_id = ${paymentId}`))[0]

  /** A live payment opened at Stripe, then its row put back as a process dying before its commit leaves it. */
  const diedAfterStripe = async (age: string) => {
    const created = await createPayment(server, shop.liveKey, { order_reference: uniqueReference("stuck") })
    expect(created.status, created.text).toBe(201)
    const paymentId = (created.body as WirePayment).id
    const session = fake.sessions().find((s) => s.client_reference_id === paymentId)
    await query(
      server,
      (sql) => sql`
        UPDATE provider_payments
        SET state = 'opening', checkout_id = NULL, checkout_url = NULL, checkout_expires_at = NULL,
            created_at = created_at - ${age}::interval
        WHERE payment_id = ${paymentId}
      `
    )
    return { paymentId, sessionId: String(session?.id) }
  }

  it("a session Stripe made is expired there and the payment failed with payment.failed and its delivery", async () => {
    const { paymentId, sessionId } = await diedAfterStripe("3 minutes")
    await reconcile()
    expect(fake.session(sessionId).status).toBe("expired")
    expect(await storedStatus(server, paymentId)).toBe("failed")
    const events = await eventsOf(server, paymentId)
    expect(events.map((event) => [event.event, event.deliveries])).toEqual([["payment.failed", 1]])
    expect(JSON.parse(events[0]?.body ?? "{}").data).toMatchObject({ id: paymentId, status: "failed", mode: "live" })
    expect(await checkoutRow(paymentId)).toMatchObject({ state: "not_opened", checkout_id: null, next_read_at: null })
    // Read, not made: no create was sent for the clean-up.
    const creates = fake.requests.filter(
      (r) => r.method === "POST" && r.path === "/v1/checkout/sessions" && r.params.client_reference_id === paymentId
    )
    expect(creates).toHaveLength(1)
    // Done once: the next round changes nothing.
    await reconcile()
    expect((await eventsOf(server, paymentId)).map((event) => event.event)).toEqual(["payment.failed"])
  })

  it("a session paid at Stripe meanwhile is adopted: the payment is paid, not failed", async () => {
    const { paymentId, sessionId } = await diedAfterStripe("3 minutes")
    // Its event finds no payment with this session (the row never stored it) and changes nothing.
    fake.pay(sessionId, { name: "Ada Lovelace", email: null, phone: null })
    await fake.settled()
    expect(await storedStatus(server, paymentId)).toBe("pending")
    await reconcile()
    expect(await storedStatus(server, paymentId)).toBe("paid")
    const events = await eventsOf(server, paymentId)
    expect(events.map((event) => event.event)).toEqual(["payment.paid"])
    // Stripe gave no e-mail or phone, and nobody came through Kassa's checkout: e-mail and phone are null (the
    // contract's payer allows null there only; name, ip and user_agent are strings, "" when unknown).
    expect(JSON.parse(events[0]?.body ?? "{}").data.payer).toEqual({
      name: "Ada Lovelace",
      email: null,
      phone: null,
      ip: "",
      user_agent: ""
    })
    expect(await checkoutRow(paymentId)).toMatchObject({ state: "open", checkout_id: sessionId })
  })

  it("a create younger than the clean-up's delay is left to its own request (or its merchant's retry)", async () => {
    const { paymentId, sessionId } = await diedAfterStripe("30 seconds")
    await reconcile()
    expect(fake.session(sessionId).status).toBe("open")
    expect(await storedStatus(server, paymentId)).toBe("pending")
    expect(await checkoutRow(paymentId)).toMatchObject({ state: "opening", closing: null })
  })

  // Last in this block: it moves the fake's clock.
  it("a busy account's sessions made after the stuck one (more than Stripe's 10 pages of 100) do not hide it", async () => {
    const created = await createPayment(server, shop.liveKey, { order_reference: uniqueReference("busy") })
    expect(created.status, created.text).toBe(201)
    const paymentId = (created.body as WirePayment).id
    const stuck = fake.sessions().find((s) => s.client_reference_id === paymentId)
    const madeAt = Number(stuck?.created)
    // The row as a create that died leaves it, 3 minutes before the session's `created` (stale for the clean-up).
    await query(
      server,
      (sql) => sql`
        UPDATE provider_payments
        SET state = 'opening', checkout_id = NULL, checkout_url = NULL, checkout_expires_at = NULL,
            created_at = to_timestamp(${madeAt}) - interval '3 minutes'
        WHERE payment_id = ${paymentId}
      `
    )
    // 1,001 other sessions, 40 s of Stripe's time later (still before Kassa's now + 1 minute): newest first, they fill
    // ten pages of 100 ahead of the stuck one.
    fake.advance(40)
    const stripe = new Stripe(shop.stripeKey, {
      apiVersion,
      protocol: fake.protocol,
      host: fake.host,
      port: fake.port,
      maxNetworkRetries: 0,
      telemetry: false
    })
    const other = (index: number) =>
      stripe.checkout.sessions.create({
        mode: "payment",
        line_items: [
          { price_data: { currency: "eur", unit_amount: 100, product_data: { name: "Other" } }, quantity: 1 }
        ],
        client_reference_id: `other-${index}`,
        success_url: "http://127.0.0.1:9/return",
        expires_at: fake.now() + 3_600
      })
    for (let batch = 0; batch < 1_001; batch += 50) {
      await Promise.all(Array.from({ length: Math.min(50, 1_001 - batch) }, (_, i) => other(batch + i)))
    }
    const listed = await stripe.checkout.sessions.list({ limit: 100, created: { gte: madeAt } })
    expect(listed.has_more).toBe(true)
    expect(listed.data.some((session) => session.id === stuck?.id)).toBe(false)

    await reconcile()
    expect(fake.session(String(stuck?.id)).status).toBe("expired")
    expect(await storedStatus(server, paymentId)).toBe("failed")
    expect((await eventsOf(server, paymentId)).map((event) => event.event)).toEqual(["payment.failed"])
  })
})
