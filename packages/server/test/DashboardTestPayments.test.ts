/**
 * A test payment decided from its dashboard page (issue 22 §3), and how every payment was settled. The page's
 * simulate, cancel and refund go through the API's own use cases: the same status change, event and pending webhook
 * delivery, recorded as the dashboard's (`payments.settled_via`) with the member named from the audit log. Refusals
 * are words on the page with a 4xx; viewers see no buttons and get 403; a live payment has none; a forged post
 * changes nothing; another application's payment is 404. Each other path records its own source: the hosted
 * checkout, the API's simulate and cancel, lazy and swept expiry, a create the simulator refused; an old row says
 * "not recorded". A live payment's names its provider (paid at the fake Stripe, through its event). The page's read
 * of the source is one index probe per table.
 */
import { type Ids, SettlementSource } from "@kassa/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { settlementOf } from "../src/dashboard/PaymentSettlement.ts"
import { ExpirySweeper } from "../src/payments/ExpirySweeper.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { linkedApplication } from "./support/LiveLink.ts"
import {
  cancel,
  createPayment,
  eventsOf,
  expireInDatabase,
  fetchPayment,
  holdRowLock,
  paidPayment,
  pendingPayment,
  query,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { annBuyer, annPayer, insertPayment } from "./support/PaymentSeed.ts"
import { capturePlans, indexesOf, seqScansOf } from "./support/PlanCapture.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

/** Text of the page with the template's numeric character references read back. */
const text = (html: string) => html.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))

/** What the page says under "Settled". */
const settledLine = (html: string) => text(/<dt>Settled<\/dt><dd>([\s\S]*?)<\/dd>/.exec(html)?.[1] ?? "")

const simulateButtons = /<button[^>]*name="outcome"[^>]*>Simulate (paid|failed|expired)<\/button>/g

