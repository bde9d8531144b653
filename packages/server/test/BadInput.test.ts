/**
 * Bad input that once answered 500 (issue 11, points 7–9 and 18): keys named like Object.prototype's members, U+0000
 * and unpaired surrogates in stored text and in filters, return URLs a header cannot carry, an empty method list.
 * Each gets the contract's 4xx, and what is accepted is stored and read back exactly as answered.
 */
import { OperatorSettings } from "@kassa/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { expr, insertPayment } from "./support/PaymentSeed.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

const prototypeKeys = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"] as const

interface ErrorBody {
  readonly error: { readonly code: string; readonly fields?: Record<string, ReadonlyArray<string>> }
}

describe.each(databases)("bad input on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  beforeAll(async () => {
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication()
  })
  afterAll(() => server.close())

  const api = (path: string, method: string, body: string, key = shop.testKey) =>
    server.request(path, { method, key, body, headers: { "content-type": "application/json" } })
  const operator = (path: string, method: string, body: string) => operatorRequest(server, path, { method, body })

  const createPayment = async (body: Record<string, unknown> = {}) => {
    const response = await server.request("/api/v1/payments", {
      method: "POST",
      key: shop.testKey,
      body: { amount: 1000, order_reference: `o-${crypto.randomUUID()}`, ...body }
    })
    expect(response.status, response.text).toBe(201)
    return response.body as { id: string; return_url: string | null }
  }

  const expectFieldError = (response: { status: number; body: unknown; text: string }, field: string) => {
    expect(response.status, response.text).toBe(422)
    const { error } = response.body as ErrorBody
    expect(error.code).toBe("validation_failed")
    expect(Object.keys(error.fields ?? {})).toContain(field)
  }

  it("a top-level key named like an Object.prototype member is an unknown field of every checked body", async () => {
    const paid = await createPayment()
    await api(`/api/v1/test/payments/${paid.id}/simulate`, "POST", '{"outcome":"paid"}')
    const pending = await createPayment()
    const application = shop.application.id
    for (const key of prototypeKeys) {
      const extra = `${JSON.stringify(key)}: 1`
      const cases = [
        api("/api/v1/payments", "POST", `{"amount": 1000, "order_reference": "p-${key}", ${extra}}`),
        api(`/api/v1/payments/${paid.id}/refunds`, "POST", `{"amount": 1, ${extra}}`),
        api(`/api/v1/test/payments/${pending.id}/simulate`, "POST", `{"outcome": "paid", ${extra}}`),
        api(`/api/v1/payments/${pending.id}/cancel`, "POST", `{${extra}}`),
        operator("/applications", "POST", `{"name": "x", ${extra}}`),
        operator(`/applications/${application}`, "PATCH", `{${extra}}`),
        operator(`/applications/${application}/keys`, "POST", `{"mode": "test", ${extra}}`),
        operator("/users", "POST", `{"email": "a@b.example", "password": "correct horse battery", ${extra}}`)
      ]
      for (const response of await Promise.all(cases)) expectFieldError(response, key)
    }
    // Nothing changed: the pending payment is still pending, the paid one unrefunded.
    const [stillPending, stillPaid] = await Promise.all([
      server.request(`/api/v1/payments/${pending.id}`, { key: shop.testKey }),
      server.request(`/api/v1/payments/${paid.id}`, { key: shop.testKey })
    ])
    expect(stillPending.body).toMatchObject({ status: "pending" })
    expect(stillPaid.body).toMatchObject({ status: "paid", refunded_amount: 0 })
  })

  it("metadata keys named like Object.prototype members are ordinary keys, stored and read back", async () => {
    const metadata = `{${prototypeKeys.map((key, index) => `"${key}": "v${index}"`).join(", ")}}`
    const created = await api(
      "/api/v1/payments",
      "POST",
      `{"amount": 1000, "order_reference": "meta-keys", "metadata": ${metadata}}`
    )
    expect(created.status, created.text).toBe(201)
    const id = (created.body as { id: string }).id
    const fetched = await server.request(`/api/v1/payments/${id}`, { key: shop.testKey })
    // jsonb keeps its own key order, so the answers are compared as values.
    expect(JSON.parse(fetched.text)).toEqual(JSON.parse(created.text))
    expect(Object.keys(JSON.parse(fetched.text).metadata).sort()).toEqual([...prototypeKeys].sort())
  })

  it("U+0000 and an unpaired surrogate in any stored string are validation_failed naming the field", async () => {
    for (const bad of ["a\\u0000b", "a\\ud800b", "\\udfff"]) {
      const create = (fields: string) =>
        api("/api/v1/payments", "POST", `{"amount": 1000, "order_reference": "ok-ref", ${fields}}`)
      const cases: ReadonlyArray<readonly [Promise<{ status: number; body: unknown; text: string }>, string]> = [
        [api("/api/v1/payments", "POST", `{"amount": 1000, "order_reference": "${bad}"}`), "order_reference"],
        [create(`"description": "${bad}"`), "description"],
        [create(`"customer": {"name": "${bad}"}`), "customer.name"],
        [create(`"customer": {"email": "x${bad}@shop.example"}`), "customer.email"],
        [create(`"metadata": {"k": "${bad}"}`), "metadata.k"],
        [create(`"return_url": "https://shop.example/${bad}"`), "return_url"],
        [operator("/applications", "POST", `{"name": "${bad}"}`), "name"],
        [
          operator("/applications", "POST", `{"name": "x", "webhook_url": "https://hooks.example/${bad}"}`),
          "webhook_url"
        ],
        [operator("/users", "POST", `{"email": "u${bad}@shop.example", "password": "correct horse battery"}`), "email"]
      ]
      for (const [response, field] of cases) expectFieldError(await response, field)
      // A bad metadata key is refused too (reported under the key itself).
      const key = await create(`"metadata": {"${bad}": 1}`)
      expect(key.status, key.text).toBe(422)
      expect((key.body as ErrorBody).error.code).toBe("validation_failed")
    }
    const paid = await createPayment()
    await api(`/api/v1/test/payments/${paid.id}/simulate`, "POST", '{"outcome":"paid"}')
    expectFieldError(await api(`/api/v1/payments/${paid.id}/refunds`, "POST", '{"reason": "a\\u0000"}'), "reason")
    expectFieldError(await api(`/api/v1/payments/${paid.id}/refunds`, "POST", '{"reason": "\\ud800"}'), "reason")
    const fetched = await server.request(`/api/v1/payments/${paid.id}`, { key: shop.testKey })
    expect(fetched.body).toMatchObject({ status: "paid", refunds: [] })
  })

  it("U+0000 in a list or audit filter is the contract's 422, never a 500", async () => {
    for (const value of ["%00", "a%00b", "%ED%A0%80"]) {
      const list = await server.request(`/api/v1/payments?order_reference=${value}`, { key: shop.testKey })
      if (value === "%ED%A0%80") {
        // Invalid UTF-8 decodes to U+FFFD, which is ordinary text: a filter that matches nothing.
        expect(list.status, list.text).toBe(200)
        expect(list.body).toMatchObject({ data: [] })
      } else expectFieldError(list, "order_reference")
      const audit = await server.request(`/admin/api/v1/audit?application_id=${value}`, { key: server.adminToken })
      expectFieldError(audit, "application_id")
    }
  })

  it("dashboard filters with U+0000 or a prototype member's name, and the sign-in e-mail with U+0000, answer a page, never a 500", async () => {
    const admin = await createUser(server, { operatorAdmin: true })
    const client = await DashboardClient.signIn(server, admin)
    for (const path of [
      "/dashboard/operator/payments?order_reference=%00&payment_id=%00",
      "/dashboard/operator/applications?q=%00",
      "/dashboard/operator/audit?actor=%00&action=%00",
      // Names of Object.prototype's members must not be read as a retired action's lookup (a fuzz seed found it).
      "/dashboard/operator/audit?action=__proto__",
      "/dashboard/operator/audit?action=constructor",
      `/dashboard/apps/${shop.application.id}/payments?order_reference=%00`
    ]) {
      const page = await client.get(path)
      expect(page.status, `${path}: ${page.html.slice(0, 200)}`).toBeLessThan(500)
    }
    const stranger = new DashboardClient(server.baseUrl)
    const signIn = await stranger.login("a\u0000@shop.example", "correct horse battery")
    expect(signIn.status).toBeGreaterThanOrEqual(400)
    expect(signIn.status).toBeLessThan(500)
  })

  it("a return_url is stored WHATWG-normalised; one with CR, LF or another control character is refused", async () => {
    const created = await createPayment({ return_url: "https://SHOP.example/é\u2028?q=ü#frag ment" })
    expect(created.return_url).toBe("https://shop.example/%C3%A9%E2%80%A8?q=%C3%BC#frag%20ment")
    const fetched = await server.request(`/api/v1/payments/${created.id}`, { key: shop.testKey })
    expect((fetched.body as { return_url: string }).return_url).toBe(created.return_url)
    for (const url of ["https://shop.example/a\r\nb", "https://shop.example/\nx", "https://shop.example/\tx"]) {
      const response = await server.request("/api/v1/payments", {
        method: "POST",
        key: shop.testKey,
        body: { amount: 1000, order_reference: "crlf", return_url: url }
      })
      expectFieldError(response, "return_url")
    }
  })

  it("methods may be empty: the operator switches every method off and creates get method_not_enabled", async () => {
    const none = await server.createApplication()
    const patched = await operator(`/applications/${none.application.id}`, "PATCH", '{"methods": []}')
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body).toMatchObject({ methods: [] })
    const created = await operator("/applications", "POST", '{"name": "No methods", "methods": []}')
    expect(created.status, created.text).toBe(201)
    const refused = await server.request("/api/v1/payments", {
      method: "POST",
      key: none.testKey,
      body: { amount: 1000, order_reference: "no-method" }
    })
    expect(refused.status, refused.text).toBe(422)
    expect((refused.body as ErrorBody).error.code).toBe("method_not_enabled")
    const named = await server.request("/api/v1/payments", {
      method: "POST",
      key: none.testKey,
      body: { amount: 1000, order_reference: "no-method", method: "card" }
    })
    expect((named.body as ErrorBody).error.code).toBe("method_not_enabled")
  })

  it("the operator's settings form saves an application with no method checked", async () => {
    const target = await server.createApplication()
    const admin = await createUser(server, { operatorAdmin: true })
    const client = await DashboardClient.signIn(server, admin)
    const form = await client.get(`/dashboard/operator/applications/${target.application.id}`)
    expect(form.status).toBe(200)
    const value = (name: string) =>
      new RegExp(`name="${name}"[^>]*value="([^"]*)"`).exec(form.html)?.[1] ??
      new RegExp(`name="${name}"[^>]*>([^<]*)<`).exec(form.html)?.[1] ??
      ""
    const fields = Object.fromEntries(
      OperatorSettings.formNames.filter((name) => name !== "methods").map((name) => [name, value(name)])
    )
    const saved = await client.post(`/dashboard/operator/applications/${target.application.id}/settings`, {
      ...fields,
      methods: ""
    })
    expect(saved.status, saved.html.slice(0, 500)).toBe(303)
    const read = await server.request(`/admin/api/v1/applications/${target.application.id}`, {
      key: server.adminToken
    })
    expect(read.body).toMatchObject({ methods: [] })
  })
  it("a dashboard form value with U+0000 (a live refund's reason) is stored with U+FFFD, never a 500", async () => {
    const id = crypto.randomUUID()
    await insertPayment(server, {
      id,
      application_id: shop.application.id,
      mode: "live",
      status: "paid",
      order_reference: `live-${id.slice(0, 8)}`,
      paid_at: expr("now()")
    })
    const owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, owner)
    await client.get(`/dashboard/apps/${shop.application.id}/payments/${id}`)
    const requested = await client.post(`/dashboard/apps/${shop.application.id}/payments/${id}/refunds`, {
      amount: "100",
      reason: "broken\u0000mug"
    })
    expect(requested.status, requested.html.slice(0, 300)).toBe(303)
    const fetched = await server.request(`/api/v1/payments/${id}`, { key: shop.liveKey })
    expect(fetched.body).toMatchObject({ refunds: [{ amount: 100, reason: "broken\uFFFDmug", status: "pending" }] })
  })
})
