/**
 * The operator's dashboard pages (issue #6 §2, §4) over HTTP: only operator admins see them; applications are
 * searched, created (webhook secret shown once), approved, suspended, reconfigured with the operator API's own rules,
 * given keys and members; deliveries and payments are found across applications; users are created; every action
 * is in the audit log; forged posts change nothing; and names are shown as text, never as markup.
 */
import { Ids } from "@kassa/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { operatorRoutes as routes } from "../src/dashboard/DashboardRoutes.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import {
  createPayment,
  expireInDatabase,
  paidPayment,
  pendingPayment,
  storedStatus,
  uniqueReference
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const applications = "/dashboard/operator/applications"

/** The settings form as an operator would send it unchanged for a new application. */
const defaultSettings = {
  methods: "card",
  currencies: "EUR",
  locale: "en",
  min_amount: "100",
  max_amount: "10000000",
  return_url_host: "",
  webhook_url: "",
  ip_allowlist: "",
  payment_ttl_seconds: "3600",
  rate_limit_per_minute: "120"
}

const uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

/** Values of the page's `<input id=… value=…>` (the secret boxes). */
const inputValue = (html: string, id: string) => new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(html)?.[1]

const statusOf = async (server: RunningServer, id: string) =>
  server.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT status FROM applications WHERE id = ${id}`).pipe(
      Effect.map((rows) => String(rows[0]?.status))
    )
  )

const stored = (server: RunningServer, id: string) =>
  server.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM applications WHERE id = ${id}`).pipe(
      Effect.map((rows) => rows[0] as Record<string, unknown>)
    )
  )

