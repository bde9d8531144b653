/**
 * Probes beside `/healthz` (issue 14 §1): `/livez` answers while the process runs, whatever the database does;
 * `/readyz` answers 200 only when the database answers in time, its schema is this build's, and no stop has begun —
 * during a drain (SIGTERM) it answers 503 while the server still serves. And a production process writes only JSON
 * lines, its start line included.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { holdDatabase } from "./support/HeldDatabase.ts"
import { query } from "./support/PaymentFixtures.ts"
import { seedDataDir } from "./support/PgliteImage.ts"
import { spawnServer } from "./support/ServerProcess.ts"
import { databases, freePort, startServer } from "./support/TestServer.ts"

describe.each(databases)("probes on %s", (database) => {
  it("/livez and /readyz answer 200 on a running server, without authentication", async () => {
    const server = await startServer(database)
    try {
      const live = await server.request("/livez")
      expect(live.status).toBe(200)
      expect(live.body).toEqual({ status: "live" })
      const ready = await server.request("/readyz")
      expect(ready.status).toBe(200)
      expect(ready.body).toEqual({ status: "ready" })
      expect(ready.headers.get("request-id")).toMatch(/^req_/)
      // A known path with another method is 405, like every route.
      expect((await server.request("/readyz", { method: "POST" })).status).toBe(405)
    } finally {
      await server.close()
    }
  })

  it("/readyz answers 503 schema_behind when the database lacks this build's newest migration", async () => {
    const server = await startServer(database)
    try {
      await query(
        server,
        (sql) => sql`DELETE FROM kassa_migrations WHERE migration_id = (SELECT max(migration_id) FROM kassa_migrations)`
      )
      const ready = await server.request("/readyz")
      expect(ready.status).toBe(503)
      expect(ready.body).toEqual({ status: "not_ready", reason: "schema_behind" })
      expect((await server.request("/livez")).status).toBe(200)
    } finally {
      await server.close()
    }
  })

  it("/readyz answers 503 within its bound when the database does not answer; /livez still 200", async () => {
    const server = await startServer(database)
    // PGlite's one connection is held; on PostgreSQL the migrations table is locked.
    const release = await holdDatabase(server, database, "kassa_migrations")
    try {
      const started = Date.now()
      const ready = await server.request("/readyz")
      expect(ready.status).toBe(503)
      expect(ready.body).toEqual({ status: "not_ready", reason: "database" })
      // Bounded by the health timeout (2 s), far below the request deadline (15 s).
      expect(Date.now() - started).toBeLessThan(Duration.toMillis(Duration.seconds(10)))
      expect((await server.request("/livez")).status).toBe(200)
    } finally {
      await release()
      await server.close()
    }
  })

  it("during a stop's drain /readyz answers 503 while the server still serves", async () => {
    const server = await startServer(database, { drainDelay: Duration.seconds(2) })
    expect((await server.request("/readyz")).status).toBe(200)
    const stopping = server.close()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const ready = await server.request("/readyz")
    expect(ready.status).toBe(503)
    expect(ready.body).toEqual({ status: "not_ready", reason: "draining" })
    expect((await server.request("/livez")).status).toBe(200)
    expect((await server.request("/healthz")).status).toBe(200)
    await stopping
  })
})

describe("a production process", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "kassa-probes-"))
  // A migrated database (PgliteImage): the test is about the stop, not a first start (initdb, the migrations).
  beforeAll(() => seedDataDir(dataDir))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  const start = spawnServer

  it("at SIGTERM answers /readyz 503 for KASSA_DRAIN_DELAY, exits 0, and writes only JSON lines", async () => {
    const port = await freePort()
    const metricsPort = await freePort()
    const started = start({
      KASSA_ENV: "production",
      KASSA_ALLOW_EMBEDDED: "1",
      KASSA_PORT: String(port),
      KASSA_METRICS_PORT: String(metricsPort),
      KASSA_DATA_DIR: dataDir,
      KASSA_DRAIN_DELAY: "3 seconds",
      KASSA_ADMIN_TOKEN: "admin-token-for-probe-test-0123456789",
      KASSA_SECRET_KEY: "secret-key-for-probe-test-0123456789"
    })
    const deadline = Date.now() + 60_000
    let ready = 0
    while (Date.now() < deadline && ready !== 200) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`)
        .then((response) => response.status)
        .catch(() => 0)
      if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(ready, started.output()).toBe(200)
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200)

    started.child.kill("SIGTERM")
    await new Promise((resolve) => setTimeout(resolve, 300))
    const draining = await fetch(`http://127.0.0.1:${port}/readyz`)
    expect(draining.status).toBe(503)
    expect(await draining.json()).toEqual({ status: "not_ready", reason: "draining" })
    expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200)
    expect(await started.exited).toBe(0)

    const lines = started
      .output()
      .split("\n")
      .filter((line) => line.length > 0)
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow()
    const messages = lines.map((line) => (JSON.parse(line) as { message: string }).message)
    expect(messages.some((message) => message.startsWith("Kassa listening on"))).toBe(true)
  }, 120_000)
})
