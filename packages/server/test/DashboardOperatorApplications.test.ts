/**
 * The operator's application pages (issue #6 §2, §4) over HTTP: applications are searched, created (webhook secret
 * shown once), approved, suspended, reconfigured with the operator API's own rules and given keys; forged posts change
 * nothing; names are shown as text, never as markup; every field of the operator's pages is labelled. Who sees these
 * pages and the users an operator manages: DashboardOperatorUsers.test.ts; deliveries, payments and the audit log:
 * DashboardOperatorActivity.test.ts.
 */
import { Ids } from "@kassa/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import {
  applications,
  defaultSettings,
  operatorForms,
  startOperatorDashboard,
  statusOf,
  stored
} from "./support/DashboardOperatorSupport.ts"
import { createPayment, paidPayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("the operator's application pages on %s", (database) => {
  let server: RunningServer
  let client: DashboardClient

  beforeAll(async () => {
    ;({ server, client } = await startOperatorDashboard(database))
  })
  afterAll(async () => {
    await server.close()
  })

  const { createThroughPage, setStatus, saveSettings, issueKey } = operatorForms(() => client)

  it("lists applications with search by name or id and a status filter", async () => {
    const tag = crypto.randomUUID().slice(0, 8)
    const alpha = await server.createApplication({ name: `Alpha ${tag}`, status: "active" })
    const beta = await server.createApplication({ name: `Beta ${tag}`, status: "suspended" })
    const all = await client.get(applications)
    expect(all.status).toBe(200)
    expect(all.html).toContain(`Alpha ${tag}`)
    expect(all.html).toContain(`href="${applications}/${alpha.application.id}"`)
    expect(all.html).toContain(`href="${applications}/new"`)

    const byName = await client.get(`${applications}?q=${encodeURIComponent(`alpha ${tag}`)}`)
    expect(byName.html).toContain(`Alpha ${tag}`)
    expect(byName.html).not.toContain(`Beta ${tag}`)

    const byId = await client.get(`${applications}?q=${beta.application.id}`)
    expect(byId.html).toContain(`Beta ${tag}`)
    expect(byId.html).not.toContain(`Alpha ${tag}`)

    const suspended = await client.get(`${applications}?q=${tag}&status=suspended`)
    expect(suspended.html).toContain(`Beta ${tag}`)
    expect(suspended.html).not.toContain(`Alpha ${tag}`)

    const none = await client.get(`${applications}?q=nothing-like-this-${tag}`)
    expect(none.html).toContain("No application matches this search.")
  })

  it("creates an application pending review and shows its webhook secret once; it is stored encrypted", async () => {
    const name = `Created shop ${crypto.randomUUID().slice(0, 8)}`
    const { id, secret, page } = await createThroughPage(name)
    expect(secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/)
    expect(page.html).toContain('data-copy="webhook-secret"')
    expect(page.html).toContain('<label for="webhook-secret">')
    expect(await statusOf(server, id)).toBe("pending_review")

    const row = await stored(server, id)
    expect(String(row.webhook_secret_encrypted)).not.toContain(secret)
    const opened = await server.run(
      ApplicationRepository.use((repository) => repository.webhookSecrets(Ids.ApplicationId.make(id)))
    )
    expect(opened._tag === "Some" ? opened.value.current : null).toBe(secret)

    const detail = await client.get(`${applications}/${id}`)
    expect(detail.status).toBe(200)
    expect(detail.html).toContain(name)
    expect(detail.html).not.toContain(secret)
    expect(detail.html).toContain(`href="/dashboard/apps/${id}"`)
    expect((await client.get(applications)).html).not.toContain(secret)
  })

  it("a new application with invalid settings is not created; the form comes back with the errors", async () => {
    const before = (await server.run(ApplicationRepository.use((repository) => repository.list))).length
    const page = await client.post(applications, {
      ...defaultSettings,
      name: "   ",
      currencies: "EUR, eur",
      ip_allowlist: "10.0.0.0/33"
    })
    expect(page.status).toBe(422)
    expect(page.html).toContain("name must not be blank")
    expect(page.html).toContain("eur: each currency must be three upper-case letters")
    expect(page.html).toContain("10.0.0.0/33: each ip_allowlist entry must be an IPv4 or IPv6 address or a CIDR range")
    expect(page.html).toMatch(/<textarea id="field-ip_allowlist"[^>]*>10\.0\.0\.0\/33<\/textarea>/)
    expect(page.html).toContain('value="EUR, eur"')
    const after = (await server.run(ApplicationRepository.use((repository) => repository.list))).length
    expect(after).toBe(before)
  })

  it("keys of a new application are refused until it is approved; suspending and disabling refuse them again", async () => {
    const { id } = await createThroughPage("Review shop")
    const key = await issueKey(id, "test")
    expect(key).toMatch(/^pk_test_/)
    const pay = () => createPayment(server, key)

    const pending = await pay()
    expect(pending.status).toBe(403)
    expect((pending.body as { error: { code: string } }).error.code).toBe("application_pending_review")

    const approved = await setStatus(id, "active")
    expect(approved.status).toBe(303)
    expect(approved.location).toBe(`${applications}/${id}?notice=approved`)
    const after = await client.get(approved.location ?? "")
    expect(after.html).toContain("The application is approved: its API keys work now.")
    expect((await pay()).status).toBe(201)

    expect((await setStatus(id, "suspended")).status).toBe(303)
    const suspended = await pay()
    expect(suspended.status).toBe(403)
    expect((suspended.body as { error: { code: string } }).error.code).toBe("application_suspended")

    expect((await setStatus(id, "active")).location).toBe(`${applications}/${id}?notice=reactivated`)
    expect((await client.get(`${applications}/${id}?notice=reactivated`)).html).toContain(
      "The application is active again: its API keys work."
    )
    expect((await pay()).status).toBe(201)

    expect((await setStatus(id, "disabled")).status).toBe(303)
    expect(((await pay()).body as { error: { code: string } }).error.code).toBe("application_disabled")
  })

  it("offers and accepts only the status changes the rules allow", async () => {
    const { id } = await createThroughPage("Transition shop")
    const detail = await client.get(`${applications}/${id}`)
    expect(detail.html).toContain('name="status" value="active"')
    expect(detail.html).toContain('name="status" value="disabled"')
    expect(detail.html).not.toContain('name="status" value="suspended"')

    const suspend = await setStatus(id, "suspended")
    expect(suspend.status).toBe(409)
    expect(suspend.html).toContain("cannot become suspended")
    expect(await statusOf(server, id)).toBe("pending_review")

    const bogus = await setStatus(id, "deleted")
    expect(bogus.status).toBe(409)
    expect(await statusOf(server, id)).toBe("pending_review")

    expect((await setStatus(id, "disabled")).status).toBe(303)
    const again = await setStatus(id, "disabled")
    expect(again.status).toBe(409)
    expect(await statusOf(server, id)).toBe("disabled")
  })

  it("two operators approving at once: one approves, the other is told (compare and set)", async () => {
    for (let round = 0; round < 3; round++) {
      const { id } = await createThroughPage(`Race shop ${round}`)
      expect((await client.get(`${applications}/${id}`)).status).toBe(200)
      const answers = await Promise.all([
        client.post(`${applications}/${id}/status`, { status: "active" }),
        client.post(`${applications}/${id}/status`, { status: "active" })
      ])
      expect(answers.map((answer) => answer.status).sort()).toEqual([303, 409])
      expect(await statusOf(server, id)).toBe("active")
    }
    const audit = await server.request("/admin/api/v1/audit?limit=100", { key: server.adminToken })
    const approvals = (audit.body as { data: Array<{ action: string }> }).data.filter(
      (entry) => entry.action === "application.approved"
    )
    expect(approvals.length).toBeGreaterThanOrEqual(3)
  })

  it("settings are checked by the operator API's rules: errors next to the fields, 422, nothing saved", async () => {
    const shop = await server.createApplication({ name: "Settings shop", ip_allowlist: ["192.0.2.1"] })
    const id = shop.application.id
    const before = await stored(server, id)

    const badRange = await saveSettings(id, { name: "Settings shop", ip_allowlist: "198.51.100.7\n10.0.0.0/33" })
    expect(badRange.status).toBe(422)
    expect(badRange.html).toMatch(
      /id="field-ip_allowlist-error">10\.0\.0\.0\/33: each ip_allowlist entry must be an IPv4 or IPv6 address/
    )
    expect(badRange.html).toContain("198.51.100.7\n10.0.0.0/33</textarea>")

    const minOverMax = await saveSettings(id, { name: "Settings shop", min_amount: "5000", max_amount: "100" })
    expect(minOverMax.status).toBe(422)
    expect(minOverMax.html).toMatch(
      /id="field-min_amount-error">min_amount \(5000\) must not exceed max_amount \(100\)/
    )
    expect(minOverMax.html).toContain('value="5000"')

    const notNumber = await saveSettings(id, { name: "Settings shop", payment_ttl_seconds: "an hour" })
    expect(notNumber.status).toBe(422)
    expect(notNumber.html).toContain("payment_ttl_seconds must be a whole number")

    expect(await stored(server, id)).toEqual(before)
  })

  it("valid settings are saved", async () => {
    const shop = await server.createApplication({ name: "Saving shop" })
    const id = shop.application.id
    const saved = await saveSettings(id, {
      name: "Saving shop renamed",
      methods: "card, ideal",
      currencies: "EUR, USD",
      locale: "nl-NL",
      min_amount: "50",
      max_amount: "500000",
      return_url_host: "shop.example:8443",
      webhook_url: "http://127.0.0.1:9/hook",
      ip_allowlist: "203.0.113.0/24\r\n2001:db8::1\r\n",
      payment_ttl_seconds: "900",
      rate_limit_per_minute: "60"
    })
    expect(saved.status, saved.html).toBe(303)
    expect(saved.location).toBe(`${applications}/${id}?notice=settings_saved`)
    const application = await server.run(
      ApplicationRepository.use((repository) => repository.find(Ids.ApplicationId.make(id))).pipe(
        Effect.map((found) => (found._tag === "Some" ? found.value : null))
      )
    )
    expect(application).toMatchObject({
      name: "Saving shop renamed",
      methods: ["card", "ideal"],
      currencies: ["EUR", "USD"],
      locale: "nl-NL",
      min_amount: 50,
      max_amount: 500000,
      return_url_host: "shop.example:8443",
      webhook_url: "http://127.0.0.1:9/hook",
      ip_allowlist: ["203.0.113.0/24", "2001:db8::1"],
      payment_ttl_seconds: 900,
      rate_limit_per_minute: 60
    })
    const page = await client.get(saved.location ?? "")
    expect(page.html).toContain("The settings are saved.")
    expect(page.html).toContain('value="card, ideal"')
  })

  it("in production a webhook URL must be https, as in the operator API", async () => {
    const production = await startServer(database, { environment: "production" })
    try {
      const operator = await DashboardClient.signIn(production, await createUser(production, { operatorAdmin: true }))
      const shop = await production.createApplication({ name: "Production shop" })
      const path = `${applications}/${shop.application.id}`
      await operator.get(path)
      const settings = { ...defaultSettings, name: "Production shop" }
      const plain = await operator.post(`${path}/settings`, { ...settings, webhook_url: "http://hooks.shop.example/k" })
      expect(plain.status).toBe(422)
      expect(plain.html).toContain("webhook_url must be an https URL in production")
      const secure = await operator.post(`${path}/settings`, {
        ...settings,
        webhook_url: "https://hooks.shop.example/k"
      })
      expect(secure.status).toBe(303)
    } finally {
      await production.close()
    }
  })

  it("an issued key is shown once, listed by its display form afterwards, and works", async () => {
    const shop = await server.createApplication({ name: "Key shop" })
    const id = shop.application.id
    const key = await issueKey(id, "test")
    expect(key).toMatch(/^pk_test_[0-9A-Za-z]{32}$/)
    expect((await createPayment(server, key)).status).toBe(201)
    const detail = await client.get(`${applications}/${id}`)
    expect(detail.html).not.toContain(key)
    expect(detail.html).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`)

    const live = await issueKey(id, "live")
    expect(live).toMatch(/^pk_live_/)
  })

  it("a forged post (wrong or missing token, another site) is refused with 403 and changes nothing", async () => {
    const { id } = await createThroughPage("Forgery target")
    await client.get(`${applications}/${id}`)
    const attempts = [
      { csrf: "forged-token" },
      { csrf: false as const },
      { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } }
    ]
    for (const options of attempts) {
      expect((await client.post(`${applications}/${id}/status`, { status: "active" }, options)).status).toBe(403)
      expect(
        (await client.post(`${applications}/${id}/settings`, { ...defaultSettings, name: "Pwned" }, options)).status
      ).toBe(403)
      expect((await client.post(`${applications}/${id}/keys`, { mode: "live" }, options)).status).toBe(403)
      expect((await client.post(applications, { ...defaultSettings, name: "Forged app" }, options)).status).toBe(403)
      const email = `forged-${crypto.randomUUID().slice(0, 8)}@shop.example`
      expect(
        (await client.post("/dashboard/operator/users", { email, password: "forged password 123" }, options)).status
      ).toBe(403)
      expect((await server.request("/admin/api/v1/users", { key: server.adminToken })).text).not.toContain(email)
    }
    expect(await statusOf(server, id)).toBe("pending_review")
    expect((await stored(server, id)).name).toBe("Forgery target")
    const keyCount = await server.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT count(*) AS n FROM api_keys WHERE application_id = ${id}`)
    )
    expect(Number(keyCount[0]?.n)).toBe(0)
    expect((await client.get(`${applications}?q=Forged%20app`)).html).not.toContain("Forged app</a>")
  })

  it("shows markup in an application's name as text", async () => {
    const name = "<script>alert(1)</script>"
    const { id, page } = await createThroughPage(name)
    const escaped = "&#60;script&#62;alert(1)&#60;/script&#62;"
    const shop = await server.createApplication({ name, rate_limit_per_minute: 1000 })
    await paidPayment(server, shop.testKey)
    for (const html of [
      page.html,
      (await client.get(`${applications}/${id}`)).html,
      (await client.get(applications)).html,
      (await client.get(`/dashboard/operator/deliveries?application=${shop.application.id}`)).html,
      (await client.get(`/dashboard/operator/payments?application=${shop.application.id}`)).html,
      (await client.get(`/dashboard/operator/audit?application=${id}`)).html
    ]) {
      expect(html).not.toContain(name)
      expect(html).toContain(escaped)
    }
  })

  it("labels every field, and answers 405 for a page's other methods", async () => {
    const shop = await server.createApplication({ name: "Labelled shop" })
    for (const path of [
      applications,
      `${applications}/new`,
      `${applications}/${shop.application.id}`,
      "/dashboard/operator/deliveries",
      "/dashboard/operator/payments",
      "/dashboard/operator/users",
      "/dashboard/operator/audit"
    ]) {
      const page = await client.get(path)
      expect(page.status, path).toBe(200)
      expect(page.html, path).toContain('aria-current="page"')
      const ids = [...page.html.matchAll(/<(?:input|select|textarea)\b([^>]*)>/g)]
        .map((match) => match[1] ?? "")
        .filter((attributes) => !attributes.includes('type="hidden"'))
        .map((attributes) => /\bid="([^"]+)"/.exec(attributes)?.[1])
      for (const id of ids) {
        expect(id, `${path}: a field without id`).toBeDefined()
        expect(page.html, `${path}: #${id}`).toContain(`<label for="${id}"`)
      }
    }
    const wrongMethod = await fetch(`${server.baseUrl}${applications}/${shop.application.id}/status`)
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get("allow")).toBe("POST")
  })
})
