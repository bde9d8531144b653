/**
 * The cost of reading an idempotency record (issue #13 §4), per record, in µs: the row as the driver hands it back,
 * read (a) as IdempotencyStore read it before, with casts, and (b) through its SqlSchema decoder (request encoded, row
 * decoded, record built), for an answered record (a replay) and a locked one (a new claim). No database: the
 * statement answers a fixed row, so only the reading is timed. Figures, not a test: run it by hand.
 *
 *   node --conditions=@kassa/source bench/idempotency-record.ts
 */
import { DateTime, Effect, Option } from "effect"
import { SqlSchema } from "effect/sql"
import { RecordKey, RecordRow, toRecord } from "../src/ledger/IdempotencyStore.ts"

const answered = {
  method: "POST",
  path: "/api/v1/payments",
  fingerprint: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  created_at: new Date("2026-11-25T10:15:30.123Z"),
  locked_at: null,
  response_status: 201,
  response_body: JSON.stringify({ id: "7d3f0a4e-2b1c-4e5f-8a9b-0c1d2e3f4a5b", object: "payment", amount: 2500 }),
  response_headers: { location: "/api/v1/payments/7d3f0a4e-2b1c-4e5f-8a9b-0c1d2e3f4a5b" }
}
const locked = {
  ...answered,
  locked_at: new Date("2026-11-25T10:15:30.123Z"),
  response_status: null,
  response_body: null,
  response_headers: null
}
const key = {
  application_id: "0b7f5a2e-6c4d-4e3f-9a1b-2c3d4e5f6a7b",
  mode: "test",
  key: "order-42-attempt-1"
} as unknown as typeof RecordKey.Type

// (a) The reading this replaced, verbatim.
type Row = Readonly<Record<string, unknown>>
const castRecord = (row: Row) => {
  const headers = row.response_headers as Record<string, string> | null
  return {
    method: String(row.method),
    path: String(row.path),
    fingerprint: String(row.fingerprint),
    createdAt: DateTime.makeUnsafe(row.created_at as Date),
    lockedAt: row.locked_at === null ? null : DateTime.makeUnsafe(row.locked_at as Date),
    response:
      row.response_status === null
        ? null
        : {
            status: Number(row.response_status),
            body: String(row.response_body),
            ...(headers === null ? {} : { headers })
          }
  }
}
const before = (rows: ReadonlyArray<Row>) =>
  Effect.succeed(rows).pipe(Effect.map((found) => Option.map(Option.fromNullishOr(found[0]), castRecord)))

// (b) As the store reads it now.
const decoderFor = (rows: ReadonlyArray<Row>) => {
  const find = SqlSchema.findOneOption({ Request: RecordKey, Result: RecordRow, execute: () => Effect.succeed(rows) })
  return () => find(key).pipe(Effect.map(Option.map(toRecord)), Effect.orDie)
}

const perRecordMicros = (read: () => Effect.Effect<unknown>, n: number) => {
  for (let i = 0; i < 20_000; i++) Effect.runSync(read())
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) Effect.runSync(read())
  return Number(process.hrtime.bigint() - start) / 1000 / n
}

const rounds = Number(process.env.KASSA_BENCH_ROUNDS ?? 5)
const n = 100_000
for (const [name, row] of [
  ["answered", answered],
  ["locked", locked]
] as const) {
  const decode = decoderFor([row])
  const a: Array<number> = []
  const b: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    a.push(perRecordMicros(() => before([row]), n))
    b.push(perRecordMicros(decode, n))
  }
  const median = (xs: Array<number>) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? Number.NaN
  console.log(
    `${name}: casts ${median(a).toFixed(2)} µs, SqlSchema ${median(b).toFixed(2)} µs per record (median of ${rounds} rounds of ${n})`
  )
}
