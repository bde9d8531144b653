/** `kassa admin …` against the real server's operator API. */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DashboardClient } from "../../server/test/support/DashboardClient.ts"
import { type RunningServer, startServer } from "../../server/test/support/TestServer.ts"
import { json, kassa } from "./support.ts"

let server: RunningServer
let env: Record<string, string>
let receiver: Server
let receiverUrl = ""
const received: Array<string> = []

interface Application {
  readonly id: string
  readonly name: string
  readonly status: string
  readonly webhook_url: string | null
  readonly min_amount: number
}
interface Delivery {
  readonly id: string
  readonly event: string
  readonly payment_id: string
  readonly status: string
  readonly attempts: ReadonlyArray<{ readonly response_status: number | null; readonly kind: string }>
}

beforeAll(async () => {
  server = await startServer("pglite")
  env = { KASSA_BASE_URL: server.baseUrl, KASSA_ADMIN_TOKEN: server.adminToken }
  receiver = createServer((request, response) => {
    request.resume()
    request.on("end", () => {
      received.push(String(request.headers["x-service-event"]))
      response.writeHead(200).end("ok")
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
})
afterAll(async () => {
  await server.close()
  await new Promise((resolve) => receiver.close(resolve))
})

const ok = <A>(result: Awaited<ReturnType<typeof kassa>>) => {
  expect(result.code, result.stderr).toBe(0)
  return json<A>(result)
}

// Each test runs a handful of `kassa` commands (in this process: see support.ts), so that on a slow,
// shared machine every test stays far from its timeout; each makes the application it changes.
describe.concurrent("kassa admin apps", () => {
  it("apps create: --json answers the application and its webhook secret; the table shows them", async () => {
    const created = ok<{ application: Application; webhook_secret: string }>(
      await kassa(["admin", "apps", "create", "--name", "CLI shop", "--methods", "card,ideal", "--json"], { env })
    )
    expect(created.application).toMatchObject({
      name: "CLI shop",
      status: "pending_review",
      methods: ["card", "ideal"]
    })
    expect(created.webhook_secret).toMatch(/^whsec_/)

    const table = await kassa(["admin", "apps", "create", "--name", "Table shop", "--status", "active"], { env })
    expect(table.code).toBe(0)
    expect(table.stdout).toContain("Table shop")
    expect(table.stdout).toMatch(/Status\s+active/)
    expect(table.stdout).toMatch(/Webhook secret\s+whsec_/)
  })

  it("apps list and show: --json and the table, with the application's methods", async () => {
    const { application } = await server.createApplication({ name: "Listed shop", methods: ["card", "ideal"] })
    const id = application.id

    const listed = ok<{ data: Array<Application> }>(await kassa(["admin", "apps", "list", "--json"], { env }))
    expect(listed.data.map((app) => app.id)).toContain(id)
    const listTable = await kassa(["admin", "apps", "list"], { env })
    expect(listTable.stdout).toMatch(/ID\s+NAME\s+STATUS/)
    expect(listTable.stdout).toContain(id)
    expect(listTable.stdout).toContain("Listed shop")

    expect(ok<Application>(await kassa(["admin", "apps", "show", id, "--json"], { env }))).toMatchObject({
      id,
      name: "Listed shop"
    })
    const showTable = await kassa(["admin", "apps", "show", id], { env })
    expect(showTable.stdout).toContain("card, ideal")
  })

  it("apps update: name, status and webhook URL, then clearing the URL; a bad setting is exit 1", async () => {
    const { application } = await server.createApplication({ name: "Before", status: "pending_review" })
    const id = application.id
    const updated = ok<Application>(
      await kassa(
        [
          "admin",
          "apps",
          "update",
          id,
          "--name",
          "Renamed",
          "--status",
          "active",
          "--webhook-url",
          receiverUrl,
          "--json"
        ],
        { env }
      )
    )
    expect(updated).toMatchObject({ id, name: "Renamed", status: "active", webhook_url: receiverUrl })
    const cleared = ok<Application>(
      await kassa(["admin", "apps", "update", id, "--webhook-url", "none", "--json"], { env })
    )
    expect(cleared.webhook_url).toBeNull()
    expect(cleared.name).toBe("Renamed")

    const invalid = await kassa(["admin", "apps", "update", id, "--payment-ttl-seconds", "5", "--json"], { env })
    expect(invalid.code).toBe(1)
    expect(json<{ error: Record<string, unknown> }>(invalid).error).toMatchObject({
      code: "validation_failed",
      status: 422,
      request_id: expect.any(String)
    })
    const invalidText = await kassa(["admin", "apps", "update", id, "--payment-ttl-seconds", "5"], { env })
    expect(invalidText.stderr).toContain("validation_failed")
    expect(invalidText.stderr).toContain("payment_ttl_seconds")
  })

  it("apps create and update: --checkout-logo-url and --checkout-brand-color set, show and clear the branding", async () => {
    const created = ok<{ application: Application }>(
      await kassa(["admin", "apps", "create", "--name", "Branded", "--checkout-brand-color", "#0A7D4F", "--json"], {
        env
      })
    )
    expect(created.application).toMatchObject({ checkout_brand_color: "#0a7d4f", checkout_logo_url: null })
    const id = created.application.id

    const logo = "https://cdn.shop.example/brand/logo.svg"
    const updated = ok<Application>(
      await kassa(["admin", "apps", "update", id, "--checkout-logo-url", logo, "--json"], { env })
    )
    expect(updated).toMatchObject({ checkout_logo_url: logo, checkout_brand_color: "#0a7d4f" })
    const shown = await kassa(["admin", "apps", "show", id], { env })
    expect(shown.stdout).toMatch(/Checkout logo\s+https:\/\/cdn\.shop\.example\/brand\/logo\.svg/)
    expect(shown.stdout).toMatch(/Checkout colour\s+#0a7d4f/)

    const cleared = ok<Application>(
      await kassa(
        ["admin", "apps", "update", id, "--checkout-logo-url", "none", "--checkout-brand-color", "", "--json"],
        { env }
      )
    )
    expect(cleared).toMatchObject({ checkout_logo_url: null, checkout_brand_color: null, name: "Branded" })

    const invalid = await kassa(
      [
        "admin",
        "apps",
        "update",
        id,
        "--checkout-brand-color",
        "green",
        "--checkout-logo-url",
        "http://cdn.example/l.png"
      ],
      { env }
    )
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toContain("validation_failed")
    expect(invalid.stderr).toContain("checkout_brand_color must be a colour as #rrggbb")
    expect(invalid.stderr).toContain("checkout_logo_url must be an https URL")
    const help = await kassa(["admin", "apps", "update", "--help"], { env })
    expect(help.stdout).toContain("--checkout-logo-url")
    expect(help.stdout).toContain("--checkout-brand-color")
  })

  it("apps errors: unknown id and wrong token are exit 1, usage errors and a missing token exit 2", async () => {
    const missing = await kassa(["admin", "apps", "show", "00000000-0000-4000-8000-000000000000"], { env })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("not_found")
    const wrongToken = await kassa(["admin", "apps", "list", "--json"], {
      env: { ...env, KASSA_ADMIN_TOKEN: "wrong-token-wrong-token-wrong-token" }
    })
    expect(wrongToken.code).toBe(1)
    expect(json<{ error: { status: number } }>(wrongToken).error.status).toBe(401)
    const noToken = await kassa(["admin", "apps", "list"], { env: { KASSA_BASE_URL: server.baseUrl } })
    expect(noToken.code).toBe(2)
    expect(noToken.stderr).toContain("--admin-token")
    const noName = await kassa(["admin", "apps", "create"], { env })
    expect(noName.code).toBe(2)
    const badStatus = await kassa(["admin", "apps", "create", "--name", "x", "--status", "open"], { env })
    expect(badStatus.code).toBe(2)
  })
})

describe.concurrent("kassa admin keys and webhook-secret", () => {
  it("keys create (--json and table) and list (--json and table); create without --mode is exit 2", async () => {
    const { application } = await server.createApplication()
    const created = ok<{ id: string; key: string; mode: string }>(
      await kassa(["admin", "keys", "create", application.id, "--mode", "live", "--json"], { env })
    )
    expect(created).toMatchObject({ mode: "live", key: expect.stringMatching(/^pk_live_/) })
    const table = await kassa(["admin", "keys", "create", application.id, "--mode", "test"], { env })
    expect(table.stdout).toMatch(/Key\s+pk_test_/)

    const listed = ok<{ data: Array<{ id: string; display: string }> }>(
      await kassa(["admin", "keys", "list", application.id, "--json"], { env })
    )
    expect(listed.data.map((key) => key.id)).toContain(created.id)
    const listTable = await kassa(["admin", "keys", "list", application.id], { env })
    expect(listTable.stdout).toContain(created.id)
    expect(listTable.stdout).toContain("pk_live_")

    const noMode = await kassa(["admin", "keys", "create", application.id], { env })
    expect(noMode.code).toBe(2)
  })

  it("keys roll and revoke: the revoked key is refused; an unknown key is exit 1", async () => {
    const { application } = await server.createApplication()
    // A live key to roll, made through the operator API (keys create has its own test).
    const issued = await server.request(`/admin/api/v1/applications/${application.id}/keys`, {
      method: "POST",
      key: server.adminToken,
      body: { mode: "live" }
    })
    expect(issued.status, issued.text).toBe(201)
    const created = issued.body as { id: string; key: string }
    const rolled = ok<{ id: string; key: string }>(
      await kassa(["admin", "keys", "roll", created.id, "--json"], { env })
    )
    expect(rolled.key).toMatch(/^pk_live_/)
    expect(rolled.key).not.toBe(created.key)

    const revoked = ok<{ id: string; revoked_at: string | null }>(
      await kassa(["admin", "keys", "revoke", rolled.id, "--json"], { env })
    )
    expect(revoked).toMatchObject({ id: rolled.id, revoked_at: expect.any(String) })
    const useRevoked = await kassa(["payments", "list", "--json"], {
      env: { KASSA_BASE_URL: server.baseUrl, KASSA_API_KEY: rolled.key }
    })
    expect(useRevoked.code).toBe(1)
    expect(json<{ error: { code: string } }>(useRevoked).error.code).toBe("invalid_api_key")

    const unknownKey = await kassa(["admin", "keys", "revoke", "00000000-0000-4000-8000-000000000000"], { env })
    expect(unknownKey.code).toBe(1)
  })

  it("webhook-secret rotate: --json and the table each show a new secret", async () => {
    const { application } = await server.createApplication()
    const rotated = ok<{ webhook_secret: string }>(
      await kassa(["admin", "webhook-secret", "rotate", application.id, "--json"], { env })
    )
    expect(rotated.webhook_secret).toMatch(/^whsec_/)
    const rotatedTable = await kassa(["admin", "webhook-secret", "rotate", application.id], { env })
    expect(rotatedTable.stdout).toMatch(/Webhook secret\s+whsec_/)
  })
})

/** An application whose webhook URL was sent `payment.paid` for a payment made and paid through the API. */
const deliveredApplication = async () => {
  const { application, testKey } = await server.createApplication({ webhook_url: receiverUrl })
  const created = await server.request("/api/v1/payments", {
    method: "POST",
    key: testKey,
    body: { amount: 1000, order_reference: "cli-resend" }
  })
  expect(created.status, created.text).toBe(201)
  const paymentId = (created.body as { id: string }).id
  const paid = await server.request(`/api/v1/test/payments/${paymentId}/simulate`, {
    method: "POST",
    key: testKey,
    body: { outcome: "paid" }
  })
  expect(paid.status, paid.text).toBe(200)
  return { application, paymentId }
}

/** The application's deliveries through `kassa admin deliveries list --json`, once one has an attempt (≤ 10 s). */
const attemptedDeliveries = async (applicationId: string) => {
  let deliveries: ReadonlyArray<Delivery> = []
  for (let waited = 0; waited < 10_000 && !deliveries.some((d) => d.attempts.length > 0); waited += 200) {
    deliveries = ok<{ data: Array<Delivery> }>(
      await kassa(["admin", "deliveries", "list", applicationId, "--json"], { env })
    ).data
    if (!deliveries.some((d) => d.attempts.length > 0)) await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return deliveries
}

describe.concurrent("kassa admin deliveries", () => {
  it("deliveries list: --json once delivered, the table, a status filter; a bad --limit is exit 2", async () => {
    const { application, paymentId } = await deliveredApplication()
    const delivery = (await attemptedDeliveries(application.id))[0]
    expect(delivery).toMatchObject({ event: "payment.paid", payment_id: paymentId, status: "succeeded" })
    if (delivery === undefined) return

    const table = await kassa(["admin", "deliveries", "list", application.id, "--status", "succeeded"], { env })
    expect(table.stdout).toMatch(/ID\s+EVENT\s+PAYMENT/)
    expect(table.stdout).toContain(delivery.id)
    expect(table.stdout).toContain("HTTP 200")
    const none = await kassa(["admin", "deliveries", "list", application.id, "--status", "failed"], { env })
    expect(none.stdout.trim()).toBe("No deliveries.")
    const badLimit = await kassa(["admin", "deliveries", "list", application.id, "--limit", "many"], { env })
    expect(badLimit.code).toBe(2)
  })

  it("deliveries resend: --json and the table; an unknown delivery is exit 1", async () => {
    const { application, paymentId } = await deliveredApplication()
    const delivery = (await attemptedDeliveries(application.id))[0]
    expect(delivery).toMatchObject({ event: "payment.paid", payment_id: paymentId, status: "succeeded" })
    if (delivery === undefined) return

    const resent = ok<Delivery>(await kassa(["admin", "deliveries", "resend", delivery.id, "--json"], { env }))
    expect(resent.id).toBe(delivery.id)
    const resentTable = await kassa(["admin", "deliveries", "resend", delivery.id], { env })
    expect(resentTable.code).toBe(0)
    expect(resentTable.stdout).toContain("payment.paid")
    const unknown = await kassa(["admin", "deliveries", "resend", "00000000-0000-4000-8000-000000000000"], { env })
    expect(unknown.code).toBe(1)
  })
})

describe("kassa admin users and audit", () => {
  it("users create (password generated and shown once), list, grant, remove; the user can sign in", async () => {
    const { application } = await server.createApplication({ name: "Users shop" })
    const email = `cli-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const created = await kassa(["admin", "users", "create", "--email", email], { env })
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toContain("The password is shown this once.")
    const password = /Password\s+(\S+)/.exec(created.stdout)?.[1] ?? ""
    expect(password).toMatch(/^[0-9A-Za-z]{20}$/)
    const userId = /ID\s+(\S+)/.exec(created.stdout)?.[1] ?? ""

    const granted = ok<{ memberships: Array<{ application_id: string; role: string }> }>(
      await kassa(
        ["admin", "users", "grant", userId, "--application", application.id, "--role", "developer", "--json"],
        { env }
      )
    )
    expect(granted.memberships).toEqual([{ application_id: application.id, role: "developer" }])

    const listed = await kassa(["admin", "users", "list"], { env })
    expect(listed.stdout).toContain(email)
    expect(listed.stdout).toContain(`developer@${application.id}`)

    // The generated password signs in to the dashboard.
    const client = new DashboardClient(server.baseUrl)
    expect((await client.login(email, password)).status).toBe(303)
    expect((await client.get("/dashboard")).location).toBe(`/dashboard/apps/${application.id}`)

    const removed = ok<{ memberships: Array<unknown> }>(
      await kassa(["admin", "users", "remove", userId, "--application", application.id, "--json"], { env })
    )
    expect(removed.memberships).toEqual([])
  })

  it("users create: a taken e-mail or a short password is exit 1; --operator-admin with a chosen password", async () => {
    const email = `cli-${crypto.randomUUID().slice(0, 8)}@shop.example`
    ok(await kassa(["admin", "users", "create", "--email", email, "--json"], { env }))
    const duplicate = await kassa(["admin", "users", "create", "--email", email.toUpperCase(), "--json"], { env })
    expect(duplicate.code).toBe(1)
    expect(json<{ error: { code: string } }>(duplicate).error.code).toBe("validation_failed")
    const short = await kassa(["admin", "users", "create", "--email", `x${email}`, "--password", "too-short"], { env })
    expect(short.code).toBe(1)
    expect(short.stderr).toContain("at least 12 characters")

    // Production's first admin comes from here: --operator-admin with a chosen password, which is not printed.
    const adminEmail = `ops-${email}`
    const admin = await kassa(
      ["admin", "users", "create", "--email", adminEmail, "--operator-admin", "--password", "a chosen admin password"],
      { env }
    )
    expect(admin.code, admin.stderr).toBe(0)
    expect(admin.stdout).toMatch(/Operator admin\s+yes/)
    expect(admin.stdout).not.toContain("a chosen admin password")
    const adminClient = new DashboardClient(server.baseUrl)
    expect((await adminClient.login(adminEmail, "a chosen admin password")).status).toBe(303)
    expect((await adminClient.get("/dashboard/operator/applications")).status).toBe(200)
  })

  it("users set-password: generated and shown once, or chosen and not printed; the old password stops working", async () => {
    const email = `cli-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const user = ok<{ id: string; password: string }>(
      await kassa(["admin", "users", "create", "--email", email, "--json"], { env })
    )
    const browser = new DashboardClient(server.baseUrl)
    expect((await browser.login(email, user.password)).status).toBe(303)

    const reset = await kassa(["admin", "users", "set-password", user.id], { env })
    expect(reset.code, reset.stderr).toBe(0)
    expect(reset.stdout).toContain("The password is shown this once.")
    const password = /Password\s+(\S+)/.exec(reset.stdout)?.[1] ?? ""
    expect(password).toMatch(/^[0-9A-Za-z]{20}$/)
    // The old session ended with the old password; the new one signs in.
    expect((await browser.get("/dashboard")).status).toBe(303)
    expect((await new DashboardClient(server.baseUrl).login(email, user.password)).status).toBe(401)
    expect((await new DashboardClient(server.baseUrl).login(email, password)).status).toBe(303)

    const chosen = await kassa(["admin", "users", "set-password", user.id, "--password", "a chosen long password"], {
      env
    })
    expect(chosen.stdout).toContain(`New password set for ${email}`)
    expect(chosen.stdout).not.toContain("a chosen long password")
    expect((await new DashboardClient(server.baseUrl).login(email, "a chosen long password")).status).toBe(303)
  })

  it("users deactivate and reactivate: sign-in refused, then allowed again; an unknown user is exit 1", async () => {
    const email = `cli-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const user = ok<{ id: string }>(
      await kassa(["admin", "users", "create", "--email", email, "--password", "a chosen long password", "--json"], {
        env
      })
    )
    const deactivated = await kassa(["admin", "users", "deactivate", user.id], { env })
    expect(deactivated.code, deactivated.stderr).toBe(0)
    expect(deactivated.stdout).toMatch(new RegExp(`${email}\\s+no\\s+no`))
    expect((await new DashboardClient(server.baseUrl).login(email, "a chosen long password")).status).toBe(401)
    const reactivated = ok<{ active: boolean }>(
      await kassa(["admin", "users", "reactivate", user.id, "--json"], { env })
    )
    expect(reactivated.active).toBe(true)
    expect((await new DashboardClient(server.baseUrl).login(email, "a chosen long password")).status).toBe(303)

    const unknown = await kassa(["admin", "users", "deactivate", crypto.randomUUID(), "--json"], { env })
    expect(unknown.code).toBe(1)
    expect(json<{ error: { code: string } }>(unknown).error.code).toBe("not_found")
  })

  it("audit lists operator actions with the admin token as actor", async () => {
    const created = ok<{ application: { id: string } }>(
      await kassa(["admin", "apps", "create", "--name", "Audited shop", "--json"], { env })
    )
    const id = created.application.id
    ok(await kassa(["admin", "apps", "update", id, "--status", "active", "--json"], { env }))
    const page = ok<{ data: Array<{ actor: string; action: string; application_id: string | null }> }>(
      await kassa(["admin", "audit", "--application", id, "--json"], { env })
    )
    expect(page.data).toEqual([
      expect.objectContaining({ actor: "admin token", action: "operator_api.applications.update", application_id: id }),
      expect.objectContaining({ actor: "admin token", action: "operator_api.applications.create", application_id: id })
    ])
    const text = await kassa(["admin", "audit", "--limit", "5"], { env })
    expect(text.stdout).toMatch(/AT\s+ACTOR\s+ACTION/)
  })
})
