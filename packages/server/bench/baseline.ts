/**
 * The benchmark's baseline: plain `node:http` doing the same SQL as Kassa's GET and create through the same
 * driver (@effect/sql-pg), with no framework — key lookup by keyed hash carrying the payment's read with its refunds
 * (one statement, as Kassa's since session 17), or the key lookup and then the payment inserted by one statement (a test-mode create that rule 5's index lets through). What
 * Kassa costs on top of this is the price of its framework, rules and checks. Keep it in step with Kassa's SQL.
 *
 * Usage: node bench/baseline.ts <port>   (DATABASE_URL, KASSA_SECRET_KEY as for the server)
 */

import { PgClient } from "@effect/sql-pg"
import { Effect, type Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createStatement, fetchStatement, serveBaseline } from "./BaselineServer.ts"

const port = Number(process.argv[2] ?? 4100)
const databaseUrl = process.env.DATABASE_URL ?? ""

const runtime = ManagedRuntime.make(
  PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 20 }) as Layer.Layer<SqlClient.SqlClient>
)
const sql = await runtime.runPromise(
  Effect.gen(function* () {
    return yield* SqlClient.SqlClient
  })
)
const run = <A>(effect: Effect.Effect<A, unknown>) => runtime.runPromise(effect)

serveBaseline("baseline", port, {
  authenticate: async (hash) =>
    (
      await run(sql`
    SELECT k.id AS key_id, k.mode AS key_mode, a.* FROM api_keys k JOIN applications a ON a.id = k.application_id
    WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`)
    )[0],
  fetch: async (hash, id) => (await run(sql.unsafe<Record<string, unknown>>(fetchStatement, [hash, id])))[0],
  create: async (parameters) => (await run(sql.unsafe<Record<string, unknown>>(createStatement, parameters)))[0],
  // bigint columns come back as JS bigint; Kassa converts them to numbers too.
  json: (value) => JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? Number(v) : v))
})
