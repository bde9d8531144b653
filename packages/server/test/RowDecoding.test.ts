/**
 * Rows are decoded, not cast (issue #13 §4): the shared column schemas (`database/Columns.ts`) read what the driver
 * hands back on PGlite and on PostgreSQL alike — a timestamp as a column and inside `json_agg`, a bigint, jsonb — and
 * refuse what they cannot read exactly; the audit log reads a retired action name as the act's one name.
 */
import type { Ids } from "@kassa/core"
import { DateTime, Effect, Exit, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AuditLog } from "../src/audit/AuditLog.ts"
import * as ApplicationQueries from "../src/dashboard/ApplicationQueries.ts"
import * as Columns from "../src/database/Columns.ts"
import { paidPayment, pendingPayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const Probe = Schema.Struct({
  at: Columns.Timestamp,
  inside: Columns.Json(Schema.Array(Schema.Struct({ at: Columns.Timestamp, amount: Columns.Integer }))),
  amount: Columns.Integer,
  count: Columns.Integer,
  methods: Columns.StringArray,
  none: Columns.NullableTimestamp
})

describe.each(databases)("row decoding on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  it("reads a timestamp as a column and inside json_agg, a bigint, a count and jsonb", async () => {
    const row = await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* Columns.first(Probe)(sql`
          SELECT '2026-11-25T10:15:30.123456Z'::timestamptz AS at,
            (SELECT json_agg(x) FROM (SELECT '2026-11-25T10:15:30.123456Z'::timestamptz AS at,
              9007199254740991::bigint AS amount) x) AS inside,
            9007199254740991::bigint AS amount, (SELECT count(*) FROM generate_series(1, 3)) AS count,
            '["card","ideal"]'::jsonb AS methods, NULL::timestamptz AS none
        `)
      })
    )
    const decoded = Option.getOrThrow(row)
    // A column arrives as a Date (milliseconds); inside JSON as text, with microseconds on PostgreSQL.
    expect(DateTime.formatIso(decoded.at)).toBe("2026-11-25T10:15:30.123Z")
    expect(DateTime.formatIso(decoded.inside[0]?.at ?? DateTime.makeUnsafe(0))).toBe("2026-11-25T10:15:30.123Z")
    expect(decoded.inside[0]?.amount).toBe(Number.MAX_SAFE_INTEGER)
    expect(decoded.amount).toBe(Number.MAX_SAFE_INTEGER)
    expect(decoded.count).toBe(3)
    expect(decoded.methods).toEqual(["card", "ideal"])
    expect(decoded.none).toBeNull()
  })

  it("refuses a bigint past 2^53 - 1 instead of rounding it", async () => {
    const exit = await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* Columns.first(Schema.Struct({ amount: Columns.Integer }))(
          sql`SELECT 9007199254740993::bigint AS amount`
        )
      }).pipe(Effect.exit)
    )
    expect(Exit.isFailure(exit)).toBe(true)
    expect(Exit.isFailure(exit) && exit.cause.toString()).toContain("SchemaError")
  })

  it("reads the retired name of an act as its name, and finds it under either", async () => {
    const { application } = await server.createApplication()
    const audit = await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const log = yield* AuditLog
        // An entry from before the act had one name, and one after.
        yield* sql`
          INSERT INTO audit_log (at, actor, action, application_id, target, details)
          VALUES (now(), 'old@example.com', 'api_key.created', ${application.id}, 'k1', '{"mode":"test"}')
        `
        yield* log.record(
          { label: "new@example.com", userId: null, ip: null },
          { action: "api_key.issued", applicationId: application.id, target: "k2", details: { mode: "live" } }
        )
        return {
          byName: yield* log.list({ applicationId: application.id, action: "api_key.issued", limit: 10 }),
          byRetiredName: yield* log.list({ applicationId: application.id, action: "api_key.created", limit: 10 }),
          actions: yield* log.actions
        }
      })
    )
    for (const page of [audit.byName, audit.byRetiredName]) {
      expect(page.entries.map((entry) => [entry.target, entry.action, entry.details])).toEqual([
        ["k2", "api_key.issued", { mode: "live" }],
        ["k1", "api_key.issued", { mode: "test" }]
      ])
    }
    expect(audit.actions.filter((action) => action.startsWith("api_key."))).toEqual(["api_key.issued"])
  })

  it("reads the dashboards' rows: a list's customer address and cursor, the overview's counts, a timeline", async () => {
    const { application, testKey } = await server.createApplication()
    const paid = await paidPayment(server, testKey, {
      amount: 2500,
      customer: { name: null, email: "eve@shop.example", phone: null }
    })
    const anonymous = await pendingPayment(server, testKey, { amount: 700 })
    const applicationId = application.id
    const read = await server.run(
      Effect.gen(function* () {
        const queries = ApplicationQueries.make(yield* SqlClient.SqlClient)
        const first = yield* queries.payments(applicationId, { limit: 1 })
        const firstId = first.rows[0]?.id as Ids.PaymentId
        return {
          first,
          next: yield* queries.payments(applicationId, { limit: 1, startingAfter: firstId }),
          overview: yield* queries.overview(applicationId, DateTime.makeUnsafe(0)),
          timeline: yield* queries.timeline(applicationId, paid.id as Ids.PaymentId),
          mode: yield* queries.paymentMode(applicationId, paid.id as Ids.PaymentId)
        }
      })
    )
    // Newest first, one a page: the page after the newest one holds the older one.
    expect(read.first.hasMore).toBe(true)
    expect(read.first.rows.map((row) => [row.id, row.customerEmail, row.amount, row.status])).toEqual([
      [anonymous.id, null, 700, "pending"]
    ])
    expect(read.next.hasMore).toBe(false)
    expect(read.next.rows.map((row) => [row.id, row.customerEmail, row.amount, row.status, row.mode])).toEqual([
      [paid.id, "eve@shop.example", 2500, "paid", "test"]
    ])
    expect(read.next.rows[0]?.createdAt.toISOString()).toBe(paid.created_at)
    // The paid event's delivery is attempted meanwhile, so whether it is retrying yet depends on timing: only the
    // payments' counts are fixed here.
    expect([read.overview.test.payments, read.overview.test.paid]).toEqual([2, 1])
    expect(read.overview.live).toEqual({ payments: 0, paid: 0, failedDeliveries: 0, retryingDeliveries: 0 })
    expect(read.timeline.map((entry) => entry.event)).toEqual(["payment.paid"])
    expect(Option.getOrNull(read.mode)).toBe("test")
  })
})
