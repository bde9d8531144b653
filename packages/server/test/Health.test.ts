import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("server basics on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  it("GET /healthz answers once the database answers", async () => {
    const response = await server.request("/healthz")
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ status: "ok" })
  })

  it("every response carries a Request-Id", async () => {
    const [a, b] = await Promise.all([server.request("/healthz"), server.request("/nope")])
    expect(a.headers.get("request-id")).toMatch(/^req_[0-9a-f]{32}$/)
    expect(b.headers.get("request-id")).toMatch(/^req_[0-9a-f]{32}$/)
    expect(a.headers.get("request-id")).not.toBe(b.headers.get("request-id"))
  })

  it("an unknown path gets 404 not_found in the error envelope", async () => {
    const response = await server.request("/nothing-here")
    expect(response.status).toBe(404)
    expect(response.body).toMatchObject({ error: { code: "not_found" } })
  })

  it("under /api/v1, authentication comes before routing (decisions §5): 401, then 404 / 405", async () => {
    const { testKey } = await server.createApplication()
    const anonymous = await server.request("/api/v1/nothing-here")
    expect(anonymous.status).toBe(401)
    expect(anonymous.body).toMatchObject({ error: { code: "unauthenticated" } })
    expect((await server.request("/api/v1/nothing-here", { key: "pk_test_unknown" })).status).toBe(401)

    const unknown = await server.request("/api/v1/nothing-here", { key: testKey })
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatchObject({ error: { code: "not_found" } })
    expect(unknown.headers.get("ratelimit-limit")).toBe("120")

    expect((await server.request("/api/v1/payments", { method: "DELETE" })).status).toBe(401)
    const wrongMethod = await server.request("/api/v1/payments", { method: "DELETE", key: testKey })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get("allow")).toBe("GET, POST")
  })

  it("a known path with another method gets 405 http_error with Allow", async () => {
    const response = await server.request("/healthz", { method: "DELETE" })
    expect(response.status).toBe(405)
    expect(response.headers.get("allow")).toBe("GET")
    expect(response.body).toMatchObject({ error: { code: "http_error" } })
  })

  it("/openapi.json is the contract's OpenAPI 3.1 document", async () => {
    const response = await server.request("/openapi.json")
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ openapi: "3.1.0", info: { title: "Kassa merchant API" } })
  })
})
