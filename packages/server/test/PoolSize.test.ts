/**
 * KASSA_DATABASE_POOL_SIZE (issue 14 §2) bounds the server's connections to PostgreSQL: under many concurrent
 * requests, the database sees at most that many of the server's connections (the delivery engine's two included).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { pendingPayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.skipIf(!databases.includes("postgres"))("KASSA_DATABASE_POOL_SIZE on PostgreSQL", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer("postgres", { databasePoolSize: 4 })
  })
  afterAll(async () => {
    await server.close()
  })

  const connections = () =>
    server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ readonly n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'kassa'`
        return rows[0]?.n ?? 0
      }).pipe(Effect.orDie)
    )

  it("the server holds at most the configured 4 connections under 40 concurrent creates", async () => {
    const { testKey } = await server.createApplication()
    const peak = { n: 0 }
    const watching = (async () => {
      for (let i = 0; i < 20; i++) {
        peak.n = Math.max(peak.n, await connections())
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
    })()
    await Promise.all(Array.from({ length: 40 }, () => pendingPayment(server, testKey)))
    await watching
    expect(peak.n).toBeGreaterThanOrEqual(1)
    expect(peak.n).toBeLessThanOrEqual(4)
  })
})
