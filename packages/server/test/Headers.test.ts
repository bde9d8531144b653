/**
 * Headers and the edges of HTTP (issue 11 §16): the reference page's CSP, answers with payer data never cached or
 * sniffed, Node's own refusals in the error envelope, a body that never arrives cut off, paths matched exactly.
 */
import { createHash } from "node:crypto"
import { connect } from "node:net"
import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createPayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

/** Sends raw bytes on a new connection; resolves with everything the server wrote once it closes the connection. */
const rawExchange = (baseUrl: string, bytes: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(baseUrl)
    const socket = connect({ host: hostname, port: Number(port) })
    let received = ""
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString()
    })
    socket.once("connect", () => socket.write(bytes))
    socket.once("close", () => resolve(received))
    socket.once("error", reject)
  })

/** Status line, headers (lower-cased names) and body of one raw HTTP answer. */
const parseAnswer = (raw: string) => {
  const [head = "", body = ""] = raw.split("\r\n\r\n")
  const [statusLine = "", ...lines] = head.split("\r\n")
  const headers = new Map(
    lines.map((line) => {
      const colon = line.indexOf(":")
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()] as const
    })
  )
  return { status: Number(statusLine.split(" ")[1]), headers, body: JSON.parse(body) as unknown }
}

describe.each(databases)("headers and HTTP edges on %s", (database) => {
  let server: RunningServer
  let testKey: string
  beforeAll(async () => {
    // A short receive timeout, so the test of a body that never arrives takes a second, not thirty.
    server = await startServer(database, { requestReceiveTimeout: Duration.seconds(1) })
    testKey = (await server.createApplication()).testKey
  })
  afterAll(() => server.close())

  it("/docs allows only its own two inline scripts, by hash, and cannot be framed or sniffed", async () => {
    const response = await server.request("/docs")
    expect(response.status).toBe(200)
    const policy = response.headers.get("content-security-policy") ?? ""
    expect(policy).toContain("default-src 'none'")
    expect(policy).toContain("frame-ancestors 'none'")
    const scripts = [...response.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, source]) => source ?? "")
    expect(scripts).toHaveLength(2)
    const scriptSrc = policy.split("; ").find((directive) => directive.startsWith("script-src ")) ?? ""
    expect(scriptSrc.split(" ").slice(1).sort()).toEqual(
      scripts.map((source) => `'sha256-${createHash("sha256").update(source).digest("base64")}'`).sort()
    )
    expect(policy).not.toContain("unsafe-eval")
    expect(scriptSrc).not.toContain("unsafe-inline")
    expect(response.headers.get("x-frame-options")).toBe("DENY")
    expect(response.headers.get("x-content-type-options")).toBe("nosniff")
  })

  it("merchant and operator API answers, errors included, are never stored by a cache nor sniffed", async () => {
    const created = await createPayment(server, testKey)
    const answers = [
      created,
      await server.request("/api/v1/payments", { key: testKey }),
      await server.request("/api/v1/payments"),
      await server.request("/api/v1/nothing-here", { key: testKey }),
      await server.request("/admin/api/v1/applications", { key: server.adminToken }),
      await server.request("/admin/api/v1/applications")
    ]
    expect(answers.map((answer) => answer.status)).toEqual([201, 200, 401, 404, 200, 401])
    for (const answer of answers) {
      expect(answer.headers.get("cache-control")).toBe("no-store")
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff")
    }
    expect((await server.request("/healthz")).headers.get("x-content-type-options")).toBe("nosniff")
  })

  it("a request Node cannot parse gets 400 http_error in the error envelope", async () => {
    const answer = parseAnswer(
      await rawExchange(server.baseUrl, "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n")
    )
    expect(answer.status).toBe(400)
    expect(answer.headers.get("content-type")).toBe("application/json")
    expect(answer.body).toMatchObject({ error: { code: "http_error" } })
  })

  it("headers over Node's limit get 431 http_error in the error envelope", async () => {
    const answer = parseAnswer(
      await rawExchange(server.baseUrl, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
    )
    expect(answer.status).toBe(431)
    expect(answer.body).toMatchObject({ error: { code: "http_error" } })
  })

  it("a request whose declared body never arrives is cut off with 408 (KASSA_REQUEST_RECEIVE_TIMEOUT)", async () => {
    const raw = await rawExchange(
      server.baseUrl,
      `POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"amount":'
    )
    const answer = parseAnswer(raw)
    expect(answer.status).toBe(408)
    expect(answer.body).toMatchObject({ error: { code: "http_error" } })
  })

  it("paths match exactly: another case, a doubled or a trailing slash is 404, so a proxy's path rules cannot be bypassed", async () => {
    expect((await server.request("/api/v1/payments", { key: testKey })).status).toBe(200)
    for (const path of [
      "/API/V1/payments",
      "/api/v1/Payments",
      "//api/v1/payments",
      "/api//v1/payments",
      "/ADMIN/api/v1/applications",
      "//admin/api/v1/applications",
      "/Healthz",
      "/DOCS",
      "/api/v1/payments/",
      "/api/v1/events/",
      "/admin/api/v1/applications/",
      "/healthz/",
      "/docs/"
    ]) {
      const answer = await server.request(path, {
        key: path.toLowerCase().includes("admin") ? server.adminToken : testKey
      })
      expect({ path, status: answer.status }).toEqual({ path, status: 404 })
      expect(answer.body).toMatchObject({ error: { code: "not_found" } })
    }
  })
})