describe.each(databases)("test payments on the dashboard on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  let other: TestApplication
  let developer: DashboardUser
  let viewer: DashboardUser
  let client: DashboardClient

  beforeAll(async () => {
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: "Test payments shop", webhook_url: "https://hooks.example/shop" })
    other = await server.createApplication({ name: "Other shop", webhook_url: "https://hooks.example/other" })
    developer = await createUser(server, { roles: [[shop.application.id, "developer"]] })
    viewer = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    client = await DashboardClient.signIn(server, developer)
  })
  afterAll(() => server.close())

  const app = (suffix = "") => `/dashboard/apps/${shop.application.id}${suffix}`
  const page = (id: string) => app(`/payments/${id}`)

  const settledVia = async (id: string) =>
    (await query(server, (sql) => sql`SELECT settled_via FROM payments WHERE id = ${id}`))[0]?.settled_via ?? null

  const statusOf = async (id: string) => ((await fetchPayment(server, shop.testKey, id)).body as WirePayment).status

  const auditOf = (id: string) =>
    query(server, (sql) => sql`SELECT action, actor, details FROM audit_log WHERE target = ${id} ORDER BY id`)

  /** A live payment written straight into the database (the API cannot pay one without a provider). */
  const livePayment = async (status = "pending") => {
    const id = crypto.randomUUID()
    await insertPayment(server, {
      id,
      application_id: shop.application.id,
      mode: "live",
      status,
      order_reference: `live-${id.slice(0, 8)}`,
      customer: annBuyer,
      payer: status === "pending" ? null : annPayer,
      paid_at: status === "pending" ? null : new Date()
    })
    return id
  }

  it.each(["paid", "failed"] as const)(
    "simulate %s from the page: the status, its event and pending delivery, recorded as the dashboard's by the member",
    async (outcome) => {
      const payment = await pendingPayment(server, shop.testKey)
      const shown = await client.get(page(payment.id))
      expect([...shown.html.matchAll(simulateButtons)].map((match) => match[1])).toEqual(["paid", "failed", "expired"])
      expect(shown.html).toMatch(/>Cancel payment<\/button>/)
      expect(settledLine(shown.html)).toMatch(/^Not settled yet/)

      const done = await client.post(app(`/payments/${payment.id}/simulate`), { outcome })
      expect(done.status, done.html).toBe(303)
      expect(done.location).toBe(`${page(payment.id)}?notice=simulated_${outcome}`)
      expect(await statusOf(payment.id)).toBe(outcome)
      const events = await eventsOf(server, payment.id)
      expect(events.map((event) => [event.event, event.delivery_status, event.deliveries])).toEqual([
        [`payment.${outcome}`, "pending", 1]
      ])
      expect(await settledVia(payment.id)).toBe("dashboard_simulate")
      expect(await auditOf(payment.id)).toEqual([
        { action: "payment.simulated", actor: developer.email, details: { outcome, status: outcome } }
      ])

      const after = await client.get(`${page(payment.id)}?notice=simulated_${outcome}`)
      expect(text(after.html)).toContain(`payment.${outcome}`)
      expect(settledLine(after.html)).toBe(
        `${outcome === "paid" ? "Paid" : "Failed"} by a simulation from the dashboard by ${developer.email}`
      )
      // Decided: no simulate or cancel any more.
      expect(after.html).not.toMatch(simulateButtons)
      expect(after.html).not.toMatch(/>Cancel payment<\/button>/)
    }
  )

  it("paid at the hosted checkout, simulated through the API, cancelled through the API: each says so", async () => {
    const atCheckout = await pendingPayment(server, shop.testKey)
    const checkout = await fetch(`${server.baseUrl}/checkout/${atCheckout.id}`)
    const form = await checkout.text()
    const paid = await fetch(`${server.baseUrl}/checkout/${atCheckout.id}`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: (checkout.headers.get("set-cookie") ?? "").split(";")[0] ?? "",
        origin: server.baseUrl
      },
      body: new URLSearchParams({
        csrf: /name="csrf" value="([^"]+)"/.exec(form)?.[1] ?? "",
        action: "pay",
        name: "Ada Lovelace"
      }).toString()
    })
    expect(paid.status).toBeLessThan(400)
    expect(await settledVia(atCheckout.id)).toBe("checkout")
    expect(settledLine((await client.get(page(atCheckout.id))).html)).toBe(
      "Paid at the hosted checkout (the customer's choice)"
    )

    const byApi = await paidPayment(server, shop.testKey)
    expect(await settledVia(byApi.id)).toBe("api_simulate")
    expect(settledLine((await client.get(page(byApi.id))).html)).toBe("Paid by a simulation through the API")

    const cancelled = await pendingPayment(server, shop.testKey)
    expect((await cancel(server, shop.testKey, cancelled.id)).status).toBe(200)
    expect(await settledVia(cancelled.id)).toBe("api_cancel")
    expect(settledLine((await client.get(page(cancelled.id))).html)).toBe("Cancelled on a cancel through the API")
  })

  it("expiry says whether a read or the sweeper found it due; a create the simulator refused says so", async () => {
    const read = await pendingPayment(server, shop.testKey)
    await expireInDatabase(server, read.id)
    expect(settledLine((await client.get(page(read.id))).html)).toBe("Expired at its expiry (found past it when read)")
    expect(await settledVia(read.id)).toBe("expiry_lazy")

    const swept = await pendingPayment(server, shop.testKey)
    await expireInDatabase(server, swept.id)
    await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
    expect(await settledVia(swept.id)).toBe("expiry_sweeper")
    expect(settledLine((await client.get(page(swept.id))).html)).toBe("Expired at its expiry (the background sweeper)")

    const refused = await createPayment(server, shop.testKey, {}, { "kassa-simulate": "provider_error" })
    expect(refused.status).toBe(502)
    const refusedId = (refused.body as { error: { payment_id: string } }).error.payment_id
    expect(await settledVia(refusedId)).toBe("provider_refused")
    expect(settledLine((await client.get(page(refusedId))).html)).toBe(
      "Failed when created: the payment provider refused it"
    )

    // Settled before Kassa recorded how.
    const old = crypto.randomUUID()
    await insertPayment(server, {
      id: old,
      application_id: shop.application.id,
      status: "paid",
      order_reference: `old-${old.slice(0, 8)}`,
      payer: annPayer,
      paid_at: new Date()
    })
    expect(settledLine((await client.get(page(old))).html)).toMatch(/^Not recorded/)
  })

  it("cancel from the page: cancelled with its event and delivery, recorded as the dashboard's by the member", async () => {
    const payment = await pendingPayment(server, shop.testKey)
    await client.get(page(payment.id))
    const done = await client.post(app(`/payments/${payment.id}/cancel`))
    expect(done.status, done.html).toBe(303)
    expect(done.location).toBe(`${page(payment.id)}?notice=test_cancelled`)
    expect(await statusOf(payment.id)).toBe("cancelled")
    expect((await eventsOf(server, payment.id)).map((event) => [event.event, event.deliveries])).toEqual([
      ["payment.cancelled", 1]
    ])
    expect(await settledVia(payment.id)).toBe("dashboard_cancel")
    expect((await auditOf(payment.id)).map((entry) => entry.action)).toEqual(["payment.cancelled"])
    const after = await client.get(`${page(payment.id)}?notice=test_cancelled`)
    expect(text(after.html)).toContain("The test payment is cancelled")
    expect(settledLine(after.html)).toBe(`Cancelled on a cancel from the dashboard by ${developer.email}`)
  })

  it("refund from the page, in part then the rest: at once, with events, by the member; too much is words and 422", async () => {
    const payment = await paidPayment(server, shop.testKey, { amount: 1000 })
    const shown = await client.get(page(payment.id))
    expect(shown.html).toMatch(/>Refund<\/button>/)

    const part = await client.post(app(`/payments/${payment.id}/refunds`), { amount: "400", reason: "damaged" })
    expect(part.status, part.html).toBe(303)
    expect(part.location).toBe(`${page(payment.id)}?notice=test_refunded`)
    expect(await statusOf(payment.id)).toBe("partially_refunded")

    const tooMuch = await client.post(app(`/payments/${payment.id}/refunds`), { amount: "601", reason: "" })
    expect(tooMuch.status).toBe(422)
    expect(text(tooMuch.html)).toContain("That is more than can be refunded: at most 600")

    const rest = await client.post(app(`/payments/${payment.id}/refunds`), { amount: "600", reason: "" })
    expect(rest.status, rest.html).toBe(303)
    const refunded = (await fetchPayment(server, shop.testKey, payment.id)).body as WirePayment
    expect(refunded.status).toBe("refunded")
    expect(refunded.refunds.map((entry) => [entry.amount, entry.status, entry.reason])).toEqual([
      [400, "succeeded", "damaged"],
      [600, "succeeded", null]
    ])
    expect((await eventsOf(server, payment.id)).map((event) => [event.event, event.deliveries])).toEqual([
      ["payment.paid", 1],
      ["payment.partially_refunded", 1],
      ["payment.refunded", 1]
    ])
    const audited = await auditOf(payment.id)
    expect(audited.map((entry) => [entry.action, entry.actor, (entry.details as { amount: number }).amount])).toEqual([
      ["refund.requested", developer.email, 400],
      ["refund.requested", developer.email, 600]
    ])
    // The refunds' "By" column names the member; the payment was settled by the API's simulate.
    const after = await client.get(page(payment.id))
    expect(after.html.match(new RegExp(developer.email.replace(/\./g, "\\."), "g"))?.length).toBeGreaterThanOrEqual(2)
    expect(settledLine(after.html)).toBe("Paid by a simulation through the API")

    const again = await client.post(app(`/payments/${payment.id}/refunds`), { amount: "1", reason: "" })
    expect(again.status).toBe(409)
    expect(text(again.html)).toContain(
      "This payment is refunded; only paid or partially refunded payments can be refunded."
    )
  })

  it("refusals are words with a 4xx: not pending any more, an unknown outcome, a pending payment's refund", async () => {
    const paid = await paidPayment(server, shop.testKey)
    await client.get(page(paid.id))
    const simulated = await client.post(app(`/payments/${paid.id}/simulate`), { outcome: "failed" })
    expect(simulated.status).toBe(409)
    expect(text(simulated.html)).toContain("This payment is paid: only pending payments can be simulated or cancelled.")
    const cancelled = await client.post(app(`/payments/${paid.id}/cancel`))
    expect(cancelled.status).toBe(409)
    expect(text(cancelled.html)).toContain("This payment is paid: only pending payments can be simulated or cancelled.")
    expect(await statusOf(paid.id)).toBe("paid")

    const pending = await pendingPayment(server, shop.testKey)
    await client.get(page(pending.id))
    const unknown = await client.post(app(`/payments/${pending.id}/simulate`), { outcome: "refunded" })
    expect(unknown.status).toBe(422)
    expect(text(unknown.html)).toContain("Choose an outcome to simulate: paid, failed, expired.")
    const early = await client.post(app(`/payments/${pending.id}/refunds`), { amount: "100", reason: "" })
    expect(early.status).toBe(409)
    expect(text(early.html)).toContain("This payment is pending; only paid or partially refunded payments can be")
    expect(await statusOf(pending.id)).toBe("pending")
    expect(await eventsOf(server, pending.id)).toEqual([])
    expect(await auditOf(pending.id)).toEqual([])
  })

  // Holding a row lock needs a second connection: PostgreSQL only (PGlite serves one), so PGlite has no such test.
  if (database === "postgres")
    it("a payment another request holds: busy in words, 409, nothing changed", async () => {
      const payment = await pendingPayment(server, shop.testKey)
      await client.get(page(payment.id))
      const lock = await holdRowLock(server, payment.id)
      try {
        for (const path of ["simulate", "cancel"]) {
          const busy = await client.post(app(`/payments/${payment.id}/${path}`), { outcome: "paid" })
          expect(busy.status, path).toBe(409)
          expect(text(busy.html)).toContain("The payment is being changed by another request right now")
        }
      } finally {
        await lock.release()
      }
      expect(await statusOf(payment.id)).toBe("pending")
    })

  it("a viewer sees no buttons and is refused (403) on a forged post; nothing changes", async () => {
    const pending = await pendingPayment(server, shop.testKey)
    const paid = await paidPayment(server, shop.testKey)
    const viewing = await DashboardClient.signIn(server, viewer)
    for (const id of [pending.id, paid.id]) {
      const shown = await viewing.get(page(id))
      expect(shown.status).toBe(200)
      expect(shown.html).not.toMatch(/<button[^>]*>(Simulate \w+|Cancel payment|Refund)<\/button>/)
      // The only form that posts is signing out.
      expect(shown.html.match(/method="post"/g)).toHaveLength(1)
    }
    expect(text((await viewing.get(page(pending.id))).html)).toContain(
      "Your role cannot simulate or cancel test payments."
    )
    for (const [path, fields] of [
      [`/payments/${pending.id}/simulate`, { outcome: "paid" }],
      [`/payments/${pending.id}/cancel`, {}],
      [`/payments/${paid.id}/refunds`, { amount: "100", reason: "" }]
    ] as const)
      expect((await viewing.post(app(path), fields)).status, path).toBe(403)
    expect(await statusOf(pending.id)).toBe("pending")
    expect(((await fetchPayment(server, shop.testKey, paid.id)).body as WirePayment).refunds).toEqual([])
  })

  it("a live payment has no simulate or cancel; a forged one is refused with words and changes nothing", async () => {
    const live = await livePayment()
    const shown = await client.get(page(live))
    expect(shown.status).toBe(200)
    expect(shown.html).not.toMatch(simulateButtons)
    expect(shown.html).not.toMatch(/>Cancel payment<\/button>/)
    for (const path of ["simulate", "cancel"]) {
      const refused = await client.post(app(`/payments/${live}/${path}`), { outcome: "paid" })
      expect(refused.status, path).toBe(409)
      expect(text(refused.html)).toContain("only test payments can be simulated or cancelled here")
    }
    expect(((await fetchPayment(server, shop.liveKey, live)).body as WirePayment).status).toBe("pending")
    expect(await eventsOf(server, live)).toEqual([])
    // A paid live payment keeps its refund request form (asked of the provider).
    expect((await client.get(page(await livePayment("paid")))).html).toMatch(/>Request refund<\/button>/)
  })

  it("a post without the CSRF token, or with another's, is refused (403) and changes nothing", async () => {
    const payment = await pendingPayment(server, shop.testKey)
    await client.get(page(payment.id))
    for (const csrf of [false, "not-the-token"] as const) {
      expect((await client.post(app(`/payments/${payment.id}/simulate`), { outcome: "paid" }, { csrf })).status).toBe(
        403
      )
      expect((await client.post(app(`/payments/${payment.id}/cancel`), {}, { csrf })).status).toBe(403)
    }
    expect(await statusOf(payment.id)).toBe("pending")
    expect(await eventsOf(server, payment.id)).toEqual([])
  })

  it("another application's test payment under this application's path is 404, and stays as it was", async () => {
    const theirs = await pendingPayment(server, other.testKey)
    const theirsPaid = await paidPayment(server, other.testKey)
    await client.get(app())
    expect((await client.get(page(theirs.id))).status).toBe(404)
    expect((await client.post(app(`/payments/${theirs.id}/simulate`), { outcome: "paid" })).status).toBe(404)
    expect((await client.post(app(`/payments/${theirs.id}/cancel`))).status).toBe(404)
    expect((await client.post(app(`/payments/${theirsPaid.id}/refunds`), { amount: "100", reason: "" })).status).toBe(
      404
    )
    expect(((await fetchPayment(server, other.testKey, theirs.id)).body as WirePayment).status).toBe("pending")
    expect(((await fetchPayment(server, other.testKey, theirsPaid.id)).body as WirePayment).refunds).toEqual([])
  })

  it("the CHECK on settled_via admits exactly the core's sources", async () => {
    const [row] = await query(
      server,
      (sql) => sql`
        SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
        WHERE conrelid = 'payments'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%settled_via%'
      `
    )
    const listed = [...String(row?.definition).matchAll(/'([a-z_]+)'/g)].map((match) => match[1])
    expect(new Set(listed)).toEqual(new Set(SettlementSource.SettlementSource.literals))
    const payment = await pendingPayment(server, shop.testKey)
    await expect(
      query(server, (sql) => sql`UPDATE payments SET settled_via = 'wishful_thinking' WHERE id = ${payment.id}`)
    ).rejects.toThrow()
  })

  it("the page reads how a payment was settled by the payment's key and the audit log's partial index", async () => {
    const payment = await pendingPayment(server, shop.testKey)
    await client.get(page(payment.id))
    await client.post(app(`/payments/${payment.id}/simulate`), { outcome: "paid" })
    // Others' entries, so that the index has something to skip.
    await query(
      server,
      (sql) => sql`
        INSERT INTO audit_log (at, actor, action, application_id, target, details)
        SELECT now(), 'someone@shop.example', CASE WHEN i % 2 = 0 THEN 'payment.simulated' ELSE 'delivery.resent' END,
          ${shop.application.id}, gen_random_uuid()::text, '{}'
        FROM generate_series(1, 2000) i
      `
    )
    await query(server, (sql) => sql`ANALYZE audit_log`)
    const { result, plans } = await server.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        capturePlans(settlementOf(sql, payment.id as Ids.PaymentId), { settings: ["enable_seqscan = off"] })
      )
    )
    expect(result).toEqual({ via: "dashboard_simulate", by: developer.email })
    expect(plans).toHaveLength(1)
    const [plan] = plans
    expect(seqScansOf(plan?.plan ?? { "Node Type": "none" })).toEqual([])
    expect(indexesOf(plan?.plan ?? { "Node Type": "none" })).toEqual(
      expect.arrayContaining(["payments_pkey", "audit_log_payment_settlements"])
    )
  })
})

