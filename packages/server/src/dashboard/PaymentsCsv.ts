/**
 * A payment search as CSV (issue 22 §3): `/dashboard/apps/:id/payments.csv` and `/dashboard/operator/payments.csv`
 * take the lists' filters and answer every payment the search finds, newest first.
 *
 * The body is a stream that reads the search in keyset batches of {@link batchSize} and writes each batch as it
 * comes, so the server's memory stays flat however many payments match; the client's pace holds the reads back (the
 * HTTP server waits for the socket to drain), a client that goes away interrupts the stream, and each batch has the
 * request deadline (a batch past it ends the body unfinished, never silently short: the transfer is aborted). Rows
 * are shown as the lists show them: a pending payment past its expiry is expired first (PaymentSearch.expireShown).
 *
 * The file: RFC 4180 (comma, CRLF, a field quoted when it holds `"`, a comma or a line break), UTF-8, a header row;
 * amounts as integer minor units with a decimal column beside each (Money.toDecimalString); times as RFC 3339 UTC.
 * A cell a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets
 * a leading `'` (OWASP's CSV injection advice): order references and e-mail addresses are the merchants' customers'
 * text.
 */
import { type Ids, Money } from "@kassa/core"
import { type Cause, DateTime, Effect, Option, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../audit/AuditLog.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { PaymentWrites } from "../ledger/PaymentWrites.ts"
import type { PaymentFilterForm } from "../pages/dashboard/PaymentFilterFields.ts"
import { SignedIn } from "./DashboardRoute.ts"
import * as PaymentSearch from "./PaymentSearch.ts"

/** Payments read per statement: one index walk each, a few hundred kilobytes of text at most. */
export const batchSize = 500

/** The header row's names, in column order. */
export const columns = [
  "id",
  "created_at",
  "application_id",
  "application_name",
  "mode",
  "status",
  "currency",
  "amount",
  "amount_decimal",
  "refunded_amount",
  "refunded_amount_decimal",
  "method",
  "order_reference",
  "customer_email",
  "expires_at"
] as const

/** Characters that make a spreadsheet read a cell as a formula when they start it. */
const formulaStart = /^[=+\-@\t\r]/

/** One field: guarded against formula injection, then quoted when RFC 4180 asks for it. */
export const cell = (value: string): string => {
  const guarded = formulaStart.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded
}

/** One record, CRLF-terminated. */
export const record = (fields: ReadonlyArray<string>): string => `${fields.map(cell).join(",")}\r\n`

export const header = record(columns)

/** A payment as a record, in {@link columns}' order. */
export const paymentRecord = (row: PaymentSearch.PaymentSummary): string =>
  record([
    row.id,
    row.createdAt.toISOString(),
    row.applicationId,
    row.applicationName,
    row.mode,
    row.status,
    row.currency,
    String(row.amount),
    Money.toDecimalString(row.amount, row.currency),
    String(row.refundedAmount),
    Money.toDecimalString(row.refundedAmount, row.currency),
    row.method,
    row.orderReference,
    row.customerEmail ?? "",
    row.expiresAt.toISOString()
  ])

export type ExportQuery = Omit<PaymentSearch.PaymentSearchQuery, "limit" | "startingAfter">

/**
 * The CSV text of the search, a batch at a time: the header first, then one string per batch of payments. Each
 * batch starts after the previous batch's last payment as the search found it (a row the lazy expiry then left out
 * of a status filter still marks the place).
 */
export const body = (
  search: (query: PaymentSearch.PaymentSearchQuery) => Effect.Effect<PaymentSearch.PaymentPage>,
  writes: PaymentWrites["Service"],
  query: ExportQuery,
  deadline: ServerConfig["Service"]["requestDeadline"]
): Stream.Stream<string, Cause.TimeoutError> =>
  Stream.concat(
    Stream.succeed(header),
    // The state is where the next batch starts after (none: the newest); the next state none ends the stream.
    Stream.paginate<Ids.PaymentId | undefined, string, Cause.TimeoutError>(undefined, (after) =>
      Effect.gen(function* () {
        const found = yield* search({ ...query, limit: batchSize, startingAfter: after })
        const shown = yield* PaymentSearch.expireShown(writes, found, query.status)
        const last = found.rows.at(-1)
        const next = found.hasMore && last !== undefined ? Option.some(last.id) : Option.none()
        return [shown.rows.length === 0 ? [] : [shown.rows.map(paymentRecord).join("")], next] as const
      }).pipe(
        Effect.timeout(deadline),
        Effect.tapError(() => Effect.logWarning("A CSV export's batch exceeded the request deadline; aborted"))
      )
    )
  )

const day = (now: DateTime.Utc) => DateTime.formatIso(now).slice(0, 10)

/**
 * The export's response: `text/csv`, a download named `<filename>-<today>.csv`, never stored by a cache. The export
 * is recorded in the audit log with the filters it was asked with, before the first row is read.
 */
export const respond = Effect.fn("PaymentsCsv.respond")(function* (options: {
  readonly search: ExportQuery
  readonly form: PaymentFilterForm
  readonly applicationId: Ids.ApplicationId | null
  /** ASCII letters, digits and `-` only: it is written into the header unquoted-safe. */
  readonly filename: string
}) {
  const sql = yield* SqlClient.SqlClient
  const writes = yield* PaymentWrites
  const { requestDeadline } = yield* ServerConfig
  const { actor } = yield* SignedIn
  const filters = Object.fromEntries(
    Object.entries(options.form).filter(([name, value]) => value !== "" && !(name === "match" && value === "exact"))
  )
  yield* (yield* AuditLog).record(actor, {
    action: "payments.exported",
    applicationId: options.applicationId,
    details: { filters }
  })
  const text = body(PaymentSearch.search(sql), writes, options.search, requestDeadline)
  return HttpServerResponse.stream(Stream.encodeText(text), {
    contentType: "text/csv; charset=utf-8; header=present",
    headers: {
      "content-disposition": `attachment; filename="${options.filename}-${day(yield* DateTime.now)}.csv"`,
      "cache-control": "no-store"
    }
  })
})
