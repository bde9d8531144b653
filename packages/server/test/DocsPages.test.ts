import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "./support/TestServer.ts"

// Pages do not depend on the database; PGlite is enough.
describe("documentation pages", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer("pglite")
  })
  afterAll(() => server.close())

  it("/docs is the API reference and loads nothing from elsewhere (works offline)", async () => {
    const response = await server.request("/docs")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/html")
    // No external script, stylesheet or font: every resource the page loads is inline.
    expect(response.text).not.toMatch(/<script[^>]+src=["']https?:/i)
    expect(response.text).not.toMatch(/<link[^>]+href=["']https?:/i)
    expect(response.text).toContain("Kassa merchant API")
  })

  it("/docs shows SDK and curl snippets for the main operations, addressed to this server", async () => {
    const response = await server.request("/docs")
    // Scalar renders the contract's `x-codeSamples` beside each operation; the contract is embedded in the page.
    for (const call of [
      "kassa.payments.create(",
      "kassa.payments.get(",
      "kassa.payments.list(",
      "kassa.payments.cancel(",
      "kassa.payments.refund(",
      "kassa.events.list("
    ]) {
      expect(response.text).toContain(call)
    }
    for (const curl of ["curl -X POST", "curl -X GET", "/api/v1/payments?status=paid", "/api/v1/events?type="]) {
      expect(response.text).toContain(curl)
    }
    expect(response.text).toContain("x-codeSamples")
    // The server is this one, not the contract's `{origin}` placeholder, so "try it" reaches it.
    expect(response.text).toContain(`"servers":[{"url":"${server.baseUrl}"`)
    expect(response.text).not.toContain("{origin}")
  })

  it("/docs/refunds explains test and live refunds, with the security headers every page has", async () => {
    const response = await server.request("/docs/refunds")
    expect(response.status).toBe(200)
    expect(response.text).toContain("refunds_processed_manually")
    expect(response.text).toContain("refund_amount_exceeds_refundable")
    expect(response.headers.get("content-security-policy")).toContain("default-src 'none'")
    expect(response.headers.get("x-frame-options")).toBe("DENY")
  })

  it("a wrong method on a page gets 405 with Allow", async () => {
    const response = await server.request("/docs/refunds", { method: "POST" })
    expect(response.status).toBe(405)
    expect(response.headers.get("allow")).toBe("GET")
  })
})
