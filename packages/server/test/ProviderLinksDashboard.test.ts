/**
 * Linking from the operator dashboard's application page (issue 12 §2, issue 21 §1), on both databases, with the
 * stateful fake Stripe: the form offers both providers and accepts exactly the operator API's body, a link is
 * CSRF-checked, audited and shown by the key's display form only, a refused key is shown as the problem (never echoed)
 * and audited as refused without the key, and only operator admins may link.
 */
import type { Ids } from "@kassa/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { AuditLog } from "../src/audit/AuditLog.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

describe.each(databases)("linking from the operator dashboard on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  /** Every page's text and every key typed, to check no key is ever shown back. */
  const answers: Array<string> = []
  const stripeKeys: Array<string> = []

  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url }, { passwordCost: testPasswordCost })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })
  afterEach(() => {
    for (const key of stripeKeys) for (const text of answers) expect(text).not.toContain(key)
  })

  const newKey = (options: { livemode?: boolean; restricted?: boolean } = {}) => {
    const account = fake.addAccount(options)
    stripeKeys.push(account.key)
    return account
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

  const pageOf = (id: string) => `/dashboard/operator/applications/${id}`
  const signedInAdmin = async () => DashboardClient.signIn(server, await createUser(server, { operatorAdmin: true }))
  const audited = (applicationId: Ids.ApplicationId) =>
    server.run(Effect.flatMap(Effect.service(AuditLog), (audit) => audit.list({ applicationId, limit: 10 })))

  it("shows no link, links a key (CSRF-checked, audited), shows it by display form only, and retires it", async () => {
    const { application } = await server.createApplication()
    const client = await signedInAdmin()
    const empty = await client.get(pageOf(application.id))
    expect(empty.status).toBe(200)
    expect(empty.html).toContain("No payment provider account is linked")

    const account = newKey({ livemode: true, restricted: true })
    const forged = await client.post(
      `${pageOf(application.id)}/provider-account`,
      { provider: "stripe", secret_key: account.key },
      {
        csrf: "forged-token"
      }
    )
    expect(forged.status).toBe(403)
    expect(await rows(application.id)).toEqual([])

    await client.get(pageOf(application.id))
    const posted = await client.post(`${pageOf(application.id)}/provider-account`, {
      provider: "stripe",
      secret_key: account.key
    })
    expect(posted.status, posted.html).toBe(303)
    expect(posted.location).toBe(`${pageOf(application.id)}?notice=provider_linked`)
    const shown = await client.get(posted.location ?? "")
    answers.push(shown.html)
    expect(shown.html).toContain(account.accountId)
    expect(shown.html).toContain(`rk_live_…${account.key.slice(-4)}`)
    expect(shown.html).toContain("The payment provider account is linked")

    const linkedEntry = (await audited(application.id)).entries[0]
    expect(linkedEntry).toMatchObject({
      action: "provider_account.linked",
      details: { account_id: account.accountId, livemode: true, key_display: `rk_live_…${account.key.slice(-4)}` }
    })
    expect(JSON.stringify(linkedEntry)).not.toContain(account.key)

    const [row] = await rows(application.id)
    const retired = await client.post(`${pageOf(application.id)}/provider-account/retire`)
    expect(retired.status).toBe(303)
    expect(retired.location).toBe(`${pageOf(application.id)}?notice=provider_retired`)
    const after = await client.get(retired.location ?? "")
    expect(after.html).toContain("No payment provider account is linked")
    expect((await rows(application.id))[0]?.status).toBe("retired")
    expect(fake.requests.some((r) => r.method === "DELETE" && r.path.endsWith(String(row?.webhook_endpoint_id)))).toBe(
      true
    )
    expect((await audited(application.id)).entries[0]).toMatchObject({
      action: "provider_account.retired",
      details: { account_id: account.accountId, endpoint_deleted: true }
    })
    // Nothing left to retire.
    expect((await client.post(`${pageOf(application.id)}/provider-account/retire`)).status).toBe(409)
  })

  it("a refused or malformed key is shown as the problem, never echoed, and nothing is stored", async () => {
    const { application } = await server.createApplication()
    const client = await signedInAdmin()
    await client.get(pageOf(application.id))
    const unknown = `sk_live_${"w".repeat(36)}`
    stripeKeys.push(unknown)
    const refused = await client.post(`${pageOf(application.id)}/provider-account`, {
      provider: "stripe",
      secret_key: unknown
    })
    answers.push(refused.html)
    expect(refused.status).toBe(422)
    expect(refused.html).toContain("Stripe refused the key")
    const publishable = await client.post(`${pageOf(application.id)}/provider-account`, {
      provider: "stripe",
      secret_key: "pk_live_0123456789abcdef"
    })
    expect(publishable.status).toBe(422)
    expect(publishable.html).toContain("never a publishable pk_ key")
    expect(publishable.html).not.toContain("pk_live_0123456789abcdef")
    fake.inject({ method: "GET", path: "/v1/account" }, { kind: "status", status: 503 })
    const unavailable = await client.post(`${pageOf(application.id)}/provider-account`, {
      provider: "stripe",
      secret_key: newKey({ livemode: true }).key
    })
    answers.push(unavailable.html)
    expect(unavailable.status).toBe(502)
    expect(unavailable.html).toContain("Stripe did not answer")
    expect(await rows(application.id)).toEqual([])
  })

  it("an application's member who is not an operator admin gets 404 and links nothing", async () => {
    const { application } = await server.createApplication()
    const owner = await createUser(server, { roles: [[application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, owner)
    await client.get(`/dashboard/apps/${application.id}`)
    const key = newKey({ livemode: true }).key
    expect(
      (await client.post(`${pageOf(application.id)}/provider-account`, { provider: "stripe", secret_key: key })).status
    ).toBe(404)
    expect(await rows(application.id)).toEqual([])
  })

  it("the form offers both providers; a Mollie key posted as Stripe's (or no provider) is refused before any call", async () => {
    const { application } = await server.createApplication()
    const client = await signedInAdmin()
    const page = await client.get(pageOf(application.id))
    expect(page.html).toContain('<select id="field-provider" name="provider">')
    expect(page.html).toContain('<option value="stripe" selected>Stripe</option>')
    expect(page.html).toContain('<option value="mollie">Mollie</option>')
    const calls = fake.requests.length
    const mollieKey = `live_${"m".repeat(30)}`
    stripeKeys.push(mollieKey)
    const wrongForm = await client.post(`${pageOf(application.id)}/provider-account`, {
      provider: "stripe",
      secret_key: mollieKey
    })
    answers.push(wrongForm.html)
    expect(wrongForm.status).toBe(422)
    expect(wrongForm.html).toContain("must be a Stripe secret or restricted key")
    const noProvider = await client.post(`${pageOf(application.id)}/provider-account`, { secret_key: mollieKey })
    answers.push(noProvider.html)
    expect(noProvider.status).toBe(422)
    expect(noProvider.html).toContain("provider must be stripe or mollie")
    expect(fake.requests.length).toBe(calls)
    expect(await rows(application.id)).toEqual([])
  })

  it("a key Stripe refuses, or Stripe not answering, is audited as a refused link, without the key", async () => {
    const { application } = await server.createApplication()
    const client = await signedInAdmin()
    await client.get(pageOf(application.id))
    const unknown = `rk_live_${"v".repeat(36)}`
    stripeKeys.push(unknown)
    const refused = await client.post(`${pageOf(application.id)}/provider-account`, {
      provider: "stripe",
      secret_key: unknown
    })
    answers.push(refused.html)
    expect(refused.status).toBe(422)
    fake.inject({ method: "GET", path: "/v1/account" }, { kind: "status", status: 503 })
    const account = newKey({ livemode: true })
    expect(
      (await client.post(`${pageOf(application.id)}/provider-account`, { provider: "stripe", secret_key: account.key }))
        .status
    ).toBe(502)
    const entries = (await audited(application.id)).entries.filter(
      (entry) => entry.action === "provider_account.link_refused"
    )
    expect(entries.map((entry) => entry.details)).toEqual([
      {
        provider: "stripe",
        key_display: `sk_live_…${account.key.slice(-4)}`,
        reason: "ProviderUnavailable",
        message: expect.stringContaining("Stripe did not answer while checking the key")
      },
      {
        provider: "stripe",
        key_display: `rk_live_…${unknown.slice(-4)}`,
        reason: "LinkRefused",
        message: expect.stringContaining("Stripe refused the key")
      }
    ])
    expect(entries.every((entry) => entry.actor !== "admin token" && entry.target === null)).toBe(true)
    const text = JSON.stringify(entries)
    expect(text).not.toContain(unknown)
    expect(text).not.toContain(account.key)
    expect(await rows(application.id)).toEqual([])
  })
})
