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
    const response = await server.request("/api/v1/nothing-here")
    expect(response.status).toBe(404)
    expect(response.body).toMatchObject({ error: { code: "not_found" } })
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
