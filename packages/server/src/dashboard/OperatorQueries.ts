/**
 * Read-only queries behind the operator's cross-application pages (issue #6): deliveries and payments of every
 * application with filters and cursor paging (newest first). The repositories answer per application; these answer
 * across them.
 */
import { Delivery, Ids, Mode, type WebhookEvent } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import type { DeliveryStatus } from "../webhooks/DeliveryRepository.ts"
import * as PaymentSearch from "./PaymentSearch.ts"

export interface DeliveryQuery {
  readonly limit: number
  readonly applicationId?: Ids.ApplicationId | undefined
  readonly status?: DeliveryStatus | undefined
  readonly event?: WebhookEvent.EventName | undefined
  readonly mode?: Mode.Mode | undefined
  /** The last delivery of the previous page; an unknown one starts from the newest. */
  readonly startingAfter?: Ids.DeliveryId | undefined
}

export interface DeliveryRow {
  readonly id: string
  readonly applicationId: string
  readonly applicationName: string
  readonly event: string
  readonly paymentId: string
  readonly mode: Mode.Mode
  readonly status: DeliveryStatus
  /** Every attempt made, scheduled and manual. */
  readonly attempts: number
  /** The last attempt's answer: its status code, or why none came. */
  readonly lastResponseStatus: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: Date | null
  readonly createdAt: Date
}

/** A delivery with its event, its application's name and its last attempt. */
const DeliveryListRow = Schema.Struct({
  id: Ids.DeliveryId,
  application_id: Ids.ApplicationId,
  application_name: Schema.String,
  event: Schema.String,
  payment_id: Ids.PaymentId,
  mode: Mode.Mode,
  status: Delivery.DeliveryStatus,
  attempts: Columns.Integer,
  last_response_status: Columns.NullableInteger,
  last_error: Schema.NullOr(Schema.String),
  next_attempt_at: Columns.NullableTimestamp,
  created_at: Columns.Timestamp
})

const CursorRow = Schema.Struct({ created_at: Columns.Timestamp, id: Ids.DeliveryId })

export class OperatorQueries extends Context.Service<
  OperatorQueries,
  {
    readonly deliveries: (query: DeliveryQuery) => Effect.Effect<PaymentSearch.Page<DeliveryRow>>
    readonly payments: (query: PaymentSearch.PaymentSearchQuery) => Effect.Effect<PaymentSearch.PaymentPage>
  }
>()("@kassa/server/dashboard/OperatorQueries") {
  static readonly layer = Layer.effect(
    OperatorQueries,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const deliveries = Effect.fn("OperatorQueries.deliveries")(function* (query: DeliveryQuery) {
        const clauses: Array<Statement.Fragment> = []
        if (query.applicationId !== undefined) clauses.push(sql`d.application_id = ${query.applicationId}`)
        if (query.status !== undefined) clauses.push(sql`d.status = ${query.status}`)
        if (query.event !== undefined) clauses.push(sql`e.event = ${query.event}`)
        // deliveries.mode (0004): filtering by mode joins no event it does not show.
        if (query.mode !== undefined) clauses.push(sql`d.mode = ${query.mode}`)
        if (query.startingAfter !== undefined) {
          const after = yield* Columns.first(CursorRow)(
            sql`SELECT created_at, id FROM deliveries WHERE id = ${query.startingAfter}`
          )
          if (Option.isSome(after))
            clauses.push(
              sql`(d.created_at, d.id) < (${DateTime.toDateUtc(after.value.created_at)}, ${after.value.id}::uuid)`
            )
        }
        const rows = yield* Columns.all(DeliveryListRow)(sql`
          SELECT d.id, d.application_id, a.name AS application_name, e.event, e.payment_id, d.mode, d.status,
            d.next_attempt_at, d.created_at,
            -- Attempts are numbered 1..n per delivery (under its row lock), so the last one's number is the count.
            coalesce(last.number, 0) AS attempts,
            last.response_status AS last_response_status, last.error AS last_error
          FROM deliveries d
            JOIN events e ON e.id = d.event_id
            JOIN applications a ON a.id = d.application_id
            LEFT JOIN LATERAL (
              SELECT x.number, x.response_status, x.error FROM delivery_attempts x
              WHERE x.delivery_id = d.id ORDER BY x.number DESC LIMIT 1
            ) last ON true
          WHERE ${clauses.length === 0 ? sql`true` : sql.and(clauses)}
          ORDER BY d.created_at DESC, d.id DESC
          LIMIT ${query.limit + 1}
        `)
        return {
          rows: rows.slice(0, query.limit).map(
            (row): DeliveryRow => ({
              id: row.id,
              applicationId: row.application_id,
              applicationName: row.application_name,
              event: row.event,
              paymentId: row.payment_id,
              mode: row.mode,
              status: row.status,
              attempts: row.attempts,
              lastResponseStatus: row.last_response_status,
              lastError: row.last_error,
              nextAttemptAt: row.next_attempt_at === null ? null : DateTime.toDateUtc(row.next_attempt_at),
              createdAt: DateTime.toDateUtc(row.created_at)
            })
          ),
          hasMore: rows.length > query.limit
        } satisfies PaymentSearch.Page<DeliveryRow>
      }, Effect.orDie)

      const payments = PaymentSearch.search(sql)

      return OperatorQueries.of({
        deliveries,
        payments
      })
    })
  )
}
