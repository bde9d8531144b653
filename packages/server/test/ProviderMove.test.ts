/**
 * An application moved from Stripe to Mollie with Stripe payments still open (issue 21 §1, decisions §10–§11: "a
 * retired link still settles what it opened"), over real HTTP on both databases with both fakes: new live payments
 * go to Mollie at once; a Stripe payment opened before the move is still read from Stripe with the retired link's
 * key, settles, and is refunded at Stripe.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ProviderReconciler } from "../src/live/ProviderReconciler.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { type FakeMollie, startFakeMollie } from "./support/FakeMollie.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { createPayment, eventsOf, query, storedStatus, type WirePayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("moving an application from Stripe to Mollie on %s", (database) => {
  let stripe: FakeStripe
  let mollie: FakeMollie
  let server: RunningServer
  beforeAll(async () => {
    stripe = await startFakeStripe({ apiVersion })
    mollie = await startFakeMollie()
    server = await startServer(database, { stripeApiUrl: stripe.url, mollieApiUrl: mollie.url })
  })
  afterAll(async () => {
    await server.close()
    await stripe.close()
    await mollie.close()
  })

  it("new payments go to Mollie; a Stripe payment opened before still settles and refunds at Stripe", async () => {
    const shop = await linkedApplication(server, stripe)
    const before = await createPayment(server, shop.liveKey, { return_url: "https://shop.example/done" })
    expect(before.status, before.text).toBe(201)
    const open = before.body as WirePayment
    // The customer reaches Stripe's page (Kassa records the visit and plans its reads) before the move.
    const visit = await fetch(String(open.checkout_url), { redirect: "manual" })
    expect(visit.status).toBe(303)
    const session = stripe.sessions().find((s) => s.client_reference_id === open.id)

    const moved = await operatorRequest(server, `/applications/${shop.application.id}/provider-account`, {
      method: "PUT",
      body: { provider: "mollie", secret_key: mollie.addProfile({ livemode: true }).key }
    })
    expect(moved.status, moved.text).toBe(200)
    expect(moved.body).toMatchObject({ provider: "mollie", webhook_endpoint_id: null, status: "active" })

    const after = await createPayment(server, shop.liveKey, { return_url: "https://shop.example/done" })
    expect(after.status, after.text).toBe(201)
    const atMollie = mollie.payments().find((p) => JSON.stringify(p.metadata).includes((after.body as WirePayment).id))
    expect(atMollie).toBeDefined()
    expect(stripe.sessions().filter((s) => s.client_reference_id === (after.body as WirePayment).id)).toEqual([])

    // Paid at Stripe after the move: the old endpoint is gone, so Kassa learns it from its next read of Stripe.
    stripe.hold()
    stripe.pay(String(session?.id), { name: "Before The Move" })
    // Due a second ago (the database's clock and the server's need not agree to the millisecond); the server's own
    // round may claim it first, and then its read lands a moment later.
    await query(
      server,
      (sql) =>
        sql`UPDATE provider_payments SET next_read_at = now() - interval '1 second' WHERE payment_id = ${open.id}`
    )
    await server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))
    for (let attempt = 0; attempt < 200 && (await storedStatus(server, open.id)) !== "paid"; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(await storedStatus(server, open.id)).toBe("paid")
    expect((await eventsOf(server, open.id)).map((event) => event.event)).toEqual(["payment.paid"])

    const refundsAtStripe = () => stripe.requests.filter((r) => r.method === "POST" && r.path === "/v1/refunds").length
    const refundsBefore = refundsAtStripe()
    const refunded = await operatorRequest(server, `/payments/${open.id}/refunds`, {
      method: "POST",
      body: { amount: 400 }
    })
    expect(refunded.status, refunded.text).toBe(201)
    expect(refundsAtStripe()).toBe(refundsBefore + 1)
    expect(mollie.calls("refunds.create")).toBe(0)
    expect((refunded.body as WirePayment).status).toBe("partially_refunded")
    await stripe.release()
  })
})
