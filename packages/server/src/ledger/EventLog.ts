/**
 * The read side of the event outbox (decisions §12): a key's events, listed newest first or fetched by id, as the
 * exact bodies the outbox stored and every webhook attempt sent, so an event read back is byte for byte what a
 * receiver got. `EventOutbox` writes the rows; `Retention` keeps them for at least 30 days.
 *
 * The list walks `events_list` (application, mode, created_at, id) backwards, or `events_type` with `type`, and a
 * payment's events through `events_payment` (0014_events_api); each stops after `limit + 1` rows. Events written
 * by one change share their `created_at`; `id` breaks the tie, so pages never skip or repeat one.
 */
import { type EventsApi, Ids } from "@kassa/core"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import type { Scope } from "./PaymentRepository.ts"

/** `starting_after` names no event the caller can see (another application's, the other mode's, or pruned). */
export class EventCursorNotFound extends Schema.TaggedError<EventCursorNotFound>()("EventCursorNotFound", {}) {}

export interface EventPage {
  /** The events' stored bodies (`{"id","event","created_at","data"}`), newest first. */
  readonly bodies: ReadonlyArray<string>
  readonly hasMore: boolean
}

/** An event as the API answers it: its stored body, nothing decoded or encoded again. */
const BodyRow = Schema.Struct({ body: Schema.String })
const IdRow = Schema.Struct({ id: Ids.EventId })

export class EventLog extends Context.Service<
  EventLog,
  {
    /** A page of the scope's events matching `query`, newest first. */
    readonly list: (scope: Scope, query: EventsApi.ListEventsQuery) => Effect.Effect<EventPage, EventCursorNotFound>
    /** The stored body of one of the scope's events; none for another application's or mode's, or an unknown id. */
    readonly find: (scope: Scope, id: Ids.EventId) => Effect.Effect<Option.Option<string>>
  }
>()("@kassa/server/ledger/EventLog") {
  static readonly layer = Layer.effect(
    EventLog,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const list = Effect.fn("EventLog.list")(function* (scope: Scope, query: EventsApi.ListEventsQuery) {
        const clauses: Array<Statement.Fragment> = [
          sql`application_id = ${scope.applicationId}`,
          sql`mode = ${scope.mode}`
        ]
        if (query.type !== undefined) clauses.push(sql`event = ${query.type}`)
        if (query.payment_id !== undefined) clauses.push(sql`payment_id = ${query.payment_id}`)
        if (query.created_gte !== undefined) clauses.push(sql`created_at >= ${Columns.toDate(query.created_gte)}`)
        if (query.created_lt !== undefined) clauses.push(sql`created_at < ${Columns.toDate(query.created_lt)}`)
        if (query.starting_after !== undefined) {
          const cursor = query.starting_after
          const found = yield* Columns.first(IdRow)(sql`
            SELECT id FROM events
            WHERE id = ${cursor} AND application_id = ${scope.applicationId} AND mode = ${scope.mode}
          `).pipe(Effect.orDie)
          if (Option.isNone(found)) return yield* new EventCursorNotFound()
          // Newest first: everything strictly older than the cursor in (created_at, id) order. The cursor's time is
          // read in the statement itself, so it is compared at the column's precision, never rounded by a round trip
          // (pruned in between, it reads NULL: an empty last page).
          clauses.push(sql`(created_at, id) < ((SELECT created_at FROM events WHERE id = ${cursor}), ${cursor})`)
        }
        const rows = yield* Columns.all(BodyRow)(sql`
          SELECT body FROM events WHERE ${sql.and(clauses)}
          ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}
        `).pipe(Effect.orDie)
        return { bodies: rows.slice(0, query.limit).map((row) => row.body), hasMore: rows.length > query.limit }
      })

      const find = Effect.fn("EventLog.find")(function* (scope: Scope, id: Ids.EventId) {
        const row = yield* Columns.first(BodyRow)(sql`
          SELECT body FROM events WHERE id = ${id} AND application_id = ${scope.applicationId} AND mode = ${scope.mode}
        `).pipe(Effect.orDie)
        return Option.map(row, ({ body }) => body)
      })

      return EventLog.of({ list, find })
    })
  )
}
