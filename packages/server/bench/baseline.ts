/**
 * The benchmark's baseline: plain `node:http` doing the same SQL as Kassa's GET and create through the same
 * driver (@effect/sql-pg), with no framework — key lookup by keyed hash, then the payment read with its refunds in
 * one statement, or the payment inserted by one statement (a test-mode create that rule 5's index lets through). What
 * Kassa costs on top of this is the price of its framework, rules and checks. Keep it in step with Kassa's SQL.
 *
 * Usage: node bench/baseline.ts <port>   (DATABASE_URL, KASSA_SECRET_KEY as for the server)
 */

import { createHmac, hkdfSync, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { PgClient } from "@effect/sql-pg"
import { Effect, type Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { expr, paymentInsert } from "../test/support/PaymentSeed.ts"

const port = Number(process.argv[2] ?? 4100)
const databaseUrl = process.env.DATABASE_URL ?? ""
const hashKey = Buffer.from(
  new Uint8Array(hkdfSync("sha256", process.env.KASSA_SECRET_KEY ?? "", "kassa", "api-key-hash", 32))
).toString("hex")

const runtime = ManagedRuntime.make(
  PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 20 }) as Layer.Layer<SqlClient.SqlClient>
)
const sql = await runtime.runPromise(
  Effect.gen(function* () {
    return yield* SqlClient.SqlClient
  })
)
const run = <A>(effect: Effect.Effect<A, unknown>) => runtime.runPromise(effect)

const authenticate = async (authorization: string | undefined) => {
  const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : ""
  const hash = createHmac("sha256", hashKey).update(token).digest("hex")
  const rows = await run(sql`
    SELECT k.id AS key_id, k.mode AS key_mode, a.* FROM api_keys k JOIN applications a ON a.id = k.application_id
    WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`)
  return rows[0]
}

// bigint columns come back as JS bigint; Kassa converts them to numbers too.
const json = (value: unknown) => JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? Number(v) : v))

const readBody = (request: import("node:http").IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString()
    })
    request.on("end", () => resolve(body))
  })

createServer((request, response) => {
  handle(request, response).catch(() => {
    if (!response.headersSent) response.writeHead(500)
    response.end()
  })
}).listen(port, "127.0.0.1", () => {
  process.stdout.write(`baseline listening on ${port}\n`)
})

// The create's one statement, its values bound as parameters as Kassa binds them (the text never changes).
const create = `${paymentInsert({
  id: expr("$1"),
  application_id: expr("$2"),
  mode: expr("$3"),
  amount: expr("$4"),
  order_reference: expr("$5"),
  expires_at: expr("$6"),
  created_at: expr("$7"),
  updated_at: expr("$7")
})}
  ON CONFLICT (application_id, mode, order_reference)
    WHERE status IN ('pending', 'paid', 'partially_refunded', 'refunded')
    DO NOTHING
  RETURNING *`

async function handle(request: import("node:http").IncomingMessage, response: import("node:http").ServerResponse) {
  const key = await authenticate(request.headers.authorization)
  if (key === undefined) {
    response.writeHead(401).end()
    return
  }
  if (request.method === "GET") {
    const id = request.url?.split("/").pop() ?? ""
    const [payment] = await run(
      sql`SELECT *, (SELECT json_agg(r ORDER BY r.created_at, r.seq) FROM refunds r WHERE r.payment_id = payments.id)
        AS refund_list
      FROM payments WHERE id = ${id} AND application_id::text = ${key.id as string} AND mode = ${key.key_mode as string}`
    )
    response.writeHead(payment === undefined ? 404 : 200, { "content-type": "application/json" })
    response.end(json(payment === undefined ? {} : { ...payment, refunds: payment.refund_list ?? [] }))
    return
  }
  const body = JSON.parse(await readBody(request)) as { amount: number; order_reference: string }
  const now = new Date()
  const [payment] = await run(
    sql.unsafe(create, [
      randomUUID(),
      key.id as string,
      key.key_mode as string,
      body.amount,
      body.order_reference,
      new Date(now.getTime() + 3_600_000),
      now
    ])
  )
  response.writeHead(payment === undefined ? 409 : 201, { "content-type": "application/json" })
  response.end(json(payment))
}
