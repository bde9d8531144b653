import { request as httpRequest } from "node:http"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "./support/TestServer.ts"

/** A GET with exactly these headers (fetch would add Accept-Encoding and undo the compression), its raw bytes. */
const rawGet = (baseUrl: string, path: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
    (resolve, reject) => {
      const request = httpRequest(`${baseUrl}${path}`, { headers, agent: false }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) })
        )
      })
      request.on("error", reject)
      request.end()
    }
  )

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

  describe.each(["/docs", "/openapi.json"])("%s is built once, compressed and cached (issue 23)", (path) => {
    it("without Accept-Encoding it is sent as is, with a strong ETag, Vary and Cache-Control", async () => {
      const plain = await rawGet(server.baseUrl, path)
      expect(plain.status).toBe(200)
      expect(plain.headers["content-encoding"]).toBeUndefined()
      expect(plain.headers.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/)
      expect(plain.headers.vary).toBe("Accept-Encoding")
      expect(plain.headers["cache-control"]).toBe("public, max-age=300")
      expect(Number(plain.headers["content-length"])).toBe(plain.body.length)
      // The same bytes each time: built once, not per request.
      const again = await rawGet(server.baseUrl, path)
      expect(again.headers.etag).toBe(plain.headers.etag)
      expect(again.body.equals(plain.body)).toBe(true)
    })

    it("brotli and gzip, as Accept-Encoding asks, decompress to the same bytes; each has its own ETag", async () => {
      const plain = await rawGet(server.baseUrl, path)
      const br = await rawGet(server.baseUrl, path, { "accept-encoding": "gzip, deflate, br" })
      expect(br.headers["content-encoding"]).toBe("br")
      expect(br.headers.vary).toBe("Accept-Encoding")
      expect(br.body.length).toBeLessThan(plain.body.length / 2)
      expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true)
      const gzip = await rawGet(server.baseUrl, path, { "accept-encoding": "gzip" })
      expect(gzip.headers["content-encoding"]).toBe("gzip")
      expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true)
      // br refused with q=0: gzip; nothing acceptable: as is.
      const noBrotli = await rawGet(server.baseUrl, path, { "accept-encoding": "br;q=0, gzip;q=0.5" })
      expect(noBrotli.headers["content-encoding"]).toBe("gzip")
      const none = await rawGet(server.baseUrl, path, { "accept-encoding": "deflate" })
      expect(none.headers["content-encoding"]).toBeUndefined()
      expect(none.body.equals(plain.body)).toBe(true)
      const tags = new Set([plain.headers.etag, br.headers.etag, gzip.headers.etag])
      expect(tags.size).toBe(3)
    })

    it("a matching If-None-Match gets 304 with no body; another ETag gets the page", async () => {
      const br = await rawGet(server.baseUrl, path, { "accept-encoding": "br" })
      const etag = String(br.headers.etag)
      const notModified = await rawGet(server.baseUrl, path, { "accept-encoding": "br", "if-none-match": etag })
      expect(notModified.status).toBe(304)
      expect(notModified.body.length).toBe(0)
      expect(notModified.headers.etag).toBe(etag)
      expect(notModified.headers.vary).toBe("Accept-Encoding")
      // A weak form of the same tag, in a list, matches too (weak comparison, as for any GET).
      const weak = await rawGet(server.baseUrl, path, {
        "accept-encoding": "br",
        "if-none-match": `"other", W/${etag}`
      })
      expect(weak.status).toBe(304)
      // The brotli tag does not validate the uncompressed representation.
      const identity = await rawGet(server.baseUrl, path, { "if-none-match": etag })
      expect(identity.status).toBe(200)
      expect(identity.body.length).toBeGreaterThan(0)
      const stale = await rawGet(server.baseUrl, path, { "accept-encoding": "br", "if-none-match": '"stale"' })
      expect(stale.status).toBe(200)
    })
  })

  it("/docs keeps its Content-Security-Policy on every representation", async () => {
    for (const encoding of [undefined, "br", "gzip"]) {
      const answer = await rawGet(
        server.baseUrl,
        "/docs",
        encoding === undefined ? {} : { "accept-encoding": encoding }
      )
      expect(answer.headers["content-security-policy"]).toContain("script-src 'sha256-")
      expect(answer.headers["x-frame-options"]).toBe("DENY")
    }
  })
})
