/**
 * Linking a Stripe account (issue 12 §2, decisions §10) over real HTTP, on both databases, with the stateful fake
 * Stripe behind `KASSA_STRIPE_API_URL`: the key checked with Stripe, the webhook endpoint created, the key and the
 * endpoint secret encrypted at rest and never shown or logged again, a relink retiring the previous link and its
 * endpoint, retire, the admin token required, one application's link never shown for another, and every change in
 * the audit log. The operator dashboard's side: ProviderLinksDashboard.test.ts; slow providers: ProviderLinksDeadline.test.ts;
 * Mollie and moving between providers: ProviderLinksMollie.test.ts.
 */
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { AuditLog } from "../src/audit/AuditLog.ts"
import { keyDisplay, ProviderLinks } from "../src/providers/ProviderLinks.ts"
import { apiVersion, subscribedEvents } from "../src/providers/StripeConnector.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

const base = "/admin/api/v1"

interface LinkBody {
  readonly provider: string
  readonly account_id: string
  readonly key_display: string
  readonly livemode: boolean
  readonly webhook_endpoint_id: string
  readonly status: "active" | "retired"
  readonly linked_at: string
  readonly retired_at: string | null
}

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly fields?: Record<string, Array<string>> }
}

describe.each(databases)("provider links on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  /** Everything the server logged, at every level. */
  const logged: Array<string> = []
  /** Every answer's text, to check no secret is ever in one. */
  const answers: Array<string> = []

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    for (const method of ["log", "info", "warn", "error", "debug", "trace"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
        logged.push(args.map((arg) => (typeof arg === "string" ? arg : JSON.stringify(arg))).join(" "))
      })
    }
    server = await startServer(
      database,
      { stripeApiUrl: fake.url },
      { logLevel: "All", passwordCost: testPasswordCost }
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
    vi.restoreAllMocks()
  })

  let stripeKeys: Array<string> = []
  beforeEach(() => {
    stripeKeys = []
  })
  afterEach(async () => {
    await fake.settled()
    // No key or endpoint secret of this test in any answer or log line.
    const secrets = [...stripeKeys, ...(await endpointSecrets())]
    for (const secret of secrets) {
      for (const text of [...answers, ...logged]) expect(text).not.toContain(secret)
    }
  })

  const endpointSecrets = () =>
    server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const links = yield* ProviderLinks
        const rows = yield* sql<{ id: string }>`SELECT id FROM provider_links`.pipe(Effect.orDie)
        const secrets: Array<string> = []
        for (const row of rows) {
          const link = yield* links.find(row.id as never)
          if (Option.isSome(link)) secrets.push(Redacted.value(yield* links.access(link.value).endpointSecret))
        }
        return secrets
      })
    )

  const request = async (
    path: string,
    init: { method?: string; body?: unknown; key?: string } = {}
  ): Promise<{ status: number; body: unknown }> => {
    const response = await operatorRequest(server, path, init)
    answers.push(response.text)
    return response
  }

  const newKey = (options: { livemode?: boolean; restricted?: boolean } = {}) => {
    const account = fake.addAccount(options)
    stripeKeys.push(account.key)
    return account
  }

  const link = (applicationId: string, secretKey: string) =>
    request(`/applications/${applicationId}/provider-account`, {
      method: "PUT",
      body: { provider: "stripe", secret_key: secretKey }
    })

  const linked = async (applicationId: string, secretKey: string) => {
    const response = await link(applicationId, secretKey)
    expect(response.status).toBe(200)
    return response.body as LinkBody
  }

  const rows = (applicationId: string) =>
    server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<Record<string, unknown>>`
          SELECT * FROM provider_links WHERE application_id = ${applicationId} ORDER BY linked_at
        `.pipe(Effect.orDie)
      })
    )

  const endpointCreates = () => fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/webhook_endpoints")

  it("links a live key: checked with Stripe, endpoint created for the link's URL and §10's events, shown as §10's link", async () => {
    const { application } = await server.createApplication()
    const account = newKey({ livemode: true, restricted: true })
    const body = await linked(application.id, account.key)
    expect(body).toEqual({
      provider: "stripe",
      account_id: account.accountId,
      key_display: `rk_live_…${account.key.slice(-4)}`,
      livemode: true,
      webhook_endpoint_id: expect.stringMatching(/^we_/),
      status: "active",
      linked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      retired_at: null
    })
    const [row] = await rows(application.id)
    const create = endpointCreates().at(-1)
    expect(create?.params).toMatchObject({
      url: `${server.baseUrl}/provider-webhooks/stripe/${String(row?.id)}`,
      enabled_events: [...subscribedEvents],
      api_version: apiVersion
    })
    expect(fake.requests.find((r) => r.path === "/v1/account")).toBeDefined()

    const shown = await request(`/applications/${application.id}/provider-account`)
    expect({ status: shown.status, body: shown.body }).toEqual({ status: 200, body })
  })

  it("a test key links with livemode false (operators rehearse with Stripe's test cards)", async () => {
    const { application } = await server.createApplication()
    const account = newKey()
    const body = await linked(application.id, account.key)
    expect(body).toMatchObject({ livemode: false, key_display: `sk_test_…${account.key.slice(-4)}` })
  })

  it("key and endpoint secret are encrypted at rest: neither is readable in the table, both open with the server's key", async () => {
    const { application } = await server.createApplication()
    const account = newKey({ livemode: true })
    await linked(application.id, account.key)
    const [row] = await rows(application.id)
    const stored = JSON.stringify(row)
    expect(stored).not.toContain(account.key)
    expect(stored).not.toContain("whsec_")
    expect(String(row?.secret_key_encrypted)).toMatch(/^v1\./)
    expect(String(row?.webhook_secret_encrypted)).toMatch(/^v1\./)
    const opened = await server.run(
      Effect.gen(function* () {
        const links = yield* ProviderLinks
        const active = Option.getOrThrow(yield* links.active(application.id))
        const access = links.access(active)
        return { key: Redacted.value(yield* access.secretKey), secret: Redacted.value(yield* access.endpointSecret) }
      })
    )
    expect(opened.key).toBe(account.key)
    expect(opened.secret).toMatch(/^whsec_/)
  })

  it("a key Stripe refuses gets 422 on secret_key and nothing is stored; no endpoint is made", async () => {
    const { application } = await server.createApplication()
    const before = endpointCreates().length
    const unknown = `sk_live_${"z".repeat(32)}`
    stripeKeys.push(unknown)
    const response = await link(application.id, unknown)
    expect(response.status).toBe(422)
    const { error } = response.body as ErrorBody
    expect(error.code).toBe("validation_failed")
    expect(Object.keys(error.fields ?? {})).toEqual(["secret_key"])
    expect(error.fields?.secret_key?.[0]).toContain("Stripe refused the key")
    expect(await rows(application.id)).toEqual([])
    expect(endpointCreates().length).toBe(before)
    expect((await request(`/applications/${application.id}/provider-account`)).status).toBe(404)
    // Audited as a refused link, by the key's display form only (the middleware records successes only).
    const page = await server.run(
      Effect.flatMap(Effect.service(AuditLog), (audit) => audit.list({ applicationId: application.id, limit: 10 }))
    )
    expect(page.entries.map((entry) => [entry.action, entry.actor, entry.details])).toEqual([
      [
        "provider_account.link_refused",
        "admin token",
        {
          provider: "stripe",
          key_display: "sk_live_…zzzz",
          reason: "LinkRefused",
          message: expect.stringContaining("Stripe refused the key")
        }
      ]
    ])
    expect(JSON.stringify(page.entries)).not.toContain(unknown)
  })

  it("a publishable key, another provider's key, no provider or an unknown field is refused before Stripe hears of it", async () => {
    const { application } = await server.createApplication()
    const calls = fake.requests.length
    for (const body of [
      { provider: "stripe", secret_key: "pk_live_0123456789abcdef" },
      { provider: "mollie", secret_key: "sk_live_0123456789abcdef" },
      { provider: "stripe", secret_key: "sk_live_0123456789abcdef", extra: true },
      { provider: "stripe" },
      // §10's body names the provider: there is no default.
      { secret_key: "sk_live_0123456789abcdef" },
      { provider: "adyen", secret_key: "sk_live_0123456789abcdef" }
    ]) {
      const response = await request(`/applications/${application.id}/provider-account`, { method: "PUT", body })
      expect(response.status).toBe(422)
      expect((response.body as ErrorBody).error.code).toBe("validation_failed")
    }
    expect(fake.requests.length).toBe(calls)
    expect(await rows(application.id)).toEqual([])
  })

  it("Stripe not answering (500 on the key check, 429 on the endpoint) → 502 provider_error, nothing stored", async () => {
    const { application } = await server.createApplication()
    const account = newKey({ livemode: true })
    fake.inject({ method: "GET", path: "/v1/account" }, { kind: "status", status: 500 })
    const first = await link(application.id, account.key)
    expect(first.status).toBe(502)
    expect((first.body as ErrorBody).error.code).toBe("provider_error")
    fake.inject({ method: "POST", path: "/v1/webhook_endpoints" }, { kind: "status", status: 429 })
    expect((await link(application.id, account.key)).status).toBe(502)
    expect(await rows(application.id)).toEqual([])
    // And once Stripe answers again, the same key links.
    expect((await linked(application.id, account.key)).status).toBe("active")
  })

  it("Stripe refusing the webhook endpoint (it cannot reach the base URL) → 502 naming the URL, nothing stored", async () => {
    const { application } = await server.createApplication()
    fake.inject({ method: "POST", path: "/v1/webhook_endpoints" }, { kind: "status", status: 400 })
    const response = await link(application.id, newKey({ livemode: true }).key)
    expect(response.status).toBe(502)
    const { error } = response.body as ErrorBody
    expect(error.code).toBe("provider_error")
    expect(error.message).toContain(`${server.baseUrl}/provider-webhooks/stripe/`)
    expect(error.message).toContain("KASSA_BASE_URL")
    expect(await rows(application.id)).toEqual([])
  })

  it("a new PUT retires the previous link: one active, the previous endpoint deleted at Stripe", async () => {
    const { application } = await server.createApplication()
    const first = newKey({ livemode: true })
    const second = newKey({ livemode: true, restricted: true })
    const previous = await linked(application.id, first.key)
    const next = await linked(application.id, second.key)
    expect(next).toMatchObject({ account_id: second.accountId, status: "active" })
    await eventually(
      () =>
        fake.requests.some(
          (r) =>
            r.method === "DELETE" &&
            r.path === `/v1/webhook_endpoints/${previous.webhook_endpoint_id}` &&
            r.status === 200
        ),
      "the previous endpoint's deletion"
    )
    await eventually(async () => (await rows(application.id))[0]?.endpoint_retired_at !== null, "endpoint_retired_at")
    const stored = await rows(application.id)
    expect(stored.map((row) => [row.account_id, row.status])).toEqual([
      [first.accountId, "retired"],
      [second.accountId, "active"]
    ])
    expect(stored[0]?.retired_at).not.toBeNull()
    expect((await request(`/applications/${application.id}/provider-account`)).body).toEqual(next)
  })

  it("two links at once: both answered, exactly one active, the other retired with its endpoint deleted", async () => {
    const { application } = await server.createApplication()
    const [first, second] = await Promise.all([
      linked(application.id, newKey({ livemode: true }).key),
      linked(application.id, newKey({ livemode: true }).key)
    ])
    const stored = await rows(application.id)
    expect(stored.map((row) => row.status).sort()).toEqual(["active", "retired"])
    const loser = stored.find((row) => row.status === "retired")
    expect([first.webhook_endpoint_id, second.webhook_endpoint_id]).toContain(loser?.webhook_endpoint_id)
    await eventually(
      () =>
        fake.requests.some(
          (r) => r.method === "DELETE" && r.path === `/v1/webhook_endpoints/${String(loser?.webhook_endpoint_id)}`
        ),
      "the losing link's endpoint deletion"
    )
  })

  it("the previous endpoint already gone, or Stripe failing its deletion, still relinks (best effort)", async () => {
    const { application } = await server.createApplication()
    await linked(application.id, newKey({ livemode: true }).key)
    fake.inject({ method: "DELETE", path: /^\/v1\/webhook_endpoints\// }, { kind: "status", status: 500 })
    const next = await linked(application.id, newKey({ livemode: true }).key)
    expect(next.status).toBe("active")
    await eventually(
      () => fake.requests.some((r) => r.method === "DELETE" && r.status === 500),
      "the failed deletion attempt"
    )
    const stored = await rows(application.id)
    expect(stored.map((row) => row.status)).toEqual(["retired", "active"])
    // Not confirmed: kept for a later retry.
    expect(stored[0]?.endpoint_retired_at).toBeNull()
    // Logged (and the log is what the afterEach searches for secrets).
    await eventually(
      () => logged.some((line) => line.includes("webhook endpoint is still there")),
      "the warning about the endpoint"
    )
  })

  it("DELETE retires the link and its endpoint; then GET and DELETE are 404", async () => {
    const { application } = await server.createApplication()
    const body = await linked(application.id, newKey({ livemode: true }).key)
    const retired = await request(`/applications/${application.id}/provider-account`, { method: "DELETE" })
    expect(retired.status).toBe(200)
    expect(retired.body).toEqual({ ...body, status: "retired", retired_at: expect.stringMatching(/^\d{4}-/) })
    expect(fake.requests.at(-1)).toMatchObject({
      method: "DELETE",
      path: `/v1/webhook_endpoints/${body.webhook_endpoint_id}`,
      status: 200
    })
    expect((await rows(application.id))[0]?.endpoint_retired_at).not.toBeNull()
    for (const method of ["GET", "DELETE"]) {
      const response = await request(`/applications/${application.id}/provider-account`, { method })
      expect(response.status).toBe(404)
      expect((response.body as ErrorBody).error.code).toBe("not_found")
    }
  })

  it("only the admin token: none, a wrong one and an API key get 401; unknown or malformed applications 404", async () => {
    const { application, liveKey } = await server.createApplication()
    const key = newKey({ livemode: true }).key
    for (const token of ["", "wrong-token", liveKey]) {
      for (const method of ["PUT", "GET", "DELETE"]) {
        const response = await server.request(`${base}/applications/${application.id}/provider-account`, {
          method,
          ...(token === "" ? {} : { key: token }),
          ...(method === "PUT" ? { body: { provider: "stripe", secret_key: key } } : {})
        })
        answers.push(response.text)
        expect(response.status).toBe(401)
      }
    }
    expect(await rows(application.id)).toEqual([])
    for (const id of [crypto.randomUUID(), "not-an-id"]) {
      expect((await link(id, key)).status).toBe(404)
      expect((await request(`/applications/${id}/provider-account`)).status).toBe(404)
    }
  })

  it("tenancy: one application's link is never shown for, or retired by, another", async () => {
    const [{ application: first }, { application: second }] = await Promise.all([
      server.createApplication(),
      server.createApplication()
    ])
    const body = await linked(first.id, newKey({ livemode: true }).key)
    expect((await request(`/applications/${second.id}/provider-account`)).status).toBe(404)
    expect((await request(`/applications/${second.id}/provider-account`, { method: "DELETE" })).status).toBe(404)
    const other = await linked(second.id, newKey({ livemode: true }).key)
    expect(other.account_id).not.toBe(body.account_id)
    expect((await request(`/applications/${first.id}/provider-account`)).body).toEqual(body)
    expect((await request(`/applications/${second.id}/provider-account`)).body).toEqual(other)
  })

  it("every change is audited under the application with the dashboard's details, never with the key", async () => {
    const { application } = await server.createApplication()
    const account = newKey({ livemode: true })
    const body = await linked(application.id, account.key)
    await request(`/applications/${application.id}/provider-account`)
    await request(`/applications/${application.id}/provider-account`, { method: "DELETE" })
    const page = await server.run(
      Effect.flatMap(Effect.service(AuditLog), (audit) => audit.list({ applicationId: application.id, limit: 10 }))
    )
    expect(page.entries.map((entry) => entry.action)).toEqual([
      "operator_api.provideraccounts.retire",
      "provider_account.retired",
      "operator_api.provideraccounts.link",
      "provider_account.linked"
    ])
    const [, retired, , linkedEntry] = page.entries
    const display = `sk_live_…${account.key.slice(-4)}`
    expect(linkedEntry?.details).toEqual({
      provider: "stripe",
      account_id: account.accountId,
      livemode: true,
      key_display: display,
      webhook_endpoint_id: body.webhook_endpoint_id,
      retired_link: null
    })
    expect(retired?.details).toEqual({
      provider: "stripe",
      account_id: account.accountId,
      key_display: display,
      webhook_endpoint_id: body.webhook_endpoint_id,
      endpoint_deleted: true
    })
    expect(page.entries.every((entry) => entry.actor === "admin token")).toBe(true)
    expect(JSON.stringify(page.entries)).not.toContain(account.key)
  })

  it("the key's display form: kind, mode and last four", () => {
    expect(keyDisplay("rk_live_51Habcdefwxyz")).toBe("rk_live_…wxyz")
    expect(keyDisplay("sk_test_0000abcd")).toBe("sk_test_…abcd")
    // Mollie's API keys (decisions §11).
    expect(keyDisplay("live_dHar4XY7LxsDOtmnkVtjNVWXLSlXsMwxyz")).toBe("live_…wxyz")
    expect(keyDisplay("test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM")).toBe("test_…lXsM")
  })
})
