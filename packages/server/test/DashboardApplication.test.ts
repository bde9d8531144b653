/**
 * An application's dashboard (issue #6 §3–4) over HTTP, as a browser uses it: API keys shown once and effective at
 * once on the merchant API, the webhook URL and secret, a test event through the real delivery engine, deliveries
 * with the receiver's answer escaped, resend, live refund requests, and who may do what — viewers read only, other
 * applications' ids are 404, forged posts change nothing, and every action is in the audit log.
 */
import { verify } from "@kassa/webhook-verify"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import {
  eventsOf,
  expireInDatabase,
  fetchPayment,
  holdRowLock,
  paidPayment,
  pendingPayment,
  query,
  storedStatus,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { annBuyer, annPayer, insertPayment } from "./support/PaymentSeed.ts"
import {
  databases,
  freePort,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

let paths = 0

/** Polls `check` until it returns a value, or fails after `timeoutMs`. */
const eventually = async <A>(check: () => Promise<A | undefined>, what: string, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const value = await check()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe.each(databases)("an application's dashboard on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let shop: TestApplication
  let other: TestApplication
  let owner: DashboardUser
  let developer: DashboardUser
  let viewer: DashboardUser

  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    // Password hashes at the test cost: nothing here is about the hasher's pace, and at production cost every
    // sign-in and new user is 0.4 s of CPU. The production server below hashes at full cost.
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: "Dashboard shop", webhook_url: receiver.url("/shop") })
    other = await server.createApplication({ name: "Other shop", webhook_url: receiver.url("/other") })
    owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    developer = await createUser(server, { roles: [[shop.application.id, "developer"]] })
    viewer = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  /** A fresh application of its own, with webhooks to its own path on the receiver, and its owner signed in. */
  const ownApplication = async (name = "Own shop", role: "owner" | "developer" = "owner") => {
    const path = `/app-${paths++}`
    const created = await server.createApplication({ name, webhook_url: receiver.url(path) })
    const user = await createUser(server, { roles: [[created.application.id, role]] })
    const client = await DashboardClient.signIn(server, user)
    return { ...created, path, user, client, base: `/dashboard/apps/${created.application.id}` }
  }

  const app = (suffix = "") => `/dashboard/apps/${shop.application.id}${suffix}`

  const keysOf = (applicationId: string) =>
    server.run(Effect.flatMap(ApiKeyRepository, (keys) => keys.list(applicationId as never)))

  const issuedKey = (html: string) => /id="issued-key"[^>]*value="(pk_(?:test|live)_[0-9A-Za-z]{32})"/.exec(html)?.[1]

  const getPayment = (key: string, id: string) => server.request(`/api/v1/payments/${id}`, { key })

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

  /** The delivery of a payment's only (or first) event, once it has `attempts` attempts. */
  const deliveryOf = (paymentId: string, attempts = 1) =>
    eventually(async () => {
      const rows = await query(
        server,
        (sql) => sql`
          SELECT d.id, d.status, e.id AS event_id, (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
          FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = ${paymentId}
          ORDER BY e.created_at LIMIT 1
        `
      )
      const row = rows[0]
      return row !== undefined && Number(row.attempts) >= attempts
        ? { id: String(row.id), status: String(row.status), eventId: String(row.event_id) }
        : undefined
    }, `${attempts} attempt(s) of the delivery of ${paymentId}`)

  const auditOf = async (applicationId: string) => {
    const answer = await server.request(`/admin/api/v1/audit?limit=100&application_id=${applicationId}`, {
      key: server.adminToken
    })
    expect(answer.status, answer.text).toBe(200)
    // The dashboard's entries only: the setup's operator API calls (users, memberships) are recorded too.
    return (
      answer.body as {
        data: Array<{ actor: string; action: string; target: string | null; details: Record<string, unknown> }>
      }
    ).data.filter((entry) => entry.actor !== "admin token")
  }

  it("the overview shows the application's status, its last 30 days and its members", async () => {
    await paidPayment(server, shop.testKey)
    const client = await DashboardClient.signIn(server, viewer)
    const page = await client.get(app())
    expect(page.status).toBe(200)
    expect(page.html).toContain("Dashboard shop")
    expect(page.html).toContain("Payments, last 30 days")
    expect(page.html).toContain("Deliveries failing")
    for (const member of [owner, developer, viewer]) expect(page.html).toContain(member.email)
    for (const section of ["/keys", "/webhooks", "/deliveries", "/payments"]) expect(page.html).toContain(app(section))
  })

  describe("API keys", () => {
    it("a developer creates a key: shown whole once with a copy button, then only its display form", async () => {
      const client = await DashboardClient.signIn(server, developer)
      expect((await client.get(app("/keys"))).status).toBe(200)
      const created = await client.post(app("/keys"), { mode: "test" })
      expect(created.status, created.html).toBe(200)
      // A page with a secret on it is kept by no cache (browser back button, proxies).
      expect(created.headers.get("cache-control")).toBe("no-store")
      const key = issuedKey(created.html)
      expect(key).toBeDefined()
      expect(created.html).toContain('data-copy="issued-key"')
      expect(created.html).toContain("will not be shown again")
      // It works on the merchant API at once.
      const payment = await pendingPayment(server, key ?? "")
      expect((await getPayment(key ?? "", payment.id)).status).toBe(200)
      // Afterwards: only the display form, on every page.
      const record = (await keysOf(shop.application.id)).find((entry) => key?.endsWith(entry.display.slice(-4)))
      expect(record?.display).toBe(`${key?.slice(0, 12)}…${key?.slice(-4)}`)
      const list = await client.get(app("/keys"))
      expect(list.html).toContain(record?.display)
      for (const path of ["", "/keys", "/webhooks", "/deliveries", "/payments", `/payments/${payment.id}`]) {
        const later = await client.get(app(path))
        expect(later.status, path).toBe(200)
        expect(later.html, path).not.toContain(key)
      }
      const audit = await auditOf(shop.application.id)
      const entry = audit.find((row) => row.action === "api_key.issued" && row.target === record?.id)
      expect(entry?.actor).toBe(developer.email)
      expect(JSON.stringify(audit)).not.toContain(key)
    })

    it("rolling asks first, then revokes the old key at once (401) and shows the working new one once", async () => {
      const own = await ownApplication()
      const payment = await pendingPayment(server, own.testKey)
      const [record] = (await keysOf(own.application.id)).filter((entry) => entry.mode === "test")
      const confirm = await own.client.get(`${own.base}/keys/${record?.id}/roll`)
      expect(confirm.status).toBe(200)
      expect(confirm.html).toContain("Roll this key?")
      expect(confirm.html).toContain(record?.display)
      // Asking changes nothing.
      expect((await getPayment(own.testKey, payment.id)).status).toBe(200)
      const rolled = await own.client.post(`${own.base}/keys/${record?.id}/roll`)
      expect(rolled.status, rolled.html).toBe(200)
      const newKey = issuedKey(rolled.html) ?? ""
      expect(newKey).toMatch(/^pk_test_/)
      const old = await getPayment(own.testKey, payment.id)
      expect(old.status).toBe(401)
      expect((old.body as WireError).error.code).toBe("invalid_api_key")
      expect((await getPayment(newKey, payment.id)).status).toBe(200)
      // A rolled key cannot be rolled again.
      expect((await own.client.post(`${own.base}/keys/${record?.id}/roll`)).status).toBe(409)
      const actions = (await auditOf(own.application.id)).map((entry) => [entry.action, entry.actor])
      expect(actions).toContainEqual(["api_key.rolled", own.user.email])
    })

    it("revoking asks first, then the key gets 401 at once", async () => {
      const own = await ownApplication()
      const payment = await pendingPayment(server, own.testKey)
      const [record] = (await keysOf(own.application.id)).filter((entry) => entry.mode === "test")
      const confirm = await own.client.get(`${own.base}/keys/${record?.id}/revoke`)
      expect(confirm.status).toBe(200)
      expect(confirm.html).toContain("Revoke this key?")
      const revoked = await own.client.post(`${own.base}/keys/${record?.id}/revoke`)
      expect(revoked.status).toBe(303)
      expect(revoked.location).toBe(`${own.base}/keys?notice=key_revoked`)
      const answer = await getPayment(own.testKey, payment.id)
      expect(answer.status).toBe(401)
      expect((answer.body as WireError).error.code).toBe("invalid_api_key")
      const list = await own.client.get(revoked.location ?? "")
      expect(list.html).toContain("Requests with it now get")
      expect(list.html).toContain("Revoked keys")
      expect((await auditOf(own.application.id)).map((entry) => entry.action)).toContain("api_key.revoked")
    })
  })

  describe("webhooks", () => {
    it("a bad URL is refused next to the field (422); a saved URL is used by the next delivery", async () => {
      const own = await ownApplication()
      expect((await own.client.get(`${own.base}/webhooks`)).status).toBe(200)
      for (const url of [
        "not a url",
        "ftp://shop.example/hook",
        "/relative/path",
        `https://x.example/${"a".repeat(2050)}`
      ]) {
        const refused = await own.client.post(`${own.base}/webhooks/url`, { url })
        expect(refused.status, url).toBe(422)
        expect(refused.html).toMatch(/id="field-url-error"/)
        expect(refused.html).toContain('aria-invalid="true"')
      }
      const stored = await server.run(Effect.flatMap(ApplicationRepository, (apps) => apps.find(own.application.id)))
      expect(stored._tag === "Some" && stored.value.webhook_url).toBe(receiver.url(own.path))

      const changed = receiver.url(`${own.path}-changed`)
      const saved = await own.client.post(`${own.base}/webhooks/url`, { url: changed })
      expect(saved.status).toBe(303)
      expect(saved.location).toBe(`${own.base}/webhooks?notice=url_saved`)
      const page = await own.client.get(saved.location ?? "")
      expect(page.html).toContain("Webhook URL saved")
      expect(page.html).toContain(`value="${changed.replaceAll("=", "&#61;")}"`)
      await paidPayment(server, own.testKey)
      const [request] = await receiver.waitFor(1, `${own.path}-changed`)
      expect(request?.headers["x-service-event"]).toBe("payment.paid")
      const entry = (await auditOf(own.application.id)).find((row) => row.action === "webhook.url_updated")
      expect(entry?.actor).toBe(own.user.email)
      expect(entry?.details.to).toBe(changed)
    })

    it("webhook URLs must be https in production (decisions §7): the page refuses http and keeps the URL", async () => {
      const production = await startServer(database, { environment: "production" })
      try {
        const { application } = await production.createApplication({ webhook_url: "https://shop.example/hook" })
        const user = await createUser(production, { roles: [[application.id, "owner"]] })
        const client = await DashboardClient.signIn(production, user)
        const base = `/dashboard/apps/${application.id}`
        await client.get(`${base}/webhooks`)
        const refused = await client.post(`${base}/webhooks/url`, { url: "http://shop.example/hook" })
        expect(refused.status).toBe(422)
        expect(refused.html).toContain("https in production")
        const stored = await production.request(`/admin/api/v1/applications/${application.id}`, {
          key: production.adminToken
        })
        expect((stored.body as { webhook_url: string }).webhook_url).toBe("https://shop.example/hook")
        const saved = await client.post(`${base}/webhooks/url`, { url: "https://shop.example/other" })
        expect(saved.status).toBe(303)
      } finally {
        await production.close()
      }
    })

    it("regenerating the secret asks first, shows the new one once, and signs the next events with it", async () => {
      const own = await ownApplication()
      const confirm = await own.client.get(`${own.base}/webhooks/secret`)
      expect(confirm.status).toBe(200)
      expect(confirm.html).toContain("Regenerate the signing secret?")
      const shown = await own.client.post(`${own.base}/webhooks/secret`)
      expect(shown.status).toBe(200)
      const secret = /id="webhook-secret"[^>]*value="(whsec_[0-9A-Za-z]{32})"/.exec(shown.html)?.[1] ?? ""
      expect(secret).not.toBe("")
      expect(secret).not.toBe(own.webhookSecret)
      expect(shown.html).toContain("will not be shown again")
      expect(shown.headers.get("cache-control")).toBe("no-store")
      expect(shown.html).toContain("24 hours")
      expect(shown.html).toContain('data-copy="webhook-secret"')
      const page = await own.client.get(`${own.base}/webhooks`)
      expect(page.html).not.toContain(secret)
      expect(page.html).toContain("still signs too")
      // Events now carry the new secret's signature (and the previous one's, for 24 h).
      await paidPayment(server, own.testKey)
      const [request] = await receiver.waitFor(1, own.path)
      const signature = String(request?.headers["x-service-signature"])
      await expect(verify(request?.body ?? "", signature, secret)).resolves.toBeDefined()
      await expect(verify(request?.body ?? "", signature, own.webhookSecret)).resolves.toBeDefined()
      const audit = await auditOf(own.application.id)
      expect(audit.map((entry) => entry.action)).toContain("webhook.secret_regenerated")
      expect(JSON.stringify(audit)).not.toContain(secret)
    })

    it("a test event is a real test payment paid in the simulator: its delivery reaches the receiver", async () => {
      const own = await ownApplication()
      await own.client.get(`${own.base}/webhooks`)
      const sent = await own.client.post(`${own.base}/webhooks/test`)
      expect(sent.status).toBe(303)
      expect(sent.location).toBe(`${own.base}/webhooks?notice=test_sent`)
      const page = await own.client.get(sent.location ?? "")
      expect(page.html).toContain("Test event sent")
      expect(page.html).toContain(`href="${own.base}/deliveries"`)
      const [request] = await receiver.waitFor(1, own.path)
      const event = JSON.parse(request?.body ?? "{}") as { event: string; data: WirePayment }
      expect(event.event).toBe("payment.paid")
      expect(event.data.mode).toBe("test")
      expect(event.data.order_reference).toMatch(/^dashboard-test-/)
      expect(event.data.amount).toBe(100)
      const delivery = await deliveryOf(event.data.id)
      const list = await own.client.get(`${own.base}/deliveries`)
      expect(list.html).toContain(`${own.base}/deliveries/${delivery.id}`)
      expect(list.html).toContain("payment.paid")
      const detail = await own.client.get(`${own.base}/deliveries/${delivery.id}`)
      expect(detail.html).toContain("HTTP 200")
      const entry = (await auditOf(own.application.id)).find((row) => row.action === "webhook.test_sent")
      expect(entry?.target).toBe(event.data.id)
      expect(entry?.actor).toBe(own.user.email)
    })

    it("a test event to a receiver that refuses connections shows the failed attempt", async () => {
      const own = await ownApplication()
      const refusing = `http://127.0.0.1:${await freePort()}/hook`
      await own.client.get(`${own.base}/webhooks`)
      expect((await own.client.post(`${own.base}/webhooks/url`, { url: refusing })).status).toBe(303)
      expect((await own.client.post(`${own.base}/webhooks/test`)).status).toBe(303)
      const [payment] = await query(
        server,
        (sql) => sql`SELECT id FROM payments WHERE application_id = ${own.application.id} AND mode = 'test'`
      )
      const delivery = await deliveryOf(String(payment?.id))
      const detail = await own.client.get(`${own.base}/deliveries/${delivery.id}`)
      expect(detail.html).toContain("connection_refused")
      const failing = await own.client.get(`${own.base}/deliveries?status=pending`)
      expect(failing.html).toContain(delivery.id)
    })
  })

  describe("deliveries", () => {
    it("the receiver's answer is shown escaped, never as markup; resend makes a new manual attempt", async () => {
      const own = await ownApplication()
      const body = "<script>alert(1)</script><b>x</b>"
      receiver.answer({ status: 500, body }, own.path)
      const payment = await paidPayment(server, own.testKey)
      const delivery = await deliveryOf(payment.id)
      const detail = await own.client.get(`${own.base}/deliveries/${delivery.id}`)
      expect(detail.status).toBe(200)
      expect(detail.html).toContain("HTTP 500")
      expect(detail.html).toContain("&#60;script&#62;alert(1)&#60;/script&#62;&#60;b&#62;x&#60;/b&#62;")
      expect(detail.html).not.toContain("<script>alert(1)")
      expect(detail.html).not.toContain("<b>x</b>")
      expect(detail.html).toContain(`${own.base}/payments/${payment.id}`)

      receiver.answer({ status: 200, body: "thanks" }, own.path)
      const resent = await own.client.post(`${own.base}/deliveries/${delivery.id}/resend`)
      expect(resent.status).toBe(303)
      expect(resent.location).toBe(`${own.base}/deliveries/${delivery.id}?notice=resent`)
      await deliveryOf(payment.id, 2)
      const requests = await receiver.waitFor(2, own.path)
      expect(JSON.parse(requests[1]?.body ?? "{}").id).toBe(delivery.eventId)
      const after = await own.client.get(`${own.base}/deliveries/${delivery.id}`)
      expect(after.html).toContain("manual")
      expect(after.html).toContain("thanks")
      const entry = (await auditOf(own.application.id)).find((row) => row.action === "delivery.resent")
      expect(entry?.target).toBe(delivery.id)
      expect(entry?.actor).toBe(own.user.email)
    })

    it("lists deliveries filtered by status, event and mode", async () => {
      const own = await ownApplication()
      const paid = await paidPayment(server, own.testKey)
      await deliveryOf(paid.id)
      const all = await own.client.get(`${own.base}/deliveries`)
      expect(all.html).toContain("payment.paid")
      const live = await own.client.get(`${own.base}/deliveries?mode=live`)
      expect(live.html).toContain("No deliveries match these filters.")
      const failed = await own.client.get(`${own.base}/deliveries?event=payment.failed`)
      expect(failed.html).toContain("No deliveries match these filters.")
    })
  })

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
