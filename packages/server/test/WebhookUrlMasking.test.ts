/**
 * Webhook URLs' user part and query may carry the receiver's credentials (issue #11): the dashboards show them whole
 * only to owners and operator admins; developers and viewers see them masked (the audit log's `UrlMask`) on the
 * webhooks page and in attempt records, and the audit log records them masked for everyone.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { paidPayment, query } from "./support/PaymentFixtures.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const token = "sekret-token-4711"
const password = "pa55w0rd-0815"

describe.each(databases)("webhook URL masking on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let shop: TestApplication
  let url: string
  const users: Record<"owner" | "developer" | "viewer" | "operator", DashboardUser> = {} as never
  const clients: Partial<Record<keyof typeof users, DashboardClient>> = {}

  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    url = receiver.url(`/masked?token=${token}`)
    shop = await server.createApplication({ name: "Masked shop", webhook_url: url })
    users.owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    users.developer = await createUser(server, { roles: [[shop.application.id, "developer"]] })
    users.viewer = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    users.operator = await createUser(server, { operatorAdmin: true })
    for (const role of ["owner", "developer", "viewer", "operator"] as const)
      clients[role] = await DashboardClient.signIn(server, users[role])
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  const page = (role: keyof typeof users, suffix: string) =>
    (clients[role] as DashboardClient).get(`/dashboard/apps/${shop.application.id}${suffix}`)

  const setUrl = (next: string) =>
    server.run(
      Effect.flatMap(ApplicationRepository, (applications) =>
        applications.update(shop.application.id, { webhook_url: next })
      )
    )

  it("the webhooks page shows the query token to owners and operator admins only", async () => {
    for (const role of ["owner", "operator"] as const) {
      const shown = await page(role, "/webhooks")
      expect(shown.status).toBe(200)
      expect(shown.html, role).toContain(token)
    }
    for (const role of ["developer", "viewer"] as const) {
      const shown = await page(role, "/webhooks")
      expect(shown.status).toBe(200)
      expect(shown.html, role).not.toContain(token)
      expect(shown.html, role).toContain(`${receiver.url("/masked")}?***`)
    }
    // The developer's form does not start with the masked text (saving it would replace the URL with it).
    expect((await page("developer", "/webhooks")).html).toMatch(/name="url"[^>]*value=""/)
  })

  it("credentials in the URL are masked alike", async () => {
    const withCredentials = receiver.url("/masked").replace("http://", `http://kassa:${password}@`)
    await setUrl(withCredentials)
    try {
      expect((await page("owner", "/webhooks")).html).toContain(password)
      for (const role of ["developer", "viewer"] as const) {
        const shown = await page(role, "/webhooks")
        expect(shown.html, role).not.toContain(password)
        expect(shown.html, role).toContain("http://***@127.0.0.1")
      }
    } finally {
      await setUrl(url)
    }
  })

  it("attempt records show the URL whole to owners and operator admins, masked to developers and viewers", async () => {
    const payment = await paidPayment(server, shop.testKey)
    await receiver.waitFor(1, `/masked?token=${token}`)
    const deliveryId = await (async () => {
      // The attempt is recorded after the receiver answered: wait for its row, boundedly.
      for (let tries = 0; tries < 400; tries++) {
        const rows = await query(
          server,
          (sql) => sql`
            SELECT d.id FROM deliveries d JOIN events e ON e.id = d.event_id
            WHERE e.payment_id = ${payment.id} AND EXISTS (SELECT 1 FROM delivery_attempts a WHERE a.delivery_id = d.id)
          `
        )
        if (rows[0] !== undefined) return String(rows[0].id)
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      throw new Error("no attempt recorded")
    })()
    for (const role of ["owner", "operator"] as const) {
      const shown = await page(role, `/deliveries/${deliveryId}`)
      expect(shown.status).toBe(200)
      expect(shown.html, role).toContain(token)
    }
    for (const role of ["developer", "viewer"] as const) {
      const shown = await page(role, `/deliveries/${deliveryId}`)
      expect(shown.status).toBe(200)
      expect(shown.html, role).not.toContain(token)
      expect(shown.html, role).toContain("/masked?***")
    }
  })

  it("the audit log records a changed URL masked", async () => {
    const owner = clients.owner as DashboardClient
    await owner.get(`/dashboard/apps/${shop.application.id}/webhooks`)
    const next = receiver.url(`/moved?token=${token}`)
    expect((await owner.post(`/dashboard/apps/${shop.application.id}/webhooks/url`, { url: next })).status).toBe(303)
    const audit = await server.request(`/admin/api/v1/audit?limit=100&application_id=${shop.application.id}`, {
      key: server.adminToken
    })
    const entry = (audit.body as { data: Array<{ action: string; details: Record<string, unknown> }> }).data.find(
      (row) => row.action === "webhook.url_updated"
    )
    expect(entry?.details).toEqual({ from: `${receiver.url("/masked")}?***`, to: `${receiver.url("/moved")}?***` })
    await setUrl(url)
  })
})
