/**
 * The benchmark's floor (issue 23): bench/baseline.ts's server — plain `node:http`, the same statements, the
 * same answers — on the `postgres` driver (porsager) instead of @effect/sql-pg, and with no effect runtime around
 * the queries. Kassa against bench/baseline.ts is what the framework, rules and checks cost; bench/baseline.ts
 * against this is what @effect/sql-pg and its runtime cost against a driver with no effect runtime for the same SQL.
 * Measured (2026-11-27, 4 rounds, load 2–6): this costs 1.14× the baseline's CPU per GET and 1.20× per create, so
 * the driver is not where Kassa's cost over the baseline goes. The server, the key's hash and the create's text are
 * bench/BaselineServer.ts's, shared with bench/baseline.ts.
 *
 * Usage: node bench/baseline-postgres.ts <port>   (DATABASE_URL, KASSA_SECRET_KEY as for the server)
 */

import postgres from "postgres"
import { createStatement, fetchStatement, serveBaseline } from "./BaselineServer.ts"

const port = Number(process.argv[2] ?? 4103)

// The pool size of Kassa and bench/baseline.ts; int8 parsed to a number, as both of them answer it.
const sql = postgres(process.env.DATABASE_URL ?? "", {
  max: 20,
  onnotice: () => undefined,
  types: {
    int8: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) }
  }
})

serveBaseline("baseline-postgres", port, {
  authenticate: async (hash) =>
    (
      await sql`
    SELECT k.id AS key_id, k.mode AS key_mode, a.* FROM api_keys k JOIN applications a ON a.id = k.application_id
    WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
    )[0],
  fetch: async (hash, id) => (await sql.unsafe(fetchStatement, [hash, id], { prepare: true }))[0],
  create: async (parameters) => (await sql.unsafe(createStatement, parameters, { prepare: true }))[0],
  json: (value) => JSON.stringify(value)
})