describe.each(databases)("the operator's dashboard pages on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let admin: DashboardUser
  let client: DashboardClient

  beforeAll(async () => {
    // Password hashes at the test cost: nothing here is about the hasher's pace, and at production cost every
    // sign-in and new user is 0.4 s of CPU. The production server below hashes at full cost.
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    receiver = await startReceiver()
    admin = await createUser(server, { operatorAdmin: true })
    client = await DashboardClient.signIn(server, admin)
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  /** Creates an application through the new-application form; answers its id and the secret shown. */
  const createThroughPage = async (name: string, settings: Record<string, string> = {}) => {
    expect((await client.get(`${applications}/new`)).status).toBe(200)
    const page = await client.post(applications, { name, ...defaultSettings, ...settings })
    expect(page.status, page.html).toBe(201)
    const id = new RegExp(`href="${applications}/(${uuid})"`).exec(page.html)?.[1] ?? ""
    expect(id).not.toBe("")
    return { id, secret: inputValue(page.html, "webhook-secret") ?? "", page }
  }

  const postOnPage = async (path: string, action: string, fields: Record<string, string>) => {
    expect((await client.get(path)).status).toBe(200)
    return client.post(action, fields)
  }

  const setStatus = (id: string, status: string) =>
    postOnPage(`${applications}/${id}`, `${applications}/${id}/status`, { status })

  const saveSettings = (id: string, settings: Record<string, string>) =>
    postOnPage(`${applications}/${id}`, `${applications}/${id}/settings`, { ...defaultSettings, ...settings })

  const issueKey = async (id: string, mode: "test" | "live") => {
    const page = await postOnPage(`${applications}/${id}`, `${applications}/${id}/keys`, { mode })
    expect(page.status, page.html).toBe(201)
    return inputValue(page.html, "api-key") ?? ""
  }

  it("only operator admins see the operator pages: everyone else gets 404 and changes nothing", async () => {
    const shop = await server.createApplication({ name: "Member's shop", status: "pending_review" })
    const member = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const memberClient = await DashboardClient.signIn(server, member)
    // The member's own page gives its form token, as a page of theirs would.
    expect((await memberClient.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)
    for (const route of routes) {
      // The user pages are tried on the member's own account, the others on their application.
      const path = route.path.replace(":id", route.path.includes("/users/") ? member.id : shop.application.id)
      const answer =
        route.method === "GET"
          ? await memberClient.get(path)
          : await memberClient.post(path, {
              status: "active",
              name: "Taken over",
              email: member.email,
              mode: "live",
              change: "grant_admin",
              password: "a password of my choice"
            })
      expect(answer.status, `${route.method} ${path}`).toBe(404)
    }
    expect((await memberClient.get("/dashboard/operator/applications")).status).toBe(404)
    expect(await statusOf(server, shop.application.id)).toBe("pending_review")
    expect((await stored(server, shop.application.id)).name).toBe("Member's shop")

    const anonymous = new DashboardClient(server.baseUrl)
    const signedOut = await anonymous.get(applications)
    expect(signedOut.status).toBe(303)
    expect(signedOut.location).toMatch(/^\/dashboard\/login\?next=/)
  })

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

  it("lists every application's deliveries, filtered by status and application, linked to their pages", async () => {
    receiver.answer({ status: 200 })
    const hooked = await server.createApplication({ name: "Hooked shop", webhook_url: receiver.url("/hooked") })
    const silent = await server.createApplication({ name: "Silent shop" })
    const delivered = await paidPayment(server, hooked.testKey)
    const undelivered = await paidPayment(server, silent.testKey)
    await receiver.waitFor(1, "/hooked")

    const succeededOfHooked = `/dashboard/operator/deliveries?application=${hooked.application.id}&status=succeeded`
    let page = await client.get(succeededOfHooked)
    for (let attempt = 0; attempt < 50 && !page.html.includes(delivered.id); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      page = await client.get(succeededOfHooked)
    }
    expect(page.html).toContain(delivered.id)
    expect(page.html).toMatch(
      new RegExp(`href="/dashboard/apps/${hooked.application.id}/deliveries/${uuid}">payment\\.paid</a>`)
    )
    expect(page.html).toContain(`href="/dashboard/apps/${hooked.application.id}/payments/${delivered.id}"`)
    expect(page.html).toContain("<td>200</td>")

    const succeeded = await client.get("/dashboard/operator/deliveries?status=succeeded")
    expect(succeeded.html).toContain(delivered.id)
    expect(succeeded.html).not.toContain(undelivered.id)

    const ofSilent = await client.get(`/dashboard/operator/deliveries?application=${silent.application.id}`)
    expect(ofSilent.html).toContain(undelivered.id)
    expect(ofSilent.html).not.toContain(delivered.id)

    const pendingLive = await client.get(
      `/dashboard/operator/deliveries?application=${silent.application.id}&mode=live`
    )
    expect(pendingLive.html).not.toContain(undelivered.id)
    expect(pendingLive.html).toContain("No deliveries match these filters.")
  })

  it("finds payments across applications by order reference (exact or prefix), id and status, page by page", async () => {
    const shop = await server.createApplication({ name: "Search shop", rate_limit_per_minute: 100_000 })
    const other = await server.createApplication({ name: "Other search shop" })
    const prefix = uniqueReference("find")
    const first = await pendingPayment(server, shop.testKey, { order_reference: `${prefix}-1` })
    const second = await paidPayment(server, shop.testKey, { order_reference: `${prefix}-2` })
    const elsewhere = await pendingPayment(server, other.testKey, { order_reference: `${prefix}-1` })

    const search = (query: Record<string, string>) =>
      client.get(`/dashboard/operator/payments?${new URLSearchParams(query).toString()}`)

    const exact = await search({ order_reference: `${prefix}-1` })
    expect(exact.html).toContain(first.id)
    expect(exact.html).toContain(elsewhere.id)
    expect(exact.html).not.toContain(second.id)
    expect(exact.html).toContain(`href="/dashboard/apps/${shop.application.id}/payments/${first.id}"`)

    const starting = await search({ order_reference: `${prefix}-`, match: "prefix", application: shop.application.id })
    expect(starting.html).toContain(first.id)
    expect(starting.html).toContain(second.id)
    expect(starting.html).not.toContain(elsewhere.id)
    expect(starting.html.indexOf(second.id)).toBeLessThan(starting.html.indexOf(first.id))

    const wildcard = await search({ order_reference: `${prefix.slice(0, -1)}_`, match: "prefix" })
    expect(wildcard.html).toContain("No payments match this search.")

    const paid = await search({ order_reference: `${prefix}-`, match: "prefix", status: "paid" })
    expect(paid.html).toContain(second.id)
    expect(paid.html).not.toContain(first.id)

    const byId = await search({ payment_id: elsewhere.id })
    expect(byId.html).toContain(elsewhere.id)
    expect(byId.html).not.toContain(first.id)

    const badId = await search({ payment_id: "not-a-payment" })
    expect(badId.status).toBe(200)
    expect(badId.html).toContain("A payment id is a UUID")

    const many = uniqueReference("many")
    for (let index = 0; index < 51; index++)
      await pendingPayment(server, shop.testKey, { order_reference: `${many}-${index}` })
    const link = new RegExp(`href="/dashboard/apps/${shop.application.id}/payments/`, "g")
    const pageOne = await search({ order_reference: many, match: "prefix" })
    expect(pageOne.html.match(link)?.length).toBe(50)
    const next = /href="(\/dashboard\/operator\/payments\?[^"]*starting_after[^"]*)"/.exec(pageOne.html)?.[1]
    expect(next).toBeDefined()
    const pageTwo = await client.get((next ?? "").replaceAll("&#61;", "=").replaceAll("&#38;", "&"))
    expect(pageTwo.html.match(link)?.length).toBe(1)
    expect(pageTwo.html).toContain(`${many}-0<`)
  })

  it("a pending payment past its expiry is found as expired, never as pending, with or without an application", async () => {
    const shop = await server.createApplication({ name: "Expiry shop" })
    const other = await server.createApplication({ name: "Other expiry shop" })
    const [mine, anywhere] = [await pendingPayment(server, shop.testKey), await pendingPayment(server, other.testKey)]
    for (const payment of [mine, anywhere]) await expireInDatabase(server, payment.id)
    const search = (query: Record<string, string>) =>
      client.get(`/dashboard/operator/payments?${new URLSearchParams(query).toString()}`)
    const scoped = { application: shop.application.id, order_reference: mine.order_reference }
    expect((await search({ ...scoped, status: "pending" })).html).not.toContain(mine.id)
    expect((await search({ ...scoped, status: "expired" })).html).toContain(mine.id)
    // Across applications: the sweeper's pass runs first.
    expect((await search({ order_reference: anywhere.order_reference, status: "pending" })).html).not.toContain(
      anywhere.id
    )
    expect(await storedStatus(server, anywhere.id)).toBe("expired")
  })

  it("creates users, and adds them to an application and removes them", async () => {
    const shop = await server.createApplication({ name: "Team shop" })
    const email = `new-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const password = "a long enough password"

    expect((await client.get("/dashboard/operator/users")).status).toBe(200)
    const short = await client.post("/dashboard/operator/users", { email, password: "short" })
    expect(short.status).toBe(422)
    expect(short.html).toContain("password must be at least 12 characters")
    expect(short.html).toContain(`value="${email}"`)
    expect(short.html).not.toContain('value="short"')

    const created = await client.post("/dashboard/operator/users", { email, password })
    expect(created.status).toBe(303)
    expect(created.location).toBe("/dashboard/operator/users?notice=user_created")
    const listed = await client.get(created.location ?? "")
    expect(listed.html).toContain("The user is created and can sign in now.")
    expect(listed.html).toContain(email)

    const again = await client.post("/dashboard/operator/users", { email: email.toUpperCase(), password })
    expect(again.status).toBe(422)
    expect(again.html).toContain("A user with this e-mail address exists.")

    const newcomer = await DashboardClient.signIn(server, { email, password })
    expect((await newcomer.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(404)

    const detail = `${applications}/${shop.application.id}`
    const unknown = await postOnPage(detail, `${detail}/members`, { email: "nobody@shop.example", role: "viewer" })
    expect(unknown.status).toBe(422)
    expect(unknown.html).toContain("No user has this e-mail address.")

    const added = await postOnPage(detail, `${detail}/members`, { email, role: "viewer" })
    expect(added.status).toBe(303)
    expect(added.location).toBe(`${detail}?notice=member_saved`)
    const members = await client.get(detail)
    expect(members.html).toMatch(new RegExp(`<td>${email}</td>\\s*<td>viewer</td>`))
    expect((await newcomer.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)
    expect((await client.get("/dashboard/operator/users")).html).toContain("(viewer)")

    const userId = new RegExp(`name="user_id" value="(${uuid})"`).exec(members.html)?.[1] ?? ""
    const removed = await client.post(`${detail}/members/remove`, { user_id: userId })
    expect(removed.status).toBe(303)
    expect((await newcomer.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(404)
  })

  /** A user made through the operator API, signed in, with their page's path. */
  const someone = async () => {
    const user = await createUser(server)
    return { user, browser: await DashboardClient.signIn(server, user), page: `/dashboard/operator/users/${user.id}` }
  }

  it("sets a user's new password: their sessions end, the new one signs in, a short one is refused", async () => {
    const { user, browser, page } = await someone()
    const list = await client.get("/dashboard/operator/users")
    expect(list.html).toContain(`href="${page}"`)
    const shown = await client.get(page)
    expect(shown.status).toBe(200)
    expect(shown.html).toContain(user.email)
    expect(shown.html).toContain("Set a new password")

    const short = await client.post(`${page}/password`, { password: "short" })
    expect(short.status).toBe(422)
    expect(short.html).toContain("password must be at least 12 characters")
    expect((await browser.get("/dashboard/account")).status).toBe(200)

    const set = await client.post(`${page}/password`, { password: "a brand new long password" })
    expect(set.status).toBe(303)
    expect(set.location).toBe(`${page}?notice=password_set`)
    expect((await client.get(set.location ?? "")).html).toContain("every session of the user has ended")
    expect((await browser.get("/dashboard/account")).location).toMatch(/^\/dashboard\/login/)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(401)
    await DashboardClient.signIn(server, { email: user.email, password: "a brand new long password" })
  })

  it("deactivates and reactivates a user, makes them operator admin and takes it back; never their own account", async () => {
    const { user, browser, page } = await someone()
    const change = async (wanted: string) => {
      await client.get(page)
      const answer = await client.post(`${page}/access`, { change: wanted })
      expect(answer.status, answer.html).toBe(303)
      return answer.location ?? ""
    }
    const shop = await server.createApplication({ name: "Leaver's shop" })
    expect(
      (
        await server.request(`/admin/api/v1/users/${user.id}/memberships/${shop.application.id}`, {
          method: "PUT",
          key: server.adminToken,
          body: { role: "developer" }
        })
      ).status
    ).toBe(200)
    expect(await change("deactivate")).toBe(`${page}?notice=deactivated`)
    expect((await client.get(page)).html).toContain("deactivated")
    // Still listed among the application's members (the role is kept), marked as deactivated.
    for (const members of [`${applications}/${shop.application.id}`, `/dashboard/apps/${shop.application.id}/members`])
      expect((await client.get(members)).html).toMatch(
        new RegExp(`${user.email}\\s*<span class="status disabled">deactivated</span></td>`)
      )
    expect((await browser.get("/dashboard/account")).status).toBe(303)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(401)
    expect((await client.get("/dashboard/operator/users")).html).toMatch(
      new RegExp(`${user.email}</a></td>\\s*<td>—</td>\\s*<td><span class="status disabled">deactivated`)
    )

    const reactivated = await change("reactivate")
    expect(reactivated).toBe(`${page}?notice=user_reactivated`)
    expect((await client.get(reactivated)).html).toContain("The user is active again and can sign in.")
    const back = await DashboardClient.signIn(server, user)
    expect((await back.get("/dashboard/operator/applications")).status).toBe(404)
    expect(await change("grant_admin")).toBe(`${page}?notice=admin_granted`)
    expect((await back.get("/dashboard/operator/applications")).status).toBe(200)
    expect(await change("revoke_admin")).toBe(`${page}?notice=admin_revoked`)
    expect((await back.get("/dashboard/operator/applications")).status).toBe(404)

    const bogus = await client.post(`${page}/access`, { change: "delete_everything" })
    expect(bogus.status).toBe(422)

    // Their own account: no buttons, and a post is refused (they could lock themselves out).
    const own = `/dashboard/operator/users/${admin.id}`
    const ownPage = await client.get(own)
    expect(ownPage.html).toContain("This is your own account")
    expect(ownPage.html).not.toContain(`action="${own}/access"`)
    for (const [path, fields] of [
      [`${own}/access`, { change: "deactivate" }],
      [`${own}/access`, { change: "revoke_admin" }],
      [`${own}/password`, { password: "a password nobody asked for" }]
    ] as const) {
      expect((await client.post(path, fields)).status).toBe(422)
    }
    expect((await client.get("/dashboard/operator/applications")).status).toBe(200)

    const audit = await client.get(`/dashboard/operator/audit?actor=${encodeURIComponent(admin.email)}`)
    for (const action of [
      "user.deactivated",
      "user.reactivated",
      "user.operator_admin_granted",
      "user.operator_admin_revoked"
    ])
      expect(audit.html).toContain(action)
  })

  it("unknown users are 404; forged posts to a user's page are 403 and change nothing", async () => {
    for (const id of [crypto.randomUUID(), "not-an-id"]) {
      expect((await client.get(`/dashboard/operator/users/${id}`)).status).toBe(404)
    }
    const { user, browser, page } = await someone()
    await client.get(page)
    for (const options of [
      { csrf: "forged-token" },
      { csrf: false as const },
      { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } }
    ]) {
      expect((await client.post(`${page}/access`, { change: "deactivate" }, options)).status).toBe(403)
      expect((await client.post(`${page}/password`, { password: "a forged long password" }, options)).status).toBe(403)
    }
    expect((await browser.get("/dashboard/account")).status).toBe(200)
    await DashboardClient.signIn(server, user)
  })

  it("records every action in the audit log with the actor's e-mail and address, without secrets", async () => {
    const { id, secret } = await createThroughPage("Audited shop")
    await setStatus(id, "active")
    await saveSettings(id, { name: "Audited shop", min_amount: "200" })
    const key = await issueKey(id, "test")
    const member = await createUser(server)
    await postOnPage(`${applications}/${id}`, `${applications}/${id}/members`, {
      email: member.email,
      role: "developer"
    })

    const answer = await server.request(`/admin/api/v1/audit?limit=100&application_id=${id}`, {
      key: server.adminToken
    })
    const entries = (
      answer.body as {
        data: Array<{ actor: string; action: string; ip: string | null; details: Record<string, unknown> }>
      }
    ).data
    expect(entries.map((entry) => entry.action)).toEqual([
      "membership.set",
      "api_key.issued",
      "application.settings_updated",
      "application.approved",
      "application.created"
    ])
    for (const entry of entries) {
      expect(entry.actor).toBe(admin.email)
      expect(entry.ip).toBe("127.0.0.1")
    }
    expect(entries[2]?.details).toEqual({ changed: ["min_amount"] })
    expect(JSON.stringify(entries)).not.toContain(secret)
    expect(JSON.stringify(entries)).not.toContain(key)

    const page = await client.get(`/dashboard/operator/audit?application=${id}`)
    expect(page.status).toBe(200)
    for (const action of ["application.created", "application.approved", "api_key.issued", "membership.set"])
      expect(page.html).toContain(action)
    expect(page.html).toContain(admin.email)
    expect(page.html).toContain("127.0.0.1")
    expect(page.html).toContain("<dt>changed</dt><dd>[&#34;min_amount&#34;]</dd>")

    const onlyKeys = await client.get(`/dashboard/operator/audit?application=${id}&action=api_key.issued`)
    expect(onlyKeys.html).toContain("<code>api_key.issued</code>")
    expect(onlyKeys.html).not.toContain("<code>membership.set</code>")
    // The actor filter matches the text typed, wildcards included: "%" is no "anything".
    const wildcard = await client.get(`/dashboard/operator/audit?application=${id}&actor=%25`)
    expect(wildcard.html).toContain("No entries match these filters.")
    const partOfAddress = await client.get(
      `/dashboard/operator/audit?application=${id}&actor=${encodeURIComponent(admin.email.slice(2, 9))}`
    )
    expect(partOfAddress.html).toContain("<code>api_key.issued</code>")
    // The action filter offers every action the log holds, once each.
    const offered = [...page.html.matchAll(/<option value="([a-z_]+\.[a-z_.]+)"/gi)].map((match) => match[1] ?? "")
    for (const action of ["application.created", "application.approved", "api_key.issued", "membership.set"])
      expect(offered).toContain(action)
    expect(offered).toEqual([...new Set(offered)])
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
