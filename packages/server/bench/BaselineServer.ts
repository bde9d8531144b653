/**
 * What bench/baseline.ts and bench/baseline-postgres.ts share: the `node:http` server, the API key's keyed hash, the
 * statements' text and the answers. Each baseline brings only its driver's three calls, so the two stay the
 * same server on two drivers (keep them in step with Kassa's SQL).
 */
import { createHmac, hkdfSync, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { expr, paymentInsert } from "../test/support/PaymentSeed.ts"

type Row = Record<string, unknown>

/** The create's parameters, in {@link createStatement}'s order. */
export type CreateParameters = [
  id: string,
  applicationId: string,
  mode: string,
  amount: number,
  orderReference: string,
  expiresAt: Date,
  now: Date
]

export interface BaselineDriver {
  /** The key and its application by the key's keyed hash (`key_id`, `key_mode`, the application's columns). */
  readonly authenticate: (hash: string) => Promise<Row | undefined>
  /**
   * {@link authenticate}'s row with the payment (its refunds in `refund_list`) in the key's application and mode as
   * one JSON column, `payment` (null when there is none): {@link fetchStatement}, as Kassa reads a GET.
   */
  readonly fetch: (hash: string, id: string) => Promise<Row | undefined>
  /** {@link createStatement} with its seven parameters; the inserted row, or none when rule 5's index refused it. */
  readonly create: (parameters: CreateParameters) => Promise<Row | undefined>
  /** The answer's JSON (a driver that returns bigints converts them to numbers, as Kassa answers them). */
  readonly json: (value: unknown) => string
}

const hashKey = Buffer.from(
  new Uint8Array(hkdfSync("sha256", process.env.KASSA_SECRET_KEY ?? "", "kassa", "api-key-hash", 32))
).toString("hex")

const keyHash = (authorization: string | undefined) =>
  createHmac("sha256", hashKey)
    .update(authorization?.startsWith("Bearer ") ? authorization.slice(7) : "")
    .digest("hex")

/** The GET's one statement (`$1` the key's hash, `$2` the payment's id): Kassa's key lookup carrying its read. */
export const fetchStatement = `
  SELECT k.id AS key_id, k.mode AS key_mode, a.*, (
    SELECT row_to_json(found) FROM (
      SELECT *, (SELECT json_agg(r ORDER BY r.created_at, r.seq) FROM refunds r WHERE r.payment_id = payments.id)
        AS refund_list
      FROM payments WHERE id = $2 AND application_id::text = k.application_id::text AND mode = k.mode
    ) found
  ) AS payment
  FROM api_keys k JOIN applications a ON a.id = k.application_id
  WHERE k.key_hash = $1 AND k.revoked_at IS NULL`

/** The create's one statement, its values bound as parameters as Kassa binds them (the text never changes). */
export const createStatement = `${paymentInsert({
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

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString()
    })
    request.on("end", () => resolve(body))
  })

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const nilUuid = "00000000-0000-0000-0000-000000000000"

const handle = async (driver: BaselineDriver, request: IncomingMessage, response: ServerResponse) => {
  if (request.method === "GET") {
    // An id that is no uuid finds nothing (PostgreSQL would refuse the text); the key is still checked first.
    const id = request.url?.split("/").pop() ?? ""
    const found = await driver.fetch(keyHash(request.headers.authorization), uuidShape.test(id) ? id : nilUuid)
    if (found === undefined) {
      response.writeHead(401).end()
      return
    }
    const payment = found.payment as Row | null
    response.writeHead(payment === null ? 404 : 200, { "content-type": "application/json" })
    response.end(driver.json(payment === null ? {} : { ...payment, refunds: payment.refund_list ?? [] }))
    return
  }
  const key = await driver.authenticate(keyHash(request.headers.authorization))
  if (key === undefined) {
    response.writeHead(401).end()
    return
  }
  const body = JSON.parse(await readBody(request)) as { amount: number; order_reference: string }
  const now = new Date()
  const payment = await driver.create([
    randomUUID(),
    key.id as string,
    key.key_mode as string,
    body.amount,
    body.order_reference,
    new Date(now.getTime() + 3_600_000),
    now
  ])
  response.writeHead(payment === undefined ? 409 : 201, { "content-type": "application/json" })
  response.end(driver.json(payment))
}

/** Serves GET /api/v1/payments/{id} and POST /api/v1/payments on `port` with `driver`'s queries. */
export const serveBaseline = (name: string, port: number, driver: BaselineDriver) => {
  // Exits on the bench's SIGTERM, so that a profile asked for by KASSA_BENCH_BASE_NODE_FLAGS (--cpu-prof) is written.
  process.once("SIGTERM", () => process.exit(0))
  return createServer((request, response) => {
    handle(driver, request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500)
      response.end()
    })
  }).listen(port, "127.0.0.1", () => {
    process.stdout.write(`${name} listening on ${port}\n`)
  })
}
