/**
 * Linking a Mollie account, and applications on either provider (issue 21 §1, decisions §11), over real HTTP on both
 * databases, with the stateful fakes of Mollie (`KASSA_MOLLIE_API_URL`) and Stripe behind the server: the key checked
 * with `GET /v2/profiles/me` and stored sealed, the profile id as `account_id`, no endpoint (`webhook_endpoint_id`
 * null) and nothing at Mollie to retire; application A on Stripe and B on Mollie at once; an application moved from
 * Stripe to Mollie (the Stripe link retired, its endpoint deleted at Stripe) and back; every attempt audited.
 */
import type { Ids } from "@kassa/core"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AuditLog } from "../src/audit/AuditLog.ts"
import { ProviderLinks } from "../src/providers/ProviderLinks.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeMollie, startFakeMollie } from "./support/FakeMollie.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

interface LinkBody {
  readonly provider: "stripe" | "mollie"
  readonly account_id: string
  readonly key_display: string
  readonly livemode: boolean
  readonly webhook_endpoint_id: string | null
  readonly status: "active" | "retired"
  readonly linked_at: string
  readonly retired_at: string | null
}

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly fields?: Record<string, Array<string>> }
}

describe.each(databases)("Mollie links on %s", (database) => {
  let mollie: FakeMollie
  let stripe: FakeStripe
  let server: RunningServer
  const answers: Array<string> = []

  beforeAll(async () => {
    mollie = await startFakeMollie()
    stripe = await startFakeStripe({ apiVersion })
    server = await startServer(
      database,
      { stripeApiUrl: stripe.url, mollieApiUrl: mollie.url },
      { passwordCost: testPasswordCost }
    )
  })
  afterAll(async () => {
    await server.close()
    await stripe.close()
    await mollie.close()
  })

  const path = (applicationId: string) => `/applications/${applicationId}/provider-account`
  const request = async (at: string, init: { method?: string; body?: unknown } = {}) => {
    const response = await operatorRequest(server, at, init)
    answers.push(response.text)
    return response
  }
  const link = (applicationId: string, provider: "stripe" | "mollie", secretKey: string) =>
    request(path(applicationId), { method: "PUT", body: { provider, secret_key: secretKey } })
  const linked = async (applicationId: string, provider: "stripe" | "mollie", secretKey: string) => {
    const response = await link(applicationId, provider, secretKey)
    expect(response.status, response.text).toBe(200)
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
  const audited = (applicationId: Ids.ApplicationId) =>
    server.run(Effect.flatMap(Effect.service(AuditLog), (audit) => audit.list({ applicationId, limit: 20 })))
  const mollieCalls = () => mollie.requests.length

  it("links a live Mollie key: checked with GET /v2/profiles/me only, the profile as account, no endpoint", async () => {
    const { application } = await server.createApplication()
    const profile = mollie.addProfile({ livemode: true })
    const before = mollieCalls()
    const body = await linked(application.id, "mollie", profile.key)
    expect(body).toEqual({
      provider: "mollie",
      account_id: profile.profileId,
      key_display: `live_…${profile.key.slice(-4)}`,
      livemode: true,
      webhook_endpoint_id: null,
      status: "active",
      linked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      retired_at: null
    })
    // One call, the key check; never `testmode` or `profileId` with an API key (decisions §11).
    const calls = mollie.requests.slice(before)
    expect(calls.map((call) => [call.method, call.path, call.status])).toEqual([["GET", "/v2/profiles/me", 200]])
    expect(JSON.stringify(calls.map((call) => [call.query, call.body]))).not.toMatch(/testmode|profileId/)

    const [row] = await rows(application.id)
    expect(row).toMatchObject({ provider: "mollie", webhook_endpoint_id: null, webhook_secret_encrypted: null })
    expect(JSON.stringify(row)).not.toContain(profile.key)
    expect(String(row?.secret_key_encrypted)).toMatch(/^v1\./)
    const opened = await server.run(
      Effect.gen(function* () {
        const links = yield* ProviderLinks
        const active = Option.getOrThrow(yield* links.active(application.id))
        return Redacted.value(yield* links.access(active).secretKey)
      })
    )
    expect(opened).toBe(profile.key)
    expect((await request(path(application.id))).body).toEqual(body)
    expect((await audited(application.id)).entries.find((entry) => entry.action === "provider_account.linked")).toEqual(
      expect.objectContaining({
        actor: "admin token",
        details: {
          provider: "mollie",
          account_id: profile.profileId,
          livemode: true,
          key_display: `live_…${profile.key.slice(-4)}`,
          webhook_endpoint_id: null,
          retired_link: null
        }
      })
    )
    for (const text of answers) expect(text).not.toContain(profile.key)
  })

  it("a test key links with livemode false", async () => {
    const { application } = await server.createApplication()
    const body = await linked(application.id, "mollie", mollie.apiKey)
    expect(body).toMatchObject({
      livemode: false,
      account_id: mollie.profileId,
      key_display: expect.stringMatching(/^test_…/)
    })
  })

  it("a key Mollie refuses (401) → 422 on secret_key naming Mollie, nothing stored, audited without the key", async () => {
    const { application } = await server.createApplication()
    const unknown = `live_${"u".repeat(30)}`
    const response = await link(application.id, "mollie", unknown)
    expect(response.status).toBe(422)
    const { error } = response.body as ErrorBody
    expect(error.code).toBe("validation_failed")
    expect(Object.keys(error.fields ?? {})).toEqual(["secret_key"])
    expect(error.fields?.secret_key?.[0]).toContain("Mollie")
    expect(await rows(application.id)).toEqual([])
    const [entry] = (await audited(application.id)).entries.filter(
      (candidate) => candidate.action === "provider_account.link_refused"
    )
    expect(entry?.details).toMatchObject({ provider: "mollie", key_display: "live_…uuuu", reason: "LinkRefused" })
    expect(JSON.stringify(entry)).not.toContain(unknown)
  })

  it("a Stripe key sent as Mollie's, or an organization token, is refused before Mollie hears of it", async () => {
    const { application } = await server.createApplication()
    const before = mollieCalls()
    for (const secretKey of [`sk_live_${"a".repeat(24)}`, `access_${"b".repeat(30)}`, "live_short"]) {
      const response = await link(application.id, "mollie", secretKey)
      expect(response.status).toBe(422)
      expect((response.body as ErrorBody).error.fields?.secret_key?.[0]).toContain("must be a Mollie API key")
    }
    expect(mollieCalls()).toBe(before)
  })

  it("Mollie not answering (503) → 502 provider_error naming Mollie, nothing stored", async () => {
    const { application } = await server.createApplication()
    mollie.inject({ method: "GET", path: "/v2/profiles/me" }, { kind: "status", status: 503 })
    const response = await link(application.id, "mollie", mollie.addProfile({ livemode: true }).key)
    expect(response.status).toBe(502)
    expect((response.body as ErrorBody).error).toMatchObject({
      code: "provider_error",
      message: expect.stringContaining("Mollie did not answer while checking the key")
    })
    expect(await rows(application.id)).toEqual([])
  })

  it("application A on Stripe and B on Mollie at the same time, each shown and retired on its own", async () => {
    const [{ application: a }, { application: b }] = await Promise.all([
      server.createApplication(),
      server.createApplication()
    ])
    const account = stripe.addAccount({ livemode: true })
    const profile = mollie.addProfile({ livemode: true })
    const [onStripe, onMollie] = await Promise.all([
      linked(a.id, "stripe", account.key),
      linked(b.id, "mollie", profile.key)
    ])
    expect(onStripe).toMatchObject({ provider: "stripe", account_id: account.accountId, status: "active" })
    expect(onStripe.webhook_endpoint_id).toMatch(/^we_/)
    expect(onMollie).toMatchObject({ provider: "mollie", account_id: profile.profileId, webhook_endpoint_id: null })
    expect((await request(path(a.id))).body).toEqual(onStripe)
    expect((await request(path(b.id))).body).toEqual(onMollie)

    // Retiring B's Mollie link asks Mollie nothing; A's Stripe link is untouched.
    const before = mollieCalls()
    const retired = await request(path(b.id), { method: "DELETE" })
    expect(retired.body).toMatchObject({ provider: "mollie", status: "retired", webhook_endpoint_id: null })
    expect(mollieCalls()).toBe(before)
    expect((await request(path(a.id))).body).toEqual(onStripe)
    expect((await audited(b.id)).entries.find((entry) => entry.action === "provider_account.retired")?.details).toEqual(
      {
        provider: "mollie",
        account_id: profile.profileId,
        key_display: `live_…${profile.key.slice(-4)}`,
        webhook_endpoint_id: null,
        endpoint_deleted: null
      }
    )
  })

  it("an application moved from Stripe to Mollie: the Stripe link retired, its endpoint deleted at Stripe; and back", async () => {
    const { application } = await server.createApplication()
    const account = stripe.addAccount({ livemode: true })
    const onStripe = await linked(application.id, "stripe", account.key)
    const profile = mollie.addProfile({ livemode: true })
    const onMollie = await linked(application.id, "mollie", profile.key)
    expect(onMollie).toMatchObject({ provider: "mollie", status: "active" })
    await eventually(
      () => !stripe.webhookEndpoints().some((endpoint) => endpoint.id === onStripe.webhook_endpoint_id),
      "the Stripe endpoint's deletion"
    )
    await eventually(async () => (await rows(application.id))[0]?.endpoint_retired_at !== null, "endpoint_retired_at")
    const stored = await rows(application.id)
    expect(stored.map((row) => [row.provider, row.status])).toEqual([
      ["stripe", "retired"],
      ["mollie", "active"]
    ])
    expect((await request(path(application.id))).body).toEqual(onMollie)
    const linkedEntry = (await audited(application.id)).entries.find(
      (entry) => entry.action === "provider_account.linked"
    )
    expect(linkedEntry?.details).toMatchObject({ provider: "mollie", retired_link: stored[0]?.id })

    // Back to Stripe: the Mollie link retires with no call to Mollie, and one new Stripe endpoint is made.
    const before = mollieCalls()
    const back = await linked(application.id, "stripe", account.key)
    expect(back.webhook_endpoint_id).not.toBe(onStripe.webhook_endpoint_id)
    expect(mollieCalls()).toBe(before)
    expect((await rows(application.id)).map((row) => [row.provider, row.status])).toEqual([
      ["stripe", "retired"],
      ["mollie", "retired"],
      ["stripe", "active"]
    ])
  })

  it("the operator dashboard links a Mollie key with the form's provider choice", async () => {
    const { application } = await server.createApplication()
    const client = await DashboardClient.signIn(server, await createUser(server, { operatorAdmin: true }))
    const page = `/dashboard/operator/applications/${application.id}`
    await client.get(page)
    const profile = mollie.addProfile({ livemode: true })
    const posted = await client.post(`${page}/provider-account`, { provider: "mollie", secret_key: profile.key })
    expect(posted.status, posted.html).toBe(303)
    const shown = await client.get(posted.location ?? "")
    expect(shown.html).toContain(profile.profileId)
    expect(shown.html).toContain(`live_…${profile.key.slice(-4)}`)
    expect(shown.html).toContain("None: each payment names this link")
    expect(shown.html).toContain('<option value="mollie" selected>Mollie</option>')
    expect(shown.html).not.toContain(profile.key)
  })
})