describe.each(databases)("how a live payment was settled, on its page, on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url }, { passwordCost: testPasswordCost })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const settledVia = async (id: string) =>
    (await query(server, (sql) => sql`SELECT settled_via FROM payments WHERE id = ${id}`))[0]?.settled_via ?? null

  it("paid at Stripe (its event, then Kassa's read) and cancelled through the API, each named with the provider", async () => {
    const shop = await linkedApplication(server, fake)
    const owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, owner)
    const page = (id: string) => `/dashboard/apps/${shop.application.id}/payments/${id}`

    const paid = await pendingPayment(server, shop.liveKey)
    const session = fake.sessions().find((entry) => entry.client_reference_id === paid.id)
    fake.pay(String(session?.id), { name: "Ada Lovelace", email: "ada@example.org" })
    await eventually(async () => (await settledVia(paid.id)) !== null, "the payment to be settled")
    expect(await settledVia(paid.id)).toBe("provider_event")
    const shown = await client.get(page(paid.id))
    expect(settledLine(shown.html)).toBe("Paid at Stripe (webhook)")
    // A live payment: the refund request stays, no simulate or cancel.
    expect(shown.html).toMatch(/>Request refund<\/button>/)
    expect(shown.html).not.toMatch(simulateButtons)

    const cancelled = await pendingPayment(server, shop.liveKey)
    const answer = await cancel(server, shop.liveKey, cancelled.id)
    expect(answer.status, answer.text).toBe(200)
    expect(await settledVia(cancelled.id)).toBe("api_cancel")
    expect(settledLine((await client.get(page(cancelled.id))).html)).toBe("Cancelled on a cancel through the API")
  })
})
