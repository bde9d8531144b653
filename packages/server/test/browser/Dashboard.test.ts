/**
 * The dashboards in a real browser (issue #6 §5): Debian's Chromium driven by playwright-core against the real
 * server on a socket. Every page visited is screenshotted into `artifacts/dashboard/` and checked for labels and
 * keyboard reach. What these tests add to the HTTP-level ones: real cookies (SameSite), real form submission,
 * real escaping as the browser parses it, real keyboard focus.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { DateTime, Effect } from "effect"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DailyStats } from "../../src/stats/DailyStats.ts"
import { checkAccessible, launch, screenshot } from "../support/Browser.ts"
import { createUser, DashboardClient, type DashboardUser } from "../support/DashboardClient.ts"
import { type RunningServer, startServer, type TestApplication, testPasswordCost } from "../support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

/** What a hostile webhook receiver answers: markup that would run if the dashboard did not escape it. */
const hostileBody = `<script>window.__kassaXss = 1</script><img src=x onerror="window.__kassaXss = 2"><b>bold</b>`

describe("dashboards in Chromium", () => {
  let server: RunningServer
  let shop: TestApplication
  let pending: TestApplication
  let browser: Browser
  let owner: DashboardUser
  let admin: DashboardUser
  let receiver: WebhookReceiver
  let receiverUrl = ""
  let receiverAnswer: { status: number; body: string } = { status: 500, body: hostileBody }
  let attacker: Server
  let attackerUrl = ""
  const contexts: Array<BrowserContext> = []

  beforeAll(async () => {
    server = await startServer("pglite", {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: "Corner Bakery", return_url_host: "127.0.0.1" })
    pending = await server.createApplication({ name: "Fresh Flowers", status: "pending_review" })
    owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    admin = await createUser(server, { operatorAdmin: true })
    receiver = await startReceiver()
    // GET is the shop's return page; POST is a webhook delivery, answered as the test needs.
    receiver.answer((request) =>
      request.method === "GET"
        ? { status: 200, headers: { "content-type": "text/html" }, body: "<h1>Thank you for your order</h1>" }
        : { ...receiverAnswer, headers: { "content-type": "text/html" } }
    )
    receiverUrl = receiver.url("/webhooks/kassa")
    // Another site: its page posts a form to the dashboard as soon as it loads.
    attacker = createServer((request, response) => {
      const target = new URL(request.url ?? "/", "http://attacker.invalid").searchParams.get("target") ?? ""
      response.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><title>Win a prize</title>
<form id="f" method="post" action="${target}"><input name="mode" value="live"><input name="csrf" value="guessed"></form>
<script>document.getElementById("f").submit()</script>`)
    })
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve))
    attackerUrl = `http://localhost:${(attacker.address() as AddressInfo).port}/`
    browser = await launch()
  }, 120_000)

  afterAll(async () => {
    for (const context of contexts) await context.close()
    await browser?.close()
    await receiver?.close()
    await new Promise((resolve) => attacker?.close(resolve))
    await server?.close()
  })

  const newPage = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    // Short waits, so a missing element fails with its locator rather than the test's timeout.
    context.setDefaultTimeout(10_000)
    contexts.push(context)
    return context.newPage()
  }

  /** Visits a page, screenshots it, and checks labels and keyboard reach. */
  const visit = async (page: Page, path: string, name: string) => {
    const response = await page.goto(`${server.baseUrl}${path}`)
    expect(response?.status(), path).toBe(200)
    await screenshot(page, name)
    await checkAccessible(page)
  }

  /** Signs in with the keyboard only: type, Tab, type, Enter. */
  const signIn = async (page: Page, user: DashboardUser) => {
    await page.goto(`${server.baseUrl}/dashboard`)
    await page.waitForURL(/\/dashboard\/login/)
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("email")
    await page.keyboard.type(user.email)
    await page.keyboard.press("Tab")
    await page.keyboard.type(user.password)
    await page.keyboard.press("Enter")
    await page.waitForURL((url) => !url.pathname.startsWith("/dashboard/login"))
  }

  /** The daily roll-up behind the overviews' charts, run now. */
  const rollUp = () =>
    server.run(
      Effect.gen(function* () {
        return yield* (yield* DailyStats).runOnce(yield* DateTime.now)
      })
    )

  const apiStatus = async (key: string) => (await server.request("/api/v1/payments?limit=1", { key })).status

  const app = (suffix = "") => `/dashboard/apps/${shop.application.id}${suffix}`

  it("signs in with the keyboard; a wrong password is refused with a message", async () => {
    const page = await newPage()
    await page.goto(`${server.baseUrl}/dashboard/login`)
    await screenshot(page, "01-sign-in")
    await checkAccessible(page)
    await page.getByLabel("E-mail address").fill(owner.email)
    await page.getByLabel("Password").fill("not the right password")
    await page.getByRole("button", { name: "Sign in" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not right")
    await screenshot(page, "02-sign-in-refused")
    await signIn(page, owner)
    expect(new URL(page.url()).pathname).toBe(app())
    await screenshot(page, "03-application-overview")
    await checkAccessible(page)
    await visit(page, "/dashboard/account", "03b-account")
  })

  it("creates a key and shows it only once; rolling it makes the old key fail on the API", async () => {
    const page = await newPage()
    await signIn(page, owner)
    await visit(page, app("/keys"), "04-keys")
    await page.getByLabel("Mode").selectOption("test")
    await page.getByRole("button", { name: "Create key" }).click()
    const keyField = page.locator("input[readonly]").first()
    const key = await keyField.inputValue()
    expect(key).toMatch(/^pk_test_[0-9A-Za-z]{32}$/)
    await expect.poll(() => page.getByRole("button", { name: "Copy" }).count()).toBeGreaterThan(0)
    await screenshot(page, "05-key-created")
    await checkAccessible(page)
    expect(await apiStatus(key)).toBe(200)

    // Shown once: the list afterwards has only its display form.
    await page.goto(`${server.baseUrl}${app("/keys")}`)
    expect(await page.content()).not.toContain(key)
    const display = `${key.slice(0, 12)}`
    expect(await page.content()).toContain(display)

    // Roll it, through the confirmation page.
    const row = page.locator("tr", { hasText: display })
    await row.getByRole("button", { name: "Roll" }).click()
    await page.waitForURL(/\/roll/)
    await screenshot(page, "06-key-roll-confirm")
    await checkAccessible(page)
    await page.getByRole("button", { name: /Roll/ }).last().click()
    const rolled = await page.locator("input[readonly]").first().inputValue()
    expect(rolled).toMatch(/^pk_test_/)
    expect(rolled).not.toBe(key)
    expect(await apiStatus(key)).toBe(401)
    expect(await apiStatus(rolled)).toBe(200)
  })

  it("sets the webhook URL; a failed delivery shows the receiver's markup as text; Resend delivers it", async () => {
    const page = await newPage()
    await signIn(page, owner)
    await visit(page, app("/webhooks"), "07-webhooks")
    await page.getByLabel("Webhook URL").fill(receiverUrl)
    await page.getByRole("button", { name: "Save URL" }).click()
    await expect.poll(() => page.getByRole("status").first().textContent()).toBeTruthy()
    expect(await page.getByLabel("Webhook URL").inputValue()).toBe(receiverUrl)

    receiverAnswer = { status: 500, body: hostileBody }
    await page.getByRole("button", { name: "Send test event" }).click()
    await page.waitForLoadState()

    // The first attempt fails (500 with markup); wait for it to be recorded.
    await expect
      .poll(
        async () => {
          await page.goto(`${server.baseUrl}${app("/deliveries")}`)
          return page.locator("tbody tr", { hasText: "payment.paid" }).count()
        },
        { timeout: 20_000 }
      )
      .toBeGreaterThan(0)
    await expect
      .poll(
        async () => {
          await page.goto(`${server.baseUrl}${app("/deliveries")}`)
          return page.content()
        },
        { timeout: 20_000 }
      )
      .toContain("500")
    await screenshot(page, "08-deliveries")
    await checkAccessible(page)
    await page.locator("tbody tr", { hasText: "payment.paid" }).first().getByRole("link").first().click()
    await page.waitForURL(/\/deliveries\/[0-9a-f-]{36}$/)
    await screenshot(page, "09-delivery-failed")
    await checkAccessible(page)

    // Escaped: the markup is visible as text, nothing of it ran or became an element.
    expect(await page.locator("pre").first().textContent()).toContain("<script>window.__kassaXss = 1</script>")
    expect(await page.evaluate(() => (window as unknown as { __kassaXss?: number }).__kassaXss)).toBeUndefined()
    expect(await page.locator("main b", { hasText: "bold" }).count()).toBe(0)
    expect(await page.locator("main img").count()).toBe(0)

    receiverAnswer = { status: 200, body: "ok" }
    await page.getByRole("button", { name: /Resend/ }).click()
    await page.waitForLoadState()
    await expect
      .poll(
        async () => {
          await page.reload()
          return page.locator("main").textContent()
        },
        { timeout: 20_000 }
      )
      .toMatch(/succeeded/i)
    await screenshot(page, "10-delivery-resent")
  })

  it("a customer pays on the hosted checkout with the keyboard and lands on the return URL", async () => {
    const returnUrl = receiverUrl.replace("/webhooks/kassa", "/thanks")
    const created = await server.request("/api/v1/payments", {
      method: "POST",
      key: shop.testKey,
      body: {
        amount: 2450,
        currency: "EUR",
        order_reference: "bread-42",
        description: "Sourdough & <rye>",
        return_url: returnUrl
      }
    })
    expect(created.status, created.text).toBe(201)
    const { id, checkout_url } = created.body as { id: string; checkout_url: string }
    const page = await newPage()
    await page.goto(checkout_url.replace(/^http:\/\/[^/]+/, server.baseUrl))
    await screenshot(page, "00-checkout")
    await checkAccessible(page)
    expect(await page.locator("main").textContent()).toContain("Sourdough & <rye>")
    await page.getByLabel(/Name/).fill("Ada Lovelace")
    await page.getByLabel(/E-mail/).fill("ada@example.com")
    await page.getByRole("button", { name: "Pay", exact: true }).focus()
    await page.keyboard.press("Enter")
    await page.waitForURL(returnUrl)
    expect(await page.locator("h1").textContent()).toBe("Thank you for your order")
    const paid = await server.request(`/api/v1/payments/${id}`, { key: shop.testKey })
    expect(paid.body).toMatchObject({ status: "paid", payer: { name: "Ada Lovelace", email: "ada@example.com" } })
    expect((paid.body as { payer: { user_agent: string } }).payer.user_agent).toContain("Chrome")
  })

  it("shows payments and a payment's timeline", async () => {
    const listed = await server.request("/api/v1/payments?limit=1", { key: shop.testKey })
    const id = (listed.body as { data: Array<{ id: string }> }).data[0]?.id ?? ""
    const page = await newPage()
    await signIn(page, owner)
    await visit(page, app("/payments"), "11-payments")
    expect(await page.locator("main").textContent()).toContain("bread-42")
    await visit(page, app(`/payments/${id}`), "12-payment-detail")
    const text = (await page.locator("main").textContent()) ?? ""
    expect(text).toContain("Sourdough & <rye>")
    expect(text).toContain("payment.paid")
    // A pending test payment: simulated from its page by keyboard (issue 22 §3).
    const pending = await server.request("/api/v1/payments", {
      method: "POST",
      key: shop.testKey,
      body: { amount: 990, order_reference: "rolls-7" }
    })
    const pendingId = (pending.body as { id: string }).id
    await visit(page, app(`/payments/${pendingId}`), "12c-test-payment-pending")
    await page.getByRole("button", { name: "Simulate paid" }).focus()
    await page.keyboard.press("Enter")
    // The page it was posted from matches the payment's path already: wait for the redirect's notice.
    await page.waitForURL(new RegExp(`/payments/${pendingId}\\?notice=`))
    expect(await page.locator("main").textContent()).toContain("by a simulation from the dashboard")
  })

  it("an operator approves an application and walks every operator page", async () => {
    const page = await newPage()
    await signIn(page, admin)
    expect(new URL(page.url()).pathname).toBe("/dashboard/operator")
    // The overviews' charts of the payments so far (issue 22 §3), rolled up now rather than at the next minute.
    await rollUp()
    await visit(page, "/dashboard/operator", "13a-operator-overview")
    expect(await page.locator("svg[role=img]").count()).toBeGreaterThanOrEqual(6)
    await visit(page, app(), "12b-application-overview-charts")
    await visit(page, "/dashboard/operator/applications", "13-operator-applications")
    await page.getByRole("link", { name: "Fresh Flowers" }).click()
    await page.waitForURL(/\/dashboard\/operator\/applications\/[0-9a-f-]{36}$/)
    await screenshot(page, "14-operator-application-pending")
    await checkAccessible(page)
    await page.getByRole("button", { name: /Approve/ }).click()
    await page.waitForLoadState()
    await expect.poll(() => page.locator(".status").first().textContent()).toMatch(/active/i)
    await screenshot(page, "15-operator-application-approved")
    const approved = await server.request(`/admin/api/v1/applications/${pending.application.id}`, {
      key: server.adminToken
    })
    expect((approved.body as { status: string }).status).toBe("active")
    expect(await apiStatus(pending.testKey)).toBe(200)

    await visit(page, "/dashboard/operator/applications/new", "16-operator-new-application")
    await visit(page, "/dashboard/operator/deliveries", "17-operator-deliveries")
    await visit(page, "/dashboard/operator/payments", "18-operator-payments")
    const leaver = await createUser(server)
    await visit(page, "/dashboard/operator/users", "19-operator-users")
    await page.getByRole("link", { name: leaver.email }).click()
    await page.waitForURL(/\/dashboard\/operator\/users\/[0-9a-f-]{36}$/)
    await checkAccessible(page)
    await page.getByRole("button", { name: "Deactivate" }).click()
    await page.waitForLoadState()
    await expect.poll(() => page.locator(".notice").first().textContent()).toContain("deactivated")
    await screenshot(page, "19-operator-user-deactivated")
    expect((await new DashboardClient(server.baseUrl).login(leaver.email, leaver.password)).status).toBe(401)
    await visit(page, "/dashboard/operator/audit", "20-operator-audit")
    const audit = (await page.locator("main").textContent()) ?? ""
    expect(audit).toContain(admin.email)
    expect(audit).toContain(owner.email)
  })

  it("refuses a form posted from another site, and nothing changes", async () => {
    const keysBefore = await server.request(`/admin/api/v1/applications/${shop.application.id}/keys`, {
      key: server.adminToken
    })
    const page = await newPage()
    await signIn(page, owner)
    const answer = page.waitForResponse(
      (response) => response.url().includes(app("/keys")) && response.request().method() === "POST"
    )
    await page.goto(`${attackerUrl}?target=${encodeURIComponent(`${server.baseUrl}${app("/keys")}`)}`)
    const refused = await answer
    // Refused either way: the session cookie is SameSite (not sent: sign-in asked), or the CSRF check (403).
    expect([303, 403]).toContain(refused.status())
    await page.waitForLoadState()
    await screenshot(page, "21-forged-post-refused")
    const keysAfter = await server.request(`/admin/api/v1/applications/${shop.application.id}/keys`, {
      key: server.adminToken
    })
    expect((keysAfter.body as { data: Array<unknown> }).data).toHaveLength(
      (keysBefore.body as { data: Array<unknown> }).data.length
    )
  })
})
