/** Bad input gets the contract's error (decisions §2, §5), never a 500, and changes nothing. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

describe.each(databases)("request errors on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  beforeAll(async () => {
    server = await startServer(database)
    shop = await server.createApplication()
  })
  afterAll(() => server.close())

  const post = (body: string, headers: Record<string, string> = {}, key: string | null = shop.testKey) =>
    fetch(`${server.baseUrl}/api/v1/payments`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        ...headers
      },
      body
    })

  const paymentCount = async () => {
    const response = await server.request("/api/v1/payments?limit=100", { key: shop.testKey })
    return (response.body as { data: ReadonlyArray<unknown> }).data.length
  }

  it("a body that is not JSON gets 400 http_error", async () => {
    const response = await post('{"amount": 100,')
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: { code: "http_error" } })
  })

  it("a body over 1 MiB gets 413 http_error", async () => {
    const response = await post(
      JSON.stringify({ amount: 1000, order_reference: "big", description: "x".repeat(1_100_000) })
    )
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ error: { code: "http_error" } })
  })

  it("a body sent as something other than JSON gets 415 http_error", async () => {
    const response = await post("amount=100&order_reference=x", { "content-type": "application/x-www-form-urlencoded" })
    expect(response.status).toBe(415)
    expect(await response.json()).toMatchObject({ error: { code: "http_error" } })
  })

  it("authentication comes first: without a key, even a broken body gets 401", async () => {
    const response = await post("{not json", {}, null)
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: { code: "unauthenticated" } })
  })

  it("unknown fields and invalid ones are reported together in fields", async () => {
    const response = await post(JSON.stringify({ amount: -1, order_reference: "", colour: "red" }))
    expect(response.status).toBe(422)
    const body = (await response.json()) as { error: { code: string; fields: Record<string, ReadonlyArray<string>> } }
    expect(body.error.code).toBe("validation_failed")
    expect(Object.keys(body.error.fields).sort()).toEqual(["amount", "colour", "order_reference"])
  })

  it("a bad Idempotency-Key is validation_failed on Idempotency-Key", async () => {
    for (const key of ["", "x".repeat(256), "naïve"]) {
      const response = await post(JSON.stringify({ amount: 1000, order_reference: "ik" }), { "idempotency-key": key })
      if (key === "") {
        // An empty header is the same as none (HTTP cannot tell them apart reliably): the create goes through.
        expect([201, 422]).toContain(response.status)
        continue
      }
      expect(response.status).toBe(422)
      const body = (await response.json()) as { error: { code: string; fields: Record<string, unknown> } }
      expect(body.error.code).toBe("validation_failed")
      expect(body.error.fields).toHaveProperty("Idempotency-Key")
    }
  })

  it("none of these created a payment or answered 500", async () => {
    const before = await paymentCount()
    const answers = await Promise.all([
      post("]"),
      post("null"),
      post("[]"),
      post('"text"'),
      post(JSON.stringify({ amount: "100", order_reference: 1 })),
      post(JSON.stringify({ amount: 1e300, order_reference: "x" }))
    ])
    for (const answer of answers) {
      expect(answer.status).toBeGreaterThanOrEqual(400)
      expect(answer.status).toBeLessThan(500)
      expect(((await answer.json()) as { error: { code: string } }).error.code).toMatch(
        /^(http_error|validation_failed)$/
      )
    }
    expect(await paymentCount()).toBe(before)
  })
})
