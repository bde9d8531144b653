/**
 * The payments lists of the dashboards — an application's, and the operator's across applications — and their CSV
 * exports are one search: filters, newest first, cursor paging. An application's list is this search with its id
 * fixed, so a cursor or id of another application's payment finds nothing there.
 *
 * Every filter is a range or an equality some index serves in list order (migrations 0003, 0004, 0016): the creation
 * time rides the lists' (…, created_at, seq) indexes, the customer's e-mail address has its own expression indexes,
 * and the amount range filters the rows the other ranges walk — test/QueryPlansSearch.test.ts holds them to it.
 */
import { Ids, Mode, Payment, PaymentStateMachine } from "@kassa/core"
import { DateTime, Effect, Option, Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { likeLiteral } from "../database/Like.ts"
import * as PaymentRows from "../ledger/PaymentRows.ts"
import type { PaymentWrites } from "../ledger/PaymentWrites.ts"
import type { PaymentSummary } from "../pages/dashboard/Views.ts"

export type { PaymentSummary }

export interface PaymentSearchQuery {
  readonly limit: number
  readonly applicationId?: Ids.ApplicationId | undefined
  readonly paymentId?: Ids.PaymentId | undefined
  readonly orderReference?: string | undefined
  /** Match `orderReference` as a prefix instead of exactly. */
  readonly prefix?: boolean | undefined
  readonly status?: Payment.PaymentStatus | undefined
  readonly mode?: Mode.Mode | undefined
  /** Created at or after this instant. */
  readonly createdFrom?: Date | undefined
  /** Created before this instant (the day after the last day asked for, at midnight UTC). */
  readonly createdBefore?: Date | undefined
  /** Amounts in minor units, both inclusive. */
  readonly amountMin?: number | undefined
  readonly amountMax?: number | undefined
  readonly currency?: string | undefined
  /** The customer's e-mail address, exactly but for case (compared lower-cased). */
  readonly customerEmail?: string | undefined
  /** A filter was given that no payment can match (a malformed payment id): the search reads nothing. */
  readonly matchesNothing?: boolean | undefined
  /** The last payment of the previous page; an unknown one starts from the newest. */
  readonly startingAfter?: Ids.PaymentId | undefined
}

/** A page of a dashboard list: its rows, and whether older ones follow. */
export interface Page<A> {
  readonly rows: ReadonlyArray<A>
  readonly hasMore: boolean
}

export type PaymentPage = Page<PaymentSummary>

/** Where a page starts after: the previous page's last payment's place in the list. */
const CursorRow = Schema.Struct({ created_at: Columns.Timestamp, seq: Columns.Integer })

/**
 * A payment as a list shows it, with its application's name. The row schema takes the database's CHECK values
 * (statuses, modes), not the core's input rules: a stricter one would make every list holding an old row fail.
 */
const SummaryRow = Schema.Struct({
  id: Ids.PaymentId,
  application_id: Ids.ApplicationId,
  application_name: Schema.String,
  mode: Mode.Mode,
  status: Payment.PaymentStatus,
  amount: Columns.Integer,
  refunded_amount: Columns.Integer,
  currency: Schema.String,
  method: Schema.String,
  order_reference: Schema.String,
  customer_email: Schema.NullOr(Schema.String),
  expires_at: Columns.Timestamp,
  created_at: Columns.Timestamp
})

/** `LIKE` pattern of a prefix: `%`, `_` and the escape character itself match only themselves. */
export const likePrefix = (prefix: string) => `${likeLiteral(prefix)}%`

/**
 * The lazy expiry of a page about to be shown, as every reader does it (the sweeper expires the rest): its rows still
 * `pending` past their expiry are expired now, with their events, and shown as they now are, so that no list shows a
 * payment as pending that the API would answer as expired. A row that no longer has the filtered `status` is left
 * out (a due payment found by a `pending` filter).
 */
export const expireShown = Effect.fn("PaymentSearch.expireShown")(function* (
  writes: PaymentWrites["Service"],
  page: PaymentPage,
  status: Payment.PaymentStatus | undefined
) {
  const now = yield* DateTime.now
  const due = page.rows.filter((row) =>
    PaymentStateMachine.isDue({ status: row.status, expires_at: DateTime.fromDateUnsafe(row.expiresAt) }, now)
  )
  if (due.length === 0) return page
  const fresh = new Map(
    (yield* writes.expireShown(due.map((row) => row.id))).map(
      (payment) => [payment.id as string, payment.status] as const
    )
  )
  const rows = page.rows
    .map((row) => ({ ...row, status: fresh.get(row.id) ?? row.status }))
    .filter((row) => status === undefined || row.status === status)
  return { rows, hasMore: page.hasMore } satisfies PaymentPage
})

const nothing: PaymentPage = { rows: [], hasMore: false }

/** The filters' clauses on `payments`, each one an equality or a range (the cursor's excepted). */
const filterClauses = (sql: SqlClient.SqlClient, query: PaymentSearchQuery): Array<Statement.Fragment> => {
  const clauses: Array<Statement.Fragment> = []
  if (query.applicationId !== undefined) clauses.push(sql`application_id = ${query.applicationId}`)
  if (query.paymentId !== undefined) clauses.push(sql`id = ${query.paymentId}`)
  if (query.orderReference !== undefined)
    clauses.push(
      query.prefix === true
        ? sql`order_reference LIKE ${likePrefix(query.orderReference)}`
        : sql`order_reference = ${query.orderReference}`
    )
  // The expression of the indexes payments_customer_email(_newest), written as they are (0016).
  if (query.customerEmail !== undefined)
    clauses.push(sql`lower(customer ->> 'email') = ${query.customerEmail.toLowerCase()}`)
  if (query.createdFrom !== undefined) clauses.push(sql`created_at >= ${query.createdFrom}`)
  if (query.createdBefore !== undefined) clauses.push(sql`created_at < ${query.createdBefore}`)
  if (query.currency !== undefined) clauses.push(sql`currency = ${query.currency}`)
  if (query.amountMin !== undefined) clauses.push(sql`amount >= ${query.amountMin}`)
  if (query.amountMax !== undefined) clauses.push(sql`amount <= ${query.amountMax}`)
  return clauses
}

export const search = (sql: SqlClient.SqlClient) =>
  Effect.fn("PaymentSearch.search")(function* (query: PaymentSearchQuery) {
    if (query.matchesNothing === true) return nothing
    const clauses = filterClauses(sql, query)
    if (query.startingAfter !== undefined) {
      const after = yield* Columns.first(CursorRow)(sql`
        SELECT created_at, seq FROM payments p WHERE p.id = ${query.startingAfter}
          AND (${query.applicationId ?? null}::uuid IS NULL OR p.application_id = ${query.applicationId ?? null}::uuid)
      `)
      // The cursor's time read in the statement, at the column's precision (as the merchant list does).
      if (Option.isSome(after))
        clauses.push(
          sql`(created_at, seq) < ((SELECT created_at FROM payments WHERE id = ${query.startingAfter}), ${after.value.seq})`
        )
    }
    // An application's list in both modes reads each mode's index range (application_id, mode, …) on its own.
    const modes =
      query.mode !== undefined
        ? [[sql`mode = ${query.mode}`]]
        : query.applicationId !== undefined
          ? Mode.Mode.literals.map((mode) => [sql`mode = ${mode}`])
          : [[]]
    const statuses = PaymentRows.statusBranches(sql, query.status, yield* DateTime.now)
    const branches = modes.flatMap((mode) => statuses.map((status) => [...mode, ...status]))
    // Only the customer's e-mail address is shown: the database takes it out of the jsonb, as text (or null).
    const columns = sql`id, application_id, mode, status, amount, refunded_amount, currency, method, order_reference,
      customer ->> 'email' AS customer_email, expires_at, created_at, seq`
    const rows = yield* Columns.all(SummaryRow)(sql`
      SELECT p.*, a.name AS application_name
      FROM (${PaymentRows.newestFirst(sql, columns, clauses, branches, query.limit + 1)}) AS p
        JOIN applications a ON a.id = p.application_id
      ORDER BY p.created_at DESC, p.seq DESC
    `)
    return {
      rows: rows.slice(0, query.limit).map(
        (row): PaymentSummary => ({
          id: row.id,
          applicationId: row.application_id,
          applicationName: row.application_name,
          mode: row.mode,
          status: row.status,
          amount: row.amount,
          refundedAmount: row.refunded_amount,
          currency: row.currency,
          method: row.method,
          orderReference: row.order_reference,
          customerEmail: row.customer_email,
          expiresAt: DateTime.toDateUtc(row.expires_at),
          createdAt: DateTime.toDateUtc(row.created_at)
        })
      ),
      hasMore: rows.length > query.limit
    } satisfies PaymentPage
  }, Effect.orDie)
