/**
 * Nothing waits on the database without a bound (issue 11 §3): a request past its deadline gets 500 `server_error`
 * with `Retry-After`, `/healthz` fails fast, and once the database answers again the API recovers by itself.
 */
import { Duration } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type FreezableProxy, startFreezableProxy } from "./support/FreezableProxy.ts"
import { holdDatabase } from "./support/HeldDatabase.ts"
import { databases, postgresUrl, type RunningServer, startServer } from "./support/TestServer.ts"

const deadline = Duration.seconds(2)

const expectOverDeadline = (response: Awaited<ReturnType<RunningServer["request"]>>) => {
  expect(response.status).toBe(500)
  expect(response.body).toMatchObject({ error: { code: "server_error" } })
  expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  expect(response.headers.get("request-id")).toMatch(/^req_/)
}

/** Polls `/healthz` and an authenticated list until both answer 200 (the test's timeout bounds it). */
const waitUntilHealthy = async (server: RunningServer, key: string) => {
  for (;;) {
    const [health, list] = await Promise.all([server.request("/healthz"), server.request("/api/v1/payments", { key })])
    if (health.status === 200 && list.status === 200) return
    expect([200, 500]).toContain(health.status)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe.each(databases)("request deadline on %s", (database) => {
  let server: RunningServer
  let testKey: string
  beforeAll(async () => {
    server = await startServer(database, { requestDeadline: deadline })
    testKey = (await server.createApplication()).testKey
  })
  afterAll(() => server.close())

  it("a request stuck behind a held database answers 500 server_error with Retry-After, then the API recovers", async () => {
    // PGlite has one connection: a transaction holding it leaves every request waiting for the pool. On PostgreSQL an
    // exclusive lock on api_keys leaves every authenticated request waiting on the lock.
    const release = await holdDatabase(server, database, "api_keys")
    try {
      const stuck = await Promise.all([
        server.request("/api/v1/payments", { key: testKey }),
        server.request("/api/v1/payments", {
          method: "POST",
          key: testKey,
          body: { amount: 1000, order_reference: "held-order" }
        })
      ])
      for (const response of stuck) expectOverDeadline(response)
      if (database === "pglite") expectOverDeadline(await server.request("/healthz"))
    } finally {
      await release()
    }
    await waitUntilHealthy(server, testKey)
    // The create that ran out of time committed nothing: its work was interrupted behind the answer.
    const listed = await server.request("/api/v1/payments?order_reference=held-order", { key: testKey })
    expect(listed.body).toMatchObject({ data: [] })
  })
})

describe.runIf(databases.includes("postgres"))("a silent PostgreSQL (frozen, not refusing)", () => {
  let proxy: FreezableProxy
  let server: RunningServer
  let testKey: string
  beforeAll(async () => {
    const target = new URL(postgresUrl)
    proxy = await startFreezableProxy({ host: target.hostname, port: Number(target.port || 5432) })
    server = await startServer(
      "postgres",
      { requestDeadline: deadline },
      { rewriteDatabaseUrl: (url) => Object.assign(url, { hostname: "127.0.0.1", port: String(proxy.port) }) }
    )
    testKey = (await server.createApplication()).testKey
  })
  afterEach(() => proxy.thaw())
  afterAll(async () => {
    proxy.thaw()
    await server.close()
    await proxy.close()
  })

  it("requests answer 500 server_error at their deadline, /healthz fails fast, and the API recovers once it answers again", async () => {
    expect((await server.request("/api/v1/payments", { key: testKey })).status).toBe(200)
    proxy.freeze()
    // More requests than the pool has connections, so some wait for a connection and some on a silent one.
    const during = await Promise.all([
      ...Array.from({ length: 30 }, () => server.request("/api/v1/payments", { key: testKey })),
      server.request("/api/v1/payments", {
        method: "POST",
        key: testKey,
        body: { amount: 1000, order_reference: "frozen-order" }
      })
    ])
    for (const response of during) expectOverDeadline(response)
    expectOverDeadline(await server.request("/healthz"))
    proxy.thaw()
    await waitUntilHealthy(server, testKey)
    const created = await server.request("/api/v1/payments", {
      method: "POST",
      key: testKey,
      body: { amount: 1000, order_reference: "after-freeze" }
    })
    expect(created.status).toBe(201)
  })
})
