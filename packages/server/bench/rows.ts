/**
 * What decoding a payment row costs: one `payments` row as the driver hands it back (timestamps as `Date`s, bigints
 * as `BigInt`s, jsonb parsed) with two refunds in its `refund_list` (json_agg: ISO text with microseconds, numbers),
 * read into a `StoredPayment` by the row schemas of PaymentRepository, against the casts they replaced. Every
 * GET /v1/payments/{id}, create and list reads such rows.
 *
 * Usage: node --conditions=@kassa/source bench/rows.ts
 */
import type { Payment } from "@kassa/core"
import { Ids } from "@kassa/core"
import { DateTime, Effect, Schema } from "effect"
import * as Columns from "../src/database/Columns.ts"
import { PaymentRow, RefundRow, refundOf, type StoredPayment, storedOf } from "../src/ledger/PaymentRows.ts"

const refundJson = (id: string, amount: number, status: string, confirmed: string | null) => ({
  id,
  payment_id: "5b0c3c2e-8a55-4e55-9d1f-1e2a3b4c5d6e",
  amount,
  status,
  reason: status === "pending" ? null : "damaged",
  created_at: "2026-11-25T10:16:30.123456+00:00",
  confirmed_at: confirmed,
  seq: 7,
  idempotency_key: null,
  requested_by: null
})

const row = {
  id: "5b0c3c2e-8a55-4e55-9d1f-1e2a3b4c5d6e",
  application_id: "0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b",
  mode: "test",
  status: "partially_refunded",
  amount: 2500n,
  refunded_amount: 700n,
  currency: "EUR",
  method: "card",
  order_reference: "order-4711",
  description: "Two books",
  customer: { name: "Eve", email: "eve@shop.example", phone: null },
  payer: { name: "Eve", email: "eve@shop.example", phone: null, ip: "203.0.113.7", user_agent: "Mozilla/5.0" },
  locale: "nl-NL",
  return_url: "https://shop.example/done",
  metadata: { cart: "c-91", items: 2, gift: false, note: null },
  expires_at: new Date("2026-11-25T11:15:30.123Z"),
  paid_at: new Date("2026-11-25T10:15:40.456Z"),
  created_at: new Date("2026-11-25T10:15:30.123Z"),
  updated_at: new Date("2026-11-25T10:17:30.789Z"),
  seq: 42n,
  idempotency_key: "create-4711",
  refund_list: [
    refundJson("a1b2c3d4-0000-4000-8000-000000000001", 500, "succeeded", "2026-11-25T10:16:31.5+00:00"),
    refundJson("a1b2c3d4-0000-4000-8000-000000000002", 200, "pending", null)
  ]
}
const rows: ReadonlyArray<unknown> = [row]
const checkoutUrl = (id: string) => `http://127.0.0.1:4000/checkout/${id}`

// The casts PaymentRepository read rows with before (commit cf07e6a), verbatim but for the module-level names.
type Row = Readonly<Record<string, unknown>>
const utc = (value: unknown): DateTime.Utc => DateTime.makeUnsafe(value as Date)
const utcOrNull = (value: unknown): DateTime.Utc | null => (value === null || value === undefined ? null : utc(value))
const refundFromRow = (row: Row): Payment.Refund => ({
  id: Ids.RefundId.make(String(row.id)),
  amount: Number(row.amount),
  status: row.status as Payment.RefundStatus,
  reason: (row.reason as string | null) ?? null,
  created_at: utc(row.created_at),
  confirmed_at: utcOrNull(row.confirmed_at)
})
const fromRow = (row: Row, refunds: ReadonlyArray<Payment.Refund>): StoredPayment => {
  const id = Ids.PaymentId.make(String(row.id))
  return {
    applicationId: Ids.ApplicationId.make(String(row.application_id)),
    updatedAt: utc(row.updated_at),
    payment: {
      id,
      status: row.status as Payment.PaymentStatus,
      mode: row.mode as "test" | "live",
      amount: Number(row.amount),
      refunded_amount: Number(row.refunded_amount),
      currency: String(row.currency),
      method: String(row.method),
      order_reference: String(row.order_reference),
      description: (row.description as string | null) ?? null,
      customer: row.customer as Payment.Customer,
      payer: (row.payer as Payment.Payer | null) ?? null,
      locale: String(row.locale),
      return_url: (row.return_url as string | null) ?? null,
      metadata: row.metadata as Payment.Metadata,
      checkout_url: checkoutUrl(id),
      expires_at: utc(row.expires_at),
      paid_at: utcOrNull(row.paid_at),
      created_at: utc(row.created_at),
      refunds
    }
  }
}
const cast = (input: ReadonlyArray<unknown>) =>
  (input as ReadonlyArray<Row>).map((row) =>
    fromRow(row, ((row.refund_list ?? []) as ReadonlyArray<Row>).map(refundFromRow))
  )

const toStored = (decoded: ReadonlyArray<PaymentRow>) =>
  decoded.map((row) => storedOf(row, (row.refund_list ?? []).map(refundOf), checkoutUrl(row.id)))

const decodePayments = Schema.decodeUnknownEffect(Schema.Array(PaymentRow))

// The same rows with effect's `Schema.NullOr` (the value tried first, an issue built for every null) instead of
// `Columns.orNull`: what the nullable columns cost before.
const PlainRefundRow = Schema.Struct({
  ...RefundRow.fields,
  reason: Schema.NullOr(Schema.String),
  created_at: Columns.Timestamp,
  confirmed_at: Columns.NullableTimestamp
})
const PlainPaymentRow = Schema.Struct({
  ...PaymentRow.fields,
  description: Schema.NullOr(Schema.String),
  payer: Schema.NullOr(PaymentRow.fields.payer.members[1]),
  return_url: Schema.NullOr(Schema.String),
  expires_at: Columns.Timestamp,
  paid_at: Columns.NullableTimestamp,
  created_at: Columns.Timestamp,
  updated_at: Columns.Timestamp,
  refund_list: Schema.optionalKey(Schema.NullOr(Schema.Array(PlainRefundRow)))
})
const decodePlain = Schema.decodeUnknownEffect(Schema.Array(PlainPaymentRow))

const cases: ReadonlyArray<readonly [string, () => unknown]> = [
  ["casts (before)", () => cast(rows)],
  ["Effect.runSync(Effect.succeed) alone", () => Effect.runSync(Effect.succeed(rows))],
  ["row schemas, decoder made once (after)", () => Effect.runSync(Effect.map(decodePayments(rows), toStored))],
  [
    "row schemas through Columns.all",
    () => Effect.runSync(Effect.map(Columns.all(PaymentRow)(Effect.succeed(rows)), toStored))
  ],
  ["Schema.NullOr instead of Columns.orNull", () => Effect.runSync(Effect.map(decodePlain(rows), toStored))]
]

// CPU time, the least of 20 rounds: the machine is shared, and wall time counts other processes' slices.
const iterations = 5_000
for (const [name, run] of cases) {
  for (let i = 0; i < iterations * 4; i++) run()
  let best = Number.POSITIVE_INFINITY
  for (let round = 0; round < 20; round++) {
    const start = process.cpuUsage()
    for (let i = 0; i < iterations; i++) run()
    const used = process.cpuUsage(start)
    best = Math.min(best, (used.user + used.system) / iterations)
  }
  console.log(`${name.padEnd(40)} ${best.toFixed(2)} µs per row`)
}
