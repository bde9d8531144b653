/**
 * What operators see of live payments at Stripe (issue 12 §5, decisions §10 "Seen by operators") over real HTTP, on
 * both databases, with the fake Stripe behind `KASSA_STRIPE_API_URL`: a live payment's page shows its session and
 * payment intent ids and Stripe's last answer (escaped); the operator's "At Stripe" page lists open discrepancies and
 * overdue reads; "Read from Stripe now" settles an overdue payment Stripe says is paid (with its event), and is
 * refused without the CSRF token and to anyone but an operator admin; another application's owner sees none of it.
 *
 * The pending live payment is inserted as Kassa holds one after live create (support/LivePaymentFixture.ts does the
 * same for paid ones): its Checkout Session is made and paid at the fake Stripe, so only Kassa has not heard of it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { type LinkedApplication, linkedApplication } from "./support/LiveLink.ts"
import { paidSession } from "./support/LivePaymentFixture.ts"
import { eventsOf, query } from "./support/PaymentFixtures.ts"
import { annBuyer, insertPayment } from "./support/PaymentSeed.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

const hostile = "<script>alert(1)</script>"

describe.each(databases)("the dashboard's view of Stripe on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  let admin: DashboardUser
  let operatorClient: DashboardClient

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url }, { passwordCost: testPasswordCost })
    // Stripe's events are held (never sent): these payments are the ones whose events were lost.
    fake.hold()
    admin = await createUser(server, { operatorAdmin: true })
    operatorClient = await DashboardClient.signIn(server, admin)
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  /**
   * A pending live payment Stripe last answered for two hours ago (its answer carries markup), with its next read
   * leased an hour ahead as a failing background round leaves it — so the background does not read it meanwhile.
   */
  const overduePayment = async (linked: LinkedApplication) => {
    const { sessionId, paymentIntentId } = await paidSession(fake, linked.stripeKey)
    const id = crypto.randomUUID()
    await insertPayment(server, {
      id,
      application_id: linked.application.id,
      mode: "live",
      order_reference: `live-${id.slice(0, 8)}`,
      description: "A live order",
      customer: annBuyer
    })
    await query(
      server,
      (sql) => sql`
        INSERT INTO provider_payments (payment_id, link_id, state, checkout_id, provider_payment_id, idempotency_key,
          visit_ip, visit_user_agent, visited_at, next_read_at, last_read_at, last_answer, created_at, updated_at)
        VALUES (${id}, ${linked.linkId}, 'open', ${sessionId}, ${paymentIntentId}, ${`kassa-${id}`},
          '203.0.113.9', 'Test', now() - interval '2 hours', now() + interval '1 hour', now() - interval '2 hours',
          ${JSON.stringify({ status: "open", note: hostile })}::jsonb, now(), now())
      `
    )
    return { id, sessionId, paymentIntentId }
  }

  const statusOf = async (id: string) =>
    String((await query(server, (sql) => sql`SELECT status FROM payments WHERE id = ${id}`))[0]?.status)

  it("shows a live payment's Stripe ids and last answer, escaped, to its owner", async () => {
    const linked = await linkedApplication(server, fake)
    const payment = await overduePayment(linked)
    const owner = await createUser(server, { roles: [[linked.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, owner)
    const page = await client.get(`/dashboard/apps/${linked.application.id}/payments/${payment.id}`)
    expect(page.status, page.html).toBe(200)
    expect(page.html).toContain("At Stripe")
    expect(page.html).toContain("<dt>Checkout</dt><dd>opened at Stripe</dd>")
    expect(page.html).toContain(payment.sessionId)
    expect(page.html).toContain(payment.paymentIntentId)
    expect(page.html).toContain("&#60;script&#62;alert(1)&#60;/script&#62;")
    expect(page.html).not.toContain(hostile)

    // Another application's owner sees neither the payment nor the operator's page, and cannot read it now.
    const other = await server.createApplication()
    const stranger = await createUser(server, { roles: [[other.application.id, "owner"]] })
    const strangerClient = await DashboardClient.signIn(server, stranger)
    expect((await strangerClient.get(`/dashboard/apps/${linked.application.id}/payments/${payment.id}`)).status).toBe(
      404
    )
    const list = await strangerClient.get("/dashboard/operator/provider")
    expect(list.status).toBe(404)
    expect(list.html).not.toContain(payment.id)
    const read = await strangerClient.post("/dashboard/operator/provider/read", { payment_id: payment.id })
    expect(read.status).toBe(404)
    expect(await statusOf(payment.id)).toBe("pending")
  })

  it("lists open discrepancies, escaped, and leaves resolved ones out", async () => {
    const linked = await linkedApplication(server, fake)
    const payment = await overduePayment(linked)
    await query(
      server,
      (sql) => sql`
        INSERT INTO provider_discrepancies (payment_id, kind, message, detected_at)
        VALUES (${payment.id}, 'amount_mismatch', ${`Stripe says 999 ${hostile}`}, now()),
               (${payment.id}, 'resolved_kind', 'already resolved', now() - interval '1 day')
      `
    )
    await query(
      server,
      (sql) => sql`UPDATE provider_discrepancies SET resolved_at = now() WHERE kind = 'resolved_kind'`
    )
    const page = await operatorClient.get("/dashboard/operator/provider")
    expect(page.status, page.html).toBe(200)
    expect(page.html).toContain("amount_mismatch")
    expect(page.html).toContain("Stripe says 999 &#60;script&#62;alert(1)&#60;/script&#62;")
    expect(page.html).not.toContain(hostile)
    expect(page.html).not.toContain("resolved_kind")
    expect(page.html).toContain('href="/dashboard/operator/provider"')
  })

  it("refunds a 'paid after final' payment in full at Stripe with one click: once, audited, the payment unchanged", async () => {
    const linked = await linkedApplication(server, fake)
    const payment = await overduePayment(linked)
    // Kassa cancelled it; the customer paid at Stripe anyway (decisions §11, "paid after cancel").
    await query(server, (sql) => sql`UPDATE payments SET status = 'cancelled' WHERE id = ${payment.id}`)
    const [row] = await query(
      server,
      (sql) => sql`
        INSERT INTO provider_discrepancies (payment_id, kind, message, detected_at)
        VALUES (${payment.id}, 'paid_after_final', 'The provider took the money of a cancelled payment', now())
        RETURNING id
      `
    )
    const discrepancyId = String(row?.id)
    const page = await operatorClient.get("/dashboard/operator/provider")
    expect(page.html).toContain("<td>Stripe</td>")
    expect(page.html).toContain("paid after final")
    expect(page.html).toContain("Refund in full at Stripe")
    const refundCalls = () =>
      fake.requests.filter((request) => request.method === "POST" && request.path === "/v1/refunds").length
    const before = refundCalls()

    const forged = await operatorClient.post(
      "/dashboard/operator/provider/refund",
      { discrepancy_id: discrepancyId },
      { csrf: false }
    )
    expect(forged.status).toBe(403)
    expect(refundCalls()).toBe(before)

    const refunded = await operatorClient.post("/dashboard/operator/provider/refund", { discrepancy_id: discrepancyId })
    expect(refunded.status, refunded.html).toBe(303)
    expect(refunded.location).toBe("/dashboard/operator/provider?notice=discrepancy_refunded")
    expect(refundCalls()).toBe(before + 1)
    const [resolved] = await query(
      server,
      (sql) => sql`SELECT resolved_at, resolution FROM provider_discrepancies WHERE id = ${discrepancyId}`
    )
    expect(resolved?.resolved_at).not.toBeNull()
    expect(String(resolved?.resolution)).toMatch(/^Refunded 10\.00 EUR at Stripe \(re_/)
    expect(await statusOf(payment.id)).toBe("cancelled")
    expect((await eventsOf(server, payment.id)).map((event) => event.event)).toEqual([])

    // Clicked again (a second tab): nothing more is refunded, and the page says why.
    const again = await operatorClient.post("/dashboard/operator/provider/refund", { discrepancy_id: discrepancyId })
    expect(again.status).toBe(200)
    expect(again.html).toContain("Only an open")
    expect(refundCalls()).toBe(before + 1)
    const [audited] = await query(
      server,
      (sql) =>
        sql`SELECT actor, details FROM audit_log WHERE action = 'provider.discrepancy_refund' AND target = ${payment.id} ORDER BY id`
    )
    expect(audited?.actor).toBe(admin.email)
    expect(JSON.stringify(audited?.details)).toContain("Refunded")

    const unknown = await operatorClient.post("/dashboard/operator/provider/refund", { discrepancy_id: "999999999" })
    expect(unknown.status).toBe(404)
  })

  it("reads an overdue payment from Stripe now: paid, with its event, and audited", async () => {
    const linked = await linkedApplication(server, fake)
    const payment = await overduePayment(linked)
    const before = await operatorClient.get("/dashboard/operator/provider")
    expect(before.html).toContain(payment.id)

    // Without the CSRF token nothing is read.
    const forged = await operatorClient.post(
      "/dashboard/operator/provider/read",
      { payment_id: payment.id },
      { csrf: false }
    )
    expect(forged.status).toBe(403)
    expect(await statusOf(payment.id)).toBe("pending")

    // An owner of the payment's own application is no operator admin: 404.
    const owner = await createUser(server, { roles: [[linked.application.id, "owner"]] })
    const ownerClient = await DashboardClient.signIn(server, owner)
    await ownerClient.get(`/dashboard/apps/${linked.application.id}/payments/${payment.id}`)
    const refused = await ownerClient.post("/dashboard/operator/provider/read", { payment_id: payment.id })
    expect(refused.status).toBe(404)
    expect(await statusOf(payment.id)).toBe("pending")

    await operatorClient.get("/dashboard/operator/provider")
    const read = await operatorClient.post("/dashboard/operator/provider/read", { payment_id: payment.id })
    expect(read.status, read.html).toBe(303)
    expect(read.location).toBe("/dashboard/operator/provider?notice=provider_read")
    expect(await statusOf(payment.id)).toBe("paid")
    // How it was settled, as its page says (issue 22 §3).
    const [settled] = await query(server, (sql) => sql`SELECT settled_via FROM payments WHERE id = ${payment.id}`)
    expect(settled?.settled_via).toBe("operator_read")
    const events = await eventsOf(server, payment.id)
    expect(events.map((event) => event.event)).toEqual(["payment.paid"])
    const after = await operatorClient.get("/dashboard/operator/provider?notice=provider_read")
    expect(after.html).toContain("Kassa read it from the provider now")
    expect(after.html).not.toContain(payment.id)
    const [audited] = await query(
      server,
      (sql) =>
        sql`SELECT actor, application_id, details FROM audit_log WHERE action = 'provider.read_now' AND target = ${payment.id}`
    )
    expect(audited?.actor).toBe(admin.email)
    expect(String(audited?.application_id)).toBe(linked.application.id)

    // An unknown payment is 404, not a 500.
    const unknown = await operatorClient.post("/dashboard/operator/provider/read", { payment_id: crypto.randomUUID() })
    expect(unknown.status).toBe(404)
  })
})
