/**
 * The payments lists of the dashboards — an application's, and the operator's across applications — are one search:
 * filters, newest first, cursor paging. An application's list is this search with its id fixed, so a cursor or id of
 * another application's payment finds nothing there.
 */
import { type Ids, Mode, type Payment } from "@kassa/core"
import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import type { Payments } from "../payments/Payments.ts"
import * as QueryFilters from "./QueryFilters.ts"

export interface PaymentSearchQuery {
  readonly limit: number
  readonly applicationId?: Ids.ApplicationId | undefined
  readonly paymentId?: Ids.PaymentId | undefined
  readonly orderReference?: string | undefined
  /** Match `orderReference` as a prefix instead of exactly. */
  readonly prefix?: boolean | undefined
  readonly status?: Payment.PaymentStatus | undefined
  readonly mode?: Mode.Mode | undefined
  /** The last payment of the previous page; an unknown one starts from the newest. */
  readonly startingAfter?: Ids.PaymentId | undefined
}

/** A row of a payments list. */
export interface PaymentSummary {
  readonly id: string
  readonly applicationId: string
  readonly applicationName: string
  readonly mode: Mode.Mode
  readonly status: Payment.PaymentStatus
  readonly amount: number
  readonly refundedAmount: number
  readonly currency: string
  readonly method: string
  readonly orderReference: string
  readonly customerEmail: string | null
  readonly createdAt: Date
}

/** A page of a dashboard list: its rows, and whether older ones follow. */
export interface Page<A> {
  readonly rows: ReadonlyArray<A>
  readonly hasMore: boolean
}

export type PaymentPage = Page<PaymentSummary>

/** `LIKE` pattern of a prefix: `%`, `_` and the escape character itself match only themselves. */
export const likePrefix = (prefix: string) => `${QueryFilters.likeLiteral(prefix)}%`

/**
 * Expires the due `pending` payments a search could list, as every reader does, so that no list shows a payment as
 * pending that the API would answer as expired: an application's (in one mode or both), or — across applications —
 * the sweeper's pass, which leaves rows another request is changing right now to that request.
 */
export const expireListed = (
  payments: Payments["Service"],
  query: { readonly applicationId?: Ids.ApplicationId | undefined; readonly mode?: Mode.Mode | undefined }
) => {
  const { applicationId, mode } = query
  return applicationId === undefined
    ? payments.expireDue({})
    : Effect.forEach(mode === undefined ? Mode.Mode.literals : [mode], (scopeMode) =>
        payments.expireDue({ scope: { applicationId, mode: scopeMode } })
      )
}

export const search = (sql: SqlClient.SqlClient) =>
  Effect.fn("PaymentSearch.search")(function* (query: PaymentSearchQuery) {
    const clauses: Array<Statement.Fragment> = []
    if (query.applicationId !== undefined) clauses.push(sql`p.application_id = ${query.applicationId}`)
    if (query.paymentId !== undefined) clauses.push(sql`p.id = ${query.paymentId}`)
    if (query.orderReference !== undefined)
      clauses.push(
        query.prefix === true
          ? sql`p.order_reference LIKE ${likePrefix(query.orderReference)}`
          : sql`p.order_reference = ${query.orderReference}`
      )
    if (query.status !== undefined) clauses.push(sql`p.status = ${query.status}`)
    if (query.mode !== undefined) clauses.push(sql`p.mode = ${query.mode}`)
    if (query.startingAfter !== undefined) {
      const [after] = yield* sql`
        SELECT created_at, seq FROM payments p WHERE p.id = ${query.startingAfter}
          AND (${query.applicationId ?? null}::uuid IS NULL OR p.application_id = ${query.applicationId ?? null}::uuid)
      `
      if (after !== undefined)
        clauses.push(sql`(p.created_at, p.seq) < (${after.created_at as Date}, ${after.seq as bigint})`)
    }
    const rows = yield* sql`
      SELECT p.id, p.application_id, a.name AS application_name, p.mode, p.status, p.amount, p.refunded_amount,
        p.currency, p.method, p.order_reference, p.customer, p.created_at
      FROM payments p JOIN applications a ON a.id = p.application_id
      WHERE ${sql.and(clauses)}
      ORDER BY p.created_at DESC, p.seq DESC
      LIMIT ${query.limit + 1}
    `
    return {
      rows: rows.slice(0, query.limit).map(
        (row): PaymentSummary => ({
          id: String(row.id),
          applicationId: String(row.application_id),
          applicationName: String(row.application_name),
          mode: row.mode as Mode.Mode,
          status: row.status as Payment.PaymentStatus,
          amount: Number(row.amount),
          refundedAmount: Number(row.refunded_amount),
          currency: String(row.currency),
          method: String(row.method),
          orderReference: String(row.order_reference),
          customerEmail: (row.customer as Payment.Customer | null)?.email ?? null,
          createdAt: row.created_at as Date
        })
      ),
      hasMore: rows.length > query.limit
    } satisfies PaymentPage
  }, Effect.orDie)
