import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

interface CheckoutForm {
  readonly cookie: string
  readonly csrf: string
  readonly html: string
}

describe.each(databases)("hosted checkout on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  beforeAll(async () => {
    server = await startServer(database)
    shop = await server.createApplication({ methods: ["card"] })
  })
  afterAll(() => server.close())

  const createPayment = async (body: Record<string, unknown> = {}, key = shop.testKey) => {
    const response = await server.request("/api/v1/payments", {
      method: "POST",
      key,
      body: { amount: 1999, currency: "EUR", order_reference: `order-${crypto.randomUUID()}`, ...body }
    })
    expect(response.status).toBe(201)
    return response.body as { id: string; checkout_url: string }
  }

  const openCheckout = async (id: string): Promise<CheckoutForm> => {
    const response = await fetch(`${server.baseUrl}/checkout/${id}`)
    expect(response.status).toBe(200)
    const html = await response.text()
    const cookie = (response.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
    return { cookie, csrf, html }
  }

  const post = (id: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${server.baseUrl}/checkout/${id}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "CheckoutTest/1.0", ...headers },
      body: new URLSearchParams(fields).toString()
    })

  it("shows a pending test payment: amount, description, method, the payer form and three outcomes, no script", async () => {
    const payment = await createPayment({ description: "Two mugs" })
    expect(payment.checkout_url).toBe(`${server.baseUrl}/checkout/${payment.id}`)
    const { html, cookie } = await openCheckout(payment.id)
    expect(html).toContain("€19.99")
    expect(html).toContain("Two mugs")
    expect(html).toContain("card")
    for (const label of ['for="name"', 'for="email"', 'for="phone"', 'value="pay"', 'value="fail"', 'value="expire"']) {
      expect(html).toContain(label)
    }
    expect(html).not.toMatch(/<script/i)
    expect(cookie).toMatch(/^kassa_checkout=/)
  })

  it("Pay records the payer with address and User-Agent, sends the customer to return_url", async () => {
    const payment = await createPayment({ return_url: "https://shop.example/thanks?o=1" })
    const form = await openCheckout(payment.id)
    const response = await post(
      payment.id,
      { csrf: form.csrf, action: "pay", name: "Ada Lovelace", email: "ada@example.com", phone: "+44 20 7946 0000" },
      { cookie: form.cookie, origin: server.baseUrl }
    )
    expect(response.status).toBe(303)
    expect(response.headers.get("location")).toBe("https://shop.example/thanks?o=1")
    const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: shop.testKey })
    expect(fetched.body).toMatchObject({
      status: "paid",
      payer: {
        name: "Ada Lovelace",
        email: "ada@example.com",
        phone: "+44 20 7946 0000",
        ip: "127.0.0.1",
        user_agent: "CheckoutTest/1.0"
      }
    })
  })

  it("Fail records the payer and shows the outcome when there is no return_url", async () => {
    const payment = await createPayment()
    const form = await openCheckout(payment.id)
    const response = await post(payment.id, { csrf: form.csrf, action: "fail", name: "Bob" }, { cookie: form.cookie })
    expect(response.status).toBe(200)
    expect(await response.text()).toContain("Payment failed")
    const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: shop.testKey })
    expect(fetched.body).toMatchObject({ status: "failed", payer: { name: "Bob", email: null, phone: null } })
  })

  it("Let it expire expires the payment without a payer", async () => {
    const payment = await createPayment()
    const form = await openCheckout(payment.id)
    await post(payment.id, { csrf: form.csrf, action: "expire" }, { cookie: form.cookie })
    const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: shop.testKey })
    expect(fetched.body).toMatchObject({ status: "expired", payer: null })
  })

  it("refuses cross-site posts: no cookie, a wrong token, another payment's token, a foreign origin", async () => {
    const payment = await createPayment()
    const other = await createPayment()
    const form = await openCheckout(payment.id)
    const otherForm = await openCheckout(other.id)
    const attempts: ReadonlyArray<readonly [Record<string, string>, Record<string, string>]> = [
      [{ csrf: form.csrf, action: "pay", name: "Eve" }, {}],
      [{ csrf: "forged", action: "pay", name: "Eve" }, { cookie: form.cookie }],
      [{ csrf: otherForm.csrf, action: "pay", name: "Eve" }, { cookie: otherForm.cookie }],
      [
        { csrf: form.csrf, action: "pay", name: "Eve" },
        { cookie: form.cookie, origin: "https://evil.example" }
      ],
      [
        { csrf: form.csrf, action: "pay", name: "Eve" },
        { cookie: form.cookie, "sec-fetch-site": "cross-site" }
      ]
    ]
    for (const [fields, headers] of attempts) {
      const response = await post(payment.id, fields, headers)
      expect(response.status).toBe(403)
    }
    const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: shop.testKey })
    expect(fetched.body).toMatchObject({ status: "pending", payer: null })
  })

  it("asks again for a missing name or a bad e-mail, keeping what was typed (escaped)", async () => {
    const payment = await createPayment()
    const form = await openCheckout(payment.id)
    const response = await post(
      payment.id,
      { csrf: form.csrf, action: "pay", name: "", email: '"><script>alert(1)</script>' },
      { cookie: form.cookie }
    )
    expect(response.status).toBe(422)
    const html = await response.text()
    expect(html).toContain("Enter the payer")
    expect(html).not.toContain("<script>alert(1)</script>")
    expect(html).toContain("&#34;&#62;&#60;script&#62;")
  })

  it("escapes everything the merchant wrote", async () => {
    const payment = await createPayment({
      description: '<img src=x onerror="alert(1)">',
      order_reference: `<b>order</b>-${crypto.randomUUID()}`
    })
    const { html } = await openCheckout(payment.id)
    expect(html).not.toContain("<img src=x")
    expect(html).not.toContain("<b>order</b>")
    expect(html).toContain("&#60;img src&#61;x onerror&#61;&#34;alert(1)&#34;&#62;")
  })

  it("a payment that is no longer pending shows its status; a second post is refused with the status", async () => {
    const payment = await createPayment()
    const form = await openCheckout(payment.id)
    await post(payment.id, { csrf: form.csrf, action: "pay", name: "Ada" }, { cookie: form.cookie })
    const page = await fetch(`${server.baseUrl}/checkout/${payment.id}`)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain("Paid")
    expect(html).not.toContain('value="pay"')
    const again = await post(payment.id, { csrf: form.csrf, action: "fail", name: "Ada" }, { cookie: form.cookie })
    expect(again.status).toBe(409)
    const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: shop.testKey })
    expect(fetched.body).toMatchObject({ status: "paid" })
  })

  it("offers the application's methods as a choice and records the one the payer picks", async () => {
    const multi = await server.createApplication({ methods: ["card", "ideal"] })
    const payment = await createPayment({ method: "card" }, multi.testKey)
    const form = await openCheckout(payment.id)
    expect(form.html).toContain('type="radio" name="method" value="ideal"')
    expect(form.html).toMatch(/value="card"\s+checked/)
    const response = await post(
      payment.id,
      { csrf: form.csrf, action: "pay", name: "Ada", method: "ideal" },
      { cookie: form.cookie }
    )
    expect(response.status).toBe(200)
    const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: multi.testKey })
    expect(fetched.body).toMatchObject({ status: "paid", method: "ideal" })

    // A method the application does not offer is ignored.
    const second = await createPayment({ method: "card" }, multi.testKey)
    const secondForm = await openCheckout(second.id)
    await post(
      second.id,
      { csrf: secondForm.csrf, action: "pay", name: "Ada", method: "bitcoin" },
      { cookie: secondForm.cookie }
    )
    const kept = await server.request(`/api/v1/payments/${second.id}`, { key: multi.testKey })
    expect(kept.body).toMatchObject({ status: "paid", method: "card" })
  })

  it("an unknown or malformed id is a 404 page", async () => {
    expect((await fetch(`${server.baseUrl}/checkout/00000000-0000-4000-8000-000000000000`)).status).toBe(404)
    expect((await fetch(`${server.baseUrl}/checkout/not-an-id`)).status).toBe(404)
  })

  it("pages carry a strict Content-Security-Policy that allows the form to reach return_url", async () => {
    const payment = await createPayment({ return_url: "https://shop.example/back" })
    const response = await fetch(`${server.baseUrl}/checkout/${payment.id}`)
    const csp = response.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("form-action 'self' https://shop.example")
    expect(response.headers.get("x-frame-options")).toBe("DENY")
  })
  const eventCount = (paymentId: string) =>
    server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE payment_id = ${paymentId}`
        return rows[0]?.n ?? -1
      }).pipe(Effect.orDie)
    )

  it("a suspended or disabled application's pending test payment cannot be paid: a clear page, nothing recorded", async () => {
    for (const status of ["suspended", "disabled"] as const) {
      const app = await server.createApplication({ methods: ["card"] })
      const payment = await createPayment({}, app.testKey)
      const form = await openCheckout(payment.id)
      const events = await eventCount(payment.id)
      await server.run(ApplicationRepository.use((applications) => applications.update(app.application.id, { status })))
      const page = await fetch(`${server.baseUrl}/checkout/${payment.id}`)
      expect(page.status).toBe(403)
      const html = await page.text()
      expect(html).toContain("This payment cannot be paid now")
      expect(html).not.toContain('value="pay"')
      for (const action of ["pay", "fail", "expire"]) {
        const response = await post(
          payment.id,
          { csrf: form.csrf, action, name: "Ada" },
          { cookie: form.cookie, origin: server.baseUrl }
        )
        expect(response.status).toBe(409)
        expect(await response.text()).toContain("This payment cannot be paid now")
      }
      // The API refuses a suspended application's key: the payment is read from the database.
      const rows = await server.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ status: string }>`SELECT status FROM payments WHERE id = ${payment.id}`
        }).pipe(Effect.orDie)
      )
      expect(rows[0]?.status).toBe("pending")
      expect(await eventCount(payment.id)).toBe(events)
    }
  })

  it("a return_url with non-ASCII or U+2028 is stored percent-encoded, and Pay redirects to it", async () => {
    const payment = (await createPayment({
      return_url: "https://shop.example/bedankt/é\u2028x?q=ü"
    })) as unknown as { id: string; return_url: string }
    expect(payment.return_url).toBe("https://shop.example/bedankt/%C3%A9%E2%80%A8x?q=%C3%BC")
    const form = await openCheckout(payment.id)
    const response = await post(
      payment.id,
      { csrf: form.csrf, action: "pay", name: "Ada" },
      { cookie: form.cookie, origin: server.baseUrl }
    )
    expect(response.status).toBe(303)
    expect(response.headers.get("location")).toBe(payment.return_url)
  })

  it("a stored return_url from before normalisation never fails the redirect after the commit", async () => {
    const cases = [
      // Raw non-ASCII, a line separator, CR LF: re-serialised by the URL parser, ASCII again.
      { stored: "https://shop.example/é\u2028\r\nx", status: 303, location: "https://shop.example/%C3%A9%E2%80%A8x" },
      // Not a URL at all: the outcome page with the way back as a link instead of a redirect.
      { stored: "shop.example/é\r\nx", status: 200, location: null }
    ]
    for (const { stored, status, location } of cases) {
      const payment = await createPayment({ return_url: "https://shop.example/ok" })
      const form = await openCheckout(payment.id)
      await server.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE payments SET return_url = ${stored} WHERE id = ${payment.id}`
        }).pipe(Effect.orDie)
      )
      const response = await post(
        payment.id,
        { csrf: form.csrf, action: "pay", name: "Ada" },
        { cookie: form.cookie, origin: server.baseUrl }
      )
      expect(response.status).toBe(status)
      expect(response.headers.get("location")).toBe(location)
      if (location === null) expect(await response.text()).toContain("Back to the shop")
      const fetched = await server.request(`/api/v1/payments/${payment.id}`, { key: shop.testKey })
      expect(fetched.body).toMatchObject({ status: "paid" })
    }
  })
})
