/**
 * Where a GET's CPU goes inside the process (issue 23): each piece of `GET /api/v1/payments/{id}` run on its own in
 * the server's runtime against PostgreSQL, one call at a time, beside the raw statement it is built on — the
 * baseline's own statements through the same driver. What a piece costs above its raw statement is what Kassa's
 * layers (row decoding, fragments, the Effect pipeline, the checks) add to it; `pnpm bench` measures the whole.
 * Figures, not a test: CPU per call (process.cpuUsage) over 3 rounds of 3,000 calls after a warm-up, the last round
 * the steadiest. A call here waits for PostgreSQL with nothing else to do, so it also pays the event loop's wake-up,
 * which a server under load shares between requests: compare pieces with each other, not with `pnpm bench`.
 *
 * Usage: node --conditions=@kassa/source bench/pieces.ts   (KASSA_TEST_DATABASE_URL, default local PostgreSQL)
 */
import type { Ids } from "@kassa/core"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { MerchantAuth } from "../src/auth/Authentication.ts"
import { RateLimit } from "../src/auth/RateLimit.ts"
import { paymentJson } from "../src/http/PaymentsHandlers.ts"
import { decodePayments } from "../src/ledger/PaymentRows.ts"
import { MerchantPayments } from "../src/payments/MerchantPayments.ts"
import { createPayment } from "../test/support/PaymentFixtures.ts"
import { startServer } from "../test/support/TestServer.ts"

const calls = 3000
const server = await startServer("postgres", {}, { logLevel: "Warn" })
const shop = await server.createApplication({ rate_limit_per_minute: 100_000_000 })
const id = ((await createPayment(server, shop.testKey)).body as { id: Ids.PaymentId }).id
const [sql, keys, auth, payments] = await server.run(
  Effect.all([
    Effect.service(SqlClient.SqlClient),
    Effect.service(ApiKeyRepository),
    Effect.service(MerchantAuth),
    Effect.service(MerchantPayments)
  ])
)
const { caller } = await server.run(auth.verify(Redacted.make(shop.testKey), () => Option.none()))
const scope = { applicationId: caller.applicationId, mode: caller.mode }

const figures = new Map<string, Array<number>>()
const measure = async (name: string, piece: Effect.Effect<unknown, unknown>) => {
  const loop = (n: number) =>
    Effect.gen(function* () {
      for (let i = 0; i < n; i++) yield* piece
    })
  await server.run(loop(300))
  const before = process.cpuUsage()
  await server.run(loop(calls))
  const spent = process.cpuUsage(before)
  figures.set(name, [...(figures.get(name) ?? []), (spent.user + spent.system) / calls])
}

const readRaw = sql`SELECT *, (SELECT json_agg(r ORDER BY r.created_at, r.seq) FROM refunds r
  WHERE r.payment_id = payments.id) AS refund_list
  FROM payments WHERE id = ${id} AND application_id::text = ${scope.applicationId} AND mode = ${scope.mode}`
const keyRaw = sql`SELECT k.id AS key_id, k.mode AS key_mode, a.* FROM api_keys k
  JOIN applications a ON a.id = k.application_id WHERE k.key_hash = ${"0".repeat(64)} AND k.revoked_at IS NULL`

// MerchantAuth's own is private to it: another of the same kind (in this process, as the bench's server counts).
const rateLimit = await Effect.runPromise(Effect.service(RateLimit).pipe(Effect.provide(RateLimit.layerMemory)))
const found = Option.getOrThrow(await server.run(keys.authenticate(shop.testKey)))
const keyFoundRaw = sql.unsafe(
  `SELECT k.id AS key_id, k.mode AS key_mode, a.* FROM api_keys k
  JOIN applications a ON a.id = k.application_id WHERE k.id = $1 AND k.revoked_at IS NULL`,
  [found.key.id]
)

for (let round = 0; round < 3; round++) {
  await measure("raw: the key's statement", keyRaw)
  await measure("raw: the key's statement, found", keyFoundRaw)
  await measure("RateLimit.consume", rateLimit.consume(found.key.id, 100_000_000))
  await measure("ApiKeyRepository.authenticate", keys.authenticate(shop.testKey))
  await measure(
    "MerchantAuth.verify",
    auth.verify(Redacted.make(shop.testKey), () => Option.none())
  )
  await measure("raw: the payment's statement", readRaw)
  await measure("raw + row decode", Effect.flatMap(readRaw, decodePayments))
  await measure("MerchantPayments.retrieve", payments.retrieve(scope, id))
  await measure(
    "retrieve + JSON",
    Effect.map(payments.retrieve(scope, id), (payment) => paymentJson(payment))
  )
}
await server.close()
console.table(
  [...figures].map(([piece, rounds]) => ({
    piece,
    "µs CPU per call": rounds.map((value) => value.toFixed(1)).join(" / ")
  }))
)
