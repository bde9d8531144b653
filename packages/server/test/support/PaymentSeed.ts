/**
 * Payments written straight into the database, for the tests and benches that need rows the API cannot make (live
 * payments the provider paid, old rows, hundreds of thousands at once): the one `INSERT INTO payments` they share,
 * naming every column the API's create writes, with defaults for those a seed does not care about.
 *
 * A column is a JavaScript value (written as an SQL literal) or an SQL expression (`expr`), so one builder serves a
 * single row (`VALUES`) and a set-based seed (`SELECT … FROM generate_series(…) i`, its expressions reading `i`).
 * The statement is SQL text: tests run it with the server's client, benches through psql, the baseline with bound
 * parameters (`expr("$1")`). Callers append what follows (`RETURNING id`, `ON CONFLICT …`).
 */
import { SqlClient } from "effect/sql"
import { insertColumns } from "../../src/ledger/PaymentColumns.ts"
import type { RunningServer } from "./TestServer.ts"

/** The columns a create writes (ledger/PaymentColumns), `idempotency_key` and `settled_via` excepted: left NULL here. */
export type PaymentColumn = Exclude<(typeof insertColumns)[number], "idempotency_key" | "settled_via">
export const paymentColumns = insertColumns.filter(
  (column): column is PaymentColumn => column !== "idempotency_key" && column !== "settled_via"
)

/** An SQL expression, written into the statement as it is. */
export class Expr {
  readonly sql: string
  constructor(sql: string) {
    this.sql = sql
  }
}

export const expr = (sql: string): Expr => new Expr(sql)

/** A JavaScript value for a column: strings, numbers and dates as literals, objects as `jsonb`. */
export type Literal = string | number | boolean | Date | null | { readonly [key: string]: unknown }

export type SeedValue = Literal | Expr

/** A payment to seed: its application and order reference, and any column that differs from the defaults. */
export type PaymentSeed = { readonly application_id: SeedValue; readonly order_reference: SeedValue } & {
  readonly [C in Exclude<PaymentColumn, "application_id" | "order_reference">]?: SeedValue
}

/** Customers and payers the seeds share. */
export const nullCustomer = { name: null, email: null, phone: null }
export const buyer = { email: "buyer@example.com", name: "A Buyer", phone: null }
export const annBuyer = { name: "Ann Buyer", email: "ann@buyer.example", phone: null }
export const annPayer = { ...annBuyer, ip: "203.0.113.9", user_agent: "Test" }

/** A pending test payment of 10.00 EUR by card, made now, due in an hour, with no customer details. */
const defaults: { readonly [C in Exclude<PaymentColumn, "application_id" | "order_reference">]: SeedValue } = {
  id: expr("gen_random_uuid()"),
  mode: "test",
  status: "pending",
  amount: 1000,
  refunded_amount: 0,
  currency: "EUR",
  method: "card",
  description: null,
  customer: nullCustomer,
  payer: null,
  locale: "en",
  return_url: null,
  metadata: {},
  expires_at: expr("now() + interval '1 hour'"),
  paid_at: null,
  created_at: expr("now()"),
  updated_at: expr("now()")
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

/** A value as an SQL literal (standard-conforming strings: only `'` is doubled). */
export const literal = (value: Literal): string => {
  if (value === null) return "NULL"
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`)
    return String(value)
  }
  if (typeof value === "boolean") return String(value)
  if (typeof value === "string") return quote(value)
  if (value instanceof Date) return `${quote(value.toISOString())}::timestamptz`
  return `${quote(JSON.stringify(value))}::jsonb`
}

const values = (seed: PaymentSeed) =>
  paymentColumns.map((column) => {
    const value = seed[column] ?? defaults[column as keyof typeof defaults]
    return value instanceof Expr ? value.sql : literal(value)
  })

const head = `INSERT INTO payments (${paymentColumns.join(", ")})`

/** One payment: `INSERT INTO payments (…) VALUES (…)`. */
export const paymentInsert = (seed: PaymentSeed): string => `${head}\nVALUES (${values(seed).join(", ")})`

/** A payment per row of `from` (`generate_series(1, n) i`, joins allowed): `INSERT INTO payments (…) SELECT … FROM …`. */
export const paymentsInsert = (seed: PaymentSeed, from: string): string =>
  `${head}\nSELECT ${values(seed).join(",\n  ")}\nFROM ${from}`

/** Runs a seed statement through the server's own client; the rows it returns (with `RETURNING`). */
export const seedPayments = (server: RunningServer, statement: string) =>
  server.run(SqlClient.SqlClient.use((sql) => sql.unsafe<Record<string, unknown>>(statement))) as Promise<
    ReadonlyArray<Record<string, unknown>>
  >

/** Inserts one payment (see {@link paymentInsert}). */
export const insertPayment = (server: RunningServer, seed: PaymentSeed) => seedPayments(server, paymentInsert(seed))

/**
 * The plan tests' population: one merchant among many (1 payment in 50 is `appId`'s, the rest `otherId`'s), test mode
 * for 1 in 4, and `s.status` cycling through every status a payment ends in (paid twice as often). Spread into
 * `paymentsInsert`'s columns, with {@link everyStatus} as its source.
 */
export const oneAmongMany = (appId: string, otherId: string) => ({
  application_id: expr(`CASE WHEN i % 50 = 0 THEN ${literal(appId)}::uuid ELSE ${literal(otherId)}::uuid END`),
  mode: expr("CASE WHEN i % 4 = 0 THEN 'test' ELSE 'live' END"),
  status: expr("s.status")
})

/** Rows `i` = 1 … `count`, each with its `s.status` (see {@link oneAmongMany}). */
export const everyStatus = (count: number) => `generate_series(1, ${count}) i
  CROSS JOIN LATERAL (SELECT (ARRAY['paid', 'failed', 'expired', 'cancelled', 'refunded', 'paid'])[1 + i % 6]
    AS status) s`
