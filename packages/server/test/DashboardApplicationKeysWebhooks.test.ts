/**
 * An application's dashboard (issue #6 §3–4) over HTTP, as a browser uses it — its overview, API keys, webhooks and
 * deliveries: the overview's status and members; API keys shown once and effective at once on the merchant API, rolled
 * and revoked; the webhook URL (https in production) and secret; a test event through the real delivery engine; and
 * deliveries with the receiver's answer escaped, filtered, and resent. Every action is in the audit log. Payments,
 * refund requests and who may do what: DashboardApplicationPaymentsAccess.test.ts.
 */
import { verify } from "@kassa/webhook-verify"
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { useDashboardApplication } from "./support/DashboardApplicationSupport.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { paidPayment, pendingPayment, query, type WireError, type WirePayment } from "./support/PaymentFixtures.ts"
import { databases, freePort, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"
import type { WebhookReceiver } from "./support/WebhookReceiver.ts"

describe.each(databases)("an application's dashboard on %s", (database) => {
  const dashboard = useDashboardApplication(database)
  const { ownApplication, app, keysOf, getPayment, deliveryOf, auditOf } = dashboard
  let server: RunningServer
  let receiver: WebhookReceiver
  let shop: TestApplication
  let owner: DashboardUser
  let developer: DashboardUser
  let viewer: DashboardUser

  beforeAll(() => {
    ;({ server, receiver, shop, owner, developer, viewer } = dashboard.setup())
  })

  const issuedKey = (html: string) => /id="issued-key"[^>]*value="(pk_(?:test|live)_[0-9A-Za-z]{32})"/.exec(html)?.[1]

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
})
