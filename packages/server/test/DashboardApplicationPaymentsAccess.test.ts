/**
 * An application's dashboard (issue #6 §3–4) over HTTP, as a browser uses it — its payments and who may do what: the
 * payments list (filters, pages, expiry), a payment's page, live refund requests (pending, amount reserved, no event;
 * busy, or refused for an unpaid payment); developers manage webhooks and deliveries, viewers read only, other
 * applications' ids are 404, forged posts and signed-out visitors change nothing. The overview, API keys, webhooks
 * and deliveries: DashboardApplicationKeysWebhooks.test.ts.
 */
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { useDashboardApplication } from "./support/DashboardApplicationSupport.ts"
import { DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import {
  eventsOf,
  expireInDatabase,
  fetchPayment,
  holdRowLock,
  paidPayment,
  pendingPayment,
  query,
  storedStatus,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { annBuyer, annPayer, insertPayment } from "./support/PaymentSeed.ts"
import { databases, type RunningServer, type TestApplication } from "./support/TestServer.ts"
import type { WebhookReceiver } from "./support/WebhookReceiver.ts"

describe.each(databases)("an application's dashboard on %s", (database) => {
  const dashboard = useDashboardApplication(database)
  const { ownApplication, app, keysOf, getPayment, deliveryOf, auditOf } = dashboard
  let server: RunningServer
  let receiver: WebhookReceiver
  let shop: TestApplication
  let other: TestApplication
  let owner: DashboardUser
  let developer: DashboardUser
  let viewer: DashboardUser

  beforeAll(() => {
    ;({ server, receiver, shop, other, owner, developer, viewer } = dashboard.setup())
  })

  /**
   * A paid LIVE payment, written straight into the database: live payments are paid by the provider, which this
   * server has no integration for yet, so neither the API nor the checkout can pay one.
   */
  const livePaidPayment = async (applicationId: string, amount = 1000, status = "paid") => {
    const id = crypto.randomUUID()
    await insertPayment(server, {
      id,
      application_id: applicationId,
      mode: "live",
      status,
      amount,
      order_reference: `live-${id.slice(0, 8)}`,
      description: "A live order",
      customer: annBuyer,
      payer: annPayer,
      paid_at: status === "pending" ? null : new Date()
    })
    return id
  }

  describe("payments", () => {
    it("lists payments newest first, filtered by mode, status and order reference, a page at a time", async () => {
      const own = await ownApplication()
      const created: Array<WirePayment> = []
      for (let index = 0; index < 26; index++) created.push(await pendingPayment(server, own.testKey))
      const live = await livePaidPayment(own.application.id)
      const first = await own.client.get(`${own.base}/payments`)
      expect(first.status).toBe(200)
      expect(first.html).toContain(`${own.base}/payments/${live}`)
      // The pager's link, as the browser reads it (the template escapes `=` and `&` in attributes).
      const next = /href="([^"]*starting_after[^"]+)"/
        .exec(first.html)?.[1]
        ?.replaceAll("&#61;", "=")
        .replaceAll("&#38;", "&")
      expect(next).toBeDefined()
      const second = await own.client.get(next ?? "")
      for (const payment of created.slice(0, 2)) {
        expect(second.html).toContain(payment.id)
        expect(first.html).not.toContain(payment.id)
      }
      expect(second.html).not.toContain(created[2]?.id)

      const onlyLive = await own.client.get(`${own.base}/payments?mode=live`)
      expect(onlyLive.html).toContain(live)
      expect(onlyLive.html).not.toContain(created[25]?.id)
      const byReference = await own.client.get(
        `${own.base}/payments?order_reference=${encodeURIComponent(created[3]?.order_reference ?? "")}`
      )
      expect(byReference.html).toContain(created[3]?.id)
      expect(byReference.html).not.toContain(created[4]?.id)
      const paidOnes = await own.client.get(`${own.base}/payments?status=paid`)
      expect(paidOnes.html).toContain(live)
      expect(paidOnes.html).not.toContain(created[25]?.id)
    })

    it("a pending payment past its expiry is listed as expired, never as pending", async () => {
      const own = await ownApplication()
      const payment = await pendingPayment(server, own.testKey)
      await expireInDatabase(server, payment.id)
      expect((await own.client.get(`${own.base}/payments?status=pending`)).html).not.toContain(payment.id)
      expect((await own.client.get(`${own.base}/payments?status=expired`)).html).toContain(payment.id)
      expect(await storedStatus(server, payment.id)).toBe("expired")
    })

    it("a payment's page shows its fields, refunds and events with their deliveries", async () => {
      const own = await ownApplication()
      const payment = await paidPayment(server, own.testKey, {
        amount: 2500,
        description: "Blue <mug>",
        customer: { name: "Eve <script>", email: "eve@shop.example" }
      })
      const refunded = await server.request(`/api/v1/payments/${payment.id}/refunds`, {
        method: "POST",
        key: own.testKey,
        body: { amount: 500, reason: "damaged" }
      })
      expect(refunded.status, refunded.text).toBe(201)
      const delivery = await deliveryOf(payment.id)
      const page = await own.client.get(`${own.base}/payments/${payment.id}`)
      expect(page.status).toBe(200)
      expect(page.html).toContain("€25.00")
      expect(page.html).toContain("Blue &#60;mug&#62;")
      expect(page.html).toContain("Eve &#60;script&#62;")
      expect(page.html).not.toContain("<script>")
      expect(page.html).toContain("damaged")
      expect(page.html).toContain("payment.paid")
      expect(page.html).toContain("payment.partially_refunded")
      expect(page.html).toContain(`${own.base}/deliveries/${delivery.id}`)
      // A test payment is refunded at once, as through the API (test/DashboardTestPayments.test.ts); never a
      // request to a provider.
      expect(page.html).toMatch(/>Refund<\/button>/)
      expect(page.html).not.toContain("Request refund")
    })

    it("a live refund request records a pending refund: no event, status unchanged, its amount reserved", async () => {
      const paymentId = await livePaidPayment(shop.application.id, 1000)
      const client = await DashboardClient.signIn(server, developer)
      const page = await client.get(app(`/payments/${paymentId}`))
      expect(page.html).toContain("Request refund")
      expect(page.html).toContain("minor units of EUR")
      const requested = await client.post(app(`/payments/${paymentId}/refunds`), {
        amount: "400",
        reason: "Returned <item>"
      })
      expect(requested.status, requested.html).toBe(303)
      expect(requested.location).toBe(app(`/payments/${paymentId}?notice=refund_requested`))
      const fetched = await fetchPayment(server, shop.liveKey, paymentId)
      const payment = fetched.body as WirePayment
      expect(payment.status).toBe("paid")
      expect(payment.refunded_amount).toBe(0)
      expect(payment.refunds).toHaveLength(1)
      // The whole entry of decisions §3, as a pending refund reads back through the payment's single statement.
      expect(payment.refunds[0]).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        amount: 400,
        status: "pending",
        reason: "Returned <item>",
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        confirmed_at: null
      })
      expect(await eventsOf(server, paymentId)).toHaveLength(0)
      const [stored] = await query(
        server,
        (sql) => sql`SELECT requested_by FROM refunds WHERE payment_id = ${paymentId}`
      )
      expect(stored?.requested_by).toBe(developer.id)

      const ownerClient = await DashboardClient.signIn(server, owner)
      const shown = await ownerClient.get(requested.location ?? "")
      expect(shown.html).toContain("Refund requested.")
      expect(shown.html).toContain("pending — confirmed by the provider")
      expect(shown.html).toContain(developer.email)
      await client.get(app(`/payments/${paymentId}`))
      // 600 remain refundable: the pending request reserves its 400.
      const over = await client.post(app(`/payments/${paymentId}/refunds`), { amount: "700", reason: "" })
      expect(over.status).toBe(422)
      expect(over.html).toContain("at most 600")
      const bad = await client.post(app(`/payments/${paymentId}/refunds`), { amount: "12.50", reason: "" })
      expect(bad.status).toBe(422)
      expect(bad.html).toContain("whole number of minor units")
      const rest = await client.post(app(`/payments/${paymentId}/refunds`), { amount: "600", reason: "" })
      expect(rest.status).toBe(303)
      const after = (await fetchPayment(server, shop.liveKey, paymentId)).body as WirePayment
      expect(after.refunds.map((refund) => [refund.amount, refund.status])).toEqual([
        [400, "pending"],
        [600, "pending"]
      ])
      expect(after.status).toBe("paid")
      expect(await eventsOf(server, paymentId)).toHaveLength(0)
      expect((await client.post(app(`/payments/${paymentId}/refunds`), { amount: "1", reason: "" })).status).toBe(422)
      const entries = (await auditOf(shop.application.id)).filter(
        (row) => row.action === "refund.requested" && row.target === paymentId
      )
      expect(entries.map((row) => [row.actor, row.details.amount])).toEqual([
        [developer.email, 600],
        [developer.email, 400]
      ])
    })

    // PostgreSQL only: the embedded database has one connection, so a held row lock would make the request wait for
    // it rather than find it taken. (Defined only there, rather than skipped elsewhere.)
    if (database === "postgres")
      it("a refund request for a payment another request holds is 409 busy", async () => {
        const paymentId = await livePaidPayment(shop.application.id, 1000)
        const client = await DashboardClient.signIn(server, owner)
        await client.get(app(`/payments/${paymentId}`))
        // Another writer holds the payment's row lock.
        const hold = await holdRowLock(server, paymentId)
        const busy = await client.post(app(`/payments/${paymentId}/refunds`), { amount: "100", reason: "" })
        await hold.release()
        expect(busy.status).toBe(409)
        expect(busy.html).toContain("being changed by another request")
        expect(((await fetchPayment(server, shop.liveKey, paymentId)).body as WirePayment).refunds).toEqual([])
      })

    it("a live payment that was not paid cannot have a refund requested (409)", async () => {
      const paymentId = await livePaidPayment(shop.application.id, 1000, "pending")
      const client = await DashboardClient.signIn(server, owner)
      const page = await client.get(app(`/payments/${paymentId}`))
      expect(page.html).not.toContain("Request refund")
      const refused = await client.post(app(`/payments/${paymentId}/refunds`), { amount: "100", reason: "" })
      expect(refused.status).toBe(409)
      expect(refused.html).toContain("only paid or partially refunded payments can be refunded")
      expect((await fetchPayment(server, shop.liveKey, paymentId)).body).toMatchObject({ refunds: [] })
    })
  })

  describe("who may do what", () => {
    it("a developer manages webhooks and resends deliveries (not only an owner)", async () => {
      const dev = await ownApplication("Developer's shop", "developer")
      const payment = await paidPayment(server, dev.testKey)
      const delivery = await deliveryOf(payment.id)
      await dev.client.get(`${dev.base}/webhooks`)
      const saved = await dev.client.post(`${dev.base}/webhooks/url`, { url: receiver.url(`${dev.path}-moved`) })
      expect(saved.status, saved.html).toBe(303)
      expect((await dev.client.post(`${dev.base}/webhooks/test`)).status).toBe(303)
      const secret = await dev.client.post(`${dev.base}/webhooks/secret`)
      expect(secret.status).toBe(200)
      expect(secret.html).toMatch(/id="webhook-secret"[^>]*value="whsec_/)
      await dev.client.get(`${dev.base}/deliveries/${delivery.id}`)
      expect((await dev.client.post(`${dev.base}/deliveries/${delivery.id}/resend`)).status).toBe(303)
    })

    it("a viewer sees every page but no action, and every post of theirs is 403 and changes nothing", async () => {
      const livePayment = await livePaidPayment(shop.application.id, 1000)
      const testPayment = await paidPayment(server, shop.testKey)
      const delivery = await deliveryOf(testPayment.id)
      const [key] = await keysOf(shop.application.id)
      const client = await DashboardClient.signIn(server, viewer)
      const pages = {
        overview: app(),
        keys: app("/keys"),
        webhooks: app("/webhooks"),
        deliveries: app("/deliveries"),
        delivery: app(`/deliveries/${delivery.id}`),
        payments: app("/payments"),
        live: app(`/payments/${livePayment}`)
      }
      for (const [name, path] of Object.entries(pages)) {
        const page = await client.get(path)
        expect(page.status, name).toBe(200)
        expect(page.html, name).not.toMatch(
          /<button[^>]*>(Create key|Roll|Revoke|Save URL|Regenerate secret…|Send test event|Resend|Request refund)<\/button>/
        )
        // The only form that posts is signing out.
        expect(page.html.match(/method="post"/g), name).toHaveLength(1)
      }
      // An owner sees the actions the viewer does not.
      const ownerClient = await DashboardClient.signIn(server, owner)
      expect((await ownerClient.get(pages.keys)).html).toMatch(/>Create key<\/button>/)
      expect((await ownerClient.get(pages.webhooks)).html).toMatch(/>Send test event<\/button>/)
      expect((await ownerClient.get(pages.delivery)).html).toMatch(/>Resend<\/button>/)
      expect((await ownerClient.get(pages.live)).html).toMatch(/>Request refund<\/button>/)
      for (const path of [app(`/keys/${key?.id}/roll`), app(`/keys/${key?.id}/revoke`), app("/webhooks/secret")])
        expect((await client.get(path)).status, path).toBe(403)

      const keysBefore = await keysOf(shop.application.id)
      const eventsBefore = await eventsOf(server, testPayment.id)
      const posts: Array<[string, Record<string, string>]> = [
        [app("/keys"), { mode: "test" }],
        [app(`/keys/${key?.id}/roll`), {}],
        [app(`/keys/${key?.id}/revoke`), {}],
        [app("/webhooks/url"), { url: "https://evil.example/hook" }],
        [app("/webhooks/secret"), {}],
        [app("/webhooks/test"), {}],
        [app(`/deliveries/${delivery.id}/resend`), {}],
        [app(`/payments/${livePayment}/refunds`), { amount: "100", reason: "" }]
      ]
      for (const [path, fields] of posts) expect((await client.post(path, fields)).status, path).toBe(403)
      expect(await keysOf(shop.application.id)).toEqual(keysBefore)
      expect(await eventsOf(server, testPayment.id)).toEqual(eventsBefore)
      const stored = await server.run(Effect.flatMap(ApplicationRepository, (apps) => apps.find(shop.application.id)))
      expect(stored._tag === "Some" && stored.value.webhook_url).toBe(receiver.url("/shop"))
      expect(((await fetchPayment(server, shop.liveKey, livePayment)).body as WirePayment).refunds).toEqual([])
      expect((await getPayment(shop.testKey, testPayment.id)).status).toBe(200)
    })

    it("another application's keys, deliveries and payments under this application's path are 404", async () => {
      const otherPayment = await paidPayment(server, other.testKey)
      const otherLive = await livePaidPayment(other.application.id)
      const otherDelivery = await deliveryOf(otherPayment.id)
      const [otherKey] = await keysOf(other.application.id)
      const client = await DashboardClient.signIn(server, owner)
      await client.get(app())
      for (const path of [
        app(`/keys/${otherKey?.id}/roll`),
        app(`/keys/${otherKey?.id}/revoke`),
        app(`/deliveries/${otherDelivery.id}`),
        app(`/payments/${otherPayment.id}`),
        app(`/payments/${otherLive}`),
        app("/payments/not-a-uuid"),
        app("/deliveries/not-a-uuid")
      ])
        expect((await client.get(path)).status, path).toBe(404)
      for (const path of [
        app(`/keys/${otherKey?.id}/roll`),
        app(`/keys/${otherKey?.id}/revoke`),
        app(`/deliveries/${otherDelivery.id}/resend`),
        app(`/payments/${otherLive}/refunds`)
      ])
        expect((await client.post(path, { amount: "100" })).status, path).toBe(404)
      expect((await getPayment(other.testKey, otherPayment.id)).status).toBe(200)
      expect(((await fetchPayment(server, other.liveKey, otherLive)).body as WirePayment).refunds).toEqual([])
      // And the other application's pages themselves are 404 for this owner.
      expect((await client.get(`/dashboard/apps/${other.application.id}/keys`)).status).toBe(404)
    })

    it("forged posts (no token, a wrong token, another site) are refused with 403 and change nothing", async () => {
      const own = await ownApplication()
      await own.client.get(`${own.base}/keys`)
      const before = await keysOf(own.application.id)
      const forgeries = [
        { csrf: false as const },
        { csrf: "not-the-token" },
        { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } }
      ]
      for (const options of forgeries) {
        expect((await own.client.post(`${own.base}/keys`, { mode: "live" }, options)).status).toBe(403)
        expect(
          (await own.client.post(`${own.base}/webhooks/url`, { url: "https://evil.example/hook" }, options)).status
        ).toBe(403)
        expect((await own.client.post(`${own.base}/keys/${before[0]?.id}/revoke`, {}, options)).status).toBe(403)
        expect((await own.client.post(`${own.base}/webhooks/secret`, {}, options)).status).toBe(403)
      }
      expect(await keysOf(own.application.id)).toEqual(before)
      const stored = await server.run(Effect.flatMap(ApplicationRepository, (apps) => apps.find(own.application.id)))
      expect(stored._tag === "Some" && stored.value.webhook_url).toBe(receiver.url(own.path))
      const secrets = await server.run(
        Effect.flatMap(ApplicationRepository, (apps) => apps.webhookSecrets(own.application.id))
      )
      expect(secrets._tag === "Some" && secrets.value.current).toBe(own.webhookSecret)
      expect(await auditOf(own.application.id)).toEqual([])
    })

    it("signed-out visitors are sent to sign in, and unknown methods on known paths get 405", async () => {
      const anonymous = new DashboardClient(server.baseUrl)
      const page = await anonymous.get(app("/keys"))
      expect(page.status).toBe(303)
      expect(page.location).toMatch(/^\/dashboard\/login\?next=/)
      const post = await anonymous.post(app("/keys"), { mode: "test" })
      expect(post.status).toBe(303)
      expect((await keysOf(shop.application.id)).length).toBeGreaterThan(0)
      const wrong = await fetch(`${server.baseUrl}${app("/webhooks/url")}`)
      expect(wrong.status).toBe(405)
      expect(wrong.headers.get("allow")).toBe("POST")
    })
  })
})
