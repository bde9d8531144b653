/**
 * The benchmark's floor (issue 23): bench/baseline.ts's server — plain `node:http`, the same three statements, the
 * same answers — on the `postgres` driver (porsager) instead of @effect/sql-pg, and with no effect runtime around
 * the queries. Kassa against bench/baseline.ts is what the framework, rules and checks cost; bench/baseline.ts
 * against this is what @effect/sql-pg and its runtime cost against a driver with no effect runtime for the same SQL.
 * Measured (2026-11-27, 4 rounds, load 2–6): this costs 1.14× the baseline's CPU per GET and 1.20× per create, so
 * the driver is not where Kassa's cost over the baseline goes. Keep it in step with bench/baseline.ts (the create's
 * text is the same `paymentInsert`).
 *
 * Usage: node bench/baseline-postgres.ts <port>   (DATABASE_URL, KASSA_SECRET_KEY as for the server)
 */

import { createHmac, hkdfSync, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import postgres from "postgres"
import { expr, paymentInsert } from "../test/support/PaymentSeed.ts"

const port = Number(process.argv[2] ?? 4103)
const hashKey = Buffer.from(
  new Uint8Array(hkdfSync("sha256", process.env.KASSA_SECRET_KEY ?? "", "kassa", "api-key-hash", 32))
).toString("hex")

// The pool size of Kassa and bench/baseline.ts; int8 parsed to a number, as both of them answer it.
const sql = postgres(process.env.DATABASE_URL ?? "", {
  max: 20,
  onnotice: () => undefined,
  types: {
    int8: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) }
  }
})

const authenticate = async (authorization: string | undefined) => {
  const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : ""
  const hash = createHmac("sha256", hashKey).update(token).digest("hex")
  const rows = await sql`
    SELECT k.id AS key_id, k.mode AS key_mode, a.* FROM api_keys k JOIN applications a ON a.id = k.application_id
    WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
  return rows[0]
}

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString()
    })
    request.on("end", () => resolve(body))
  })

// The create's one statement, as bench/baseline.ts binds it.
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

const handle = async (request: IncomingMessage, response: ServerResponse) => {
  const key = await authenticate(request.headers.authorization)
  if (key === undefined) {
    response.writeHead(401).end()
    return
  }
  if (request.method === "GET") {
    const id = request.url?.split("/").pop() ?? ""
    const [payment] =
      await sql`SELECT *, (SELECT json_agg(r ORDER BY r.created_at, r.seq) FROM refunds r WHERE r.payment_id = payments.id)
        AS refund_list
      FROM payments WHERE id = ${id} AND application_id::text = ${key.id as string} AND mode = ${key.key_mode as string}`
    response.writeHead(payment === undefined ? 404 : 200, { "content-type": "application/json" })
    response.end(JSON.stringify(payment === undefined ? {} : { ...payment, refunds: payment.refund_list ?? [] }))
    return
  }
  const body = JSON.parse(await readBody(request)) as { amount: number; order_reference: string }
  const now = new Date()
  const [payment] = await sql.unsafe(
    create,
    [
      randomUUID(),
      key.id as string,
      key.key_mode as string,
      body.amount,
      body.order_reference,
      new Date(now.getTime() + 3_600_000),
      now
    ],
    { prepare: true }
  )
  response.writeHead(payment === undefined ? 409 : 201, { "content-type": "application/json" })
  response.end(JSON.stringify(payment))
}

createServer((request, response) => {
  handle(request, response).catch(() => {
    if (!response.headersSent) response.writeHead(500)
    response.end()
  })
}).listen(port, "127.0.0.1", () => {
  process.stdout.write(`baseline-postgres listening on ${port}\n`)
})
