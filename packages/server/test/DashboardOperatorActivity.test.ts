/**
 * What the operator's dashboard (issue #6 §2, §4) shows across applications, over HTTP: deliveries filtered by status,
 * application and mode; payments found by order reference, id and status, page by page, a pending one past its expiry
 * as expired; and every action in the audit log with the actor's e-mail and address, without secrets.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, type DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { applications, operatorForms, startOperatorDashboard, uuid } from "./support/DashboardOperatorSupport.ts"
import {
  expireInDatabase,
  paidPayment,
  pendingPayment,
  storedStatus,
  uniqueReference
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

describe.each(databases)("the operator's delivery, payment and audit pages on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let admin: DashboardUser
  let client: DashboardClient

  beforeAll(async () => {
    ;({ server, admin, client } = await startOperatorDashboard(database))
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  const { createThroughPage, postOnPage, setStatus, saveSettings, issueKey } = operatorForms(() => client)

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
})
