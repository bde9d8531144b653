/**
 * The transactional outbox of webhook events (decisions §7): every status change writes its event row and a
 * `pending` delivery due at once, on the caller's connection, so they commit or roll back with the change itself.
 * A committed change therefore always gets its webhook, even if the process dies right after; the delivery engine
 * picks the rows up from there.
 */
import { Ids, type Payment, WebhookEvent } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Schema } from "effect"
import { SecureRandom } from "effect/crypto"
import { SqlClient } from "effect/sql"
import * as Tracing from "../observability/Tracing.ts"
import { DeliveryWakeup } from "../webhooks/DeliveryWakeup.ts"

// The body is serialized once, here, so every attempt sends the same bytes.
const encodeEvent = Schema.encodeSync(Schema.toCodecJson(WebhookEvent.WebhookEvent))

/** The exact body of an event: `{"id","event","created_at","data"}`. */
export const eventBody = (event: WebhookEvent.WebhookEvent): string => JSON.stringify(encodeEvent(event))

export class EventOutbox extends Context.Service<
  EventOutbox,
  {
    /**
     * Writes one event and one pending delivery per event name, stamped `at`, with `payment` (as fetch returns it
     * after the change) as `data`. Must run inside the transaction that makes the change.
     */
    readonly record: (
      applicationId: Ids.ApplicationId,
      payment: Payment.Payment,
      events: ReadonlyArray<WebhookEvent.EventName>,
      at: DateTime.Utc
    ) => Effect.Effect<ReadonlyArray<WebhookEvent.WebhookEvent>>
    /**
     * {@link record} for many payments at once (a batch expiry): the same events and deliveries, written by two
     * statements whatever the batch's size. Must run inside the transaction that makes the changes.
     */
    readonly recordMany: (
      changes: ReadonlyArray<{
        readonly applicationId: Ids.ApplicationId
        readonly payment: Payment.Payment
        readonly events: ReadonlyArray<WebhookEvent.EventName>
      }>,
      at: DateTime.Utc
    ) => Effect.Effect<void>
  }
>()("@kassa/server/ledger/EventOutbox") {
  static readonly layer = Layer.effect(
    EventOutbox,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const random = yield* SecureRandom.SecureRandom
      const wakeup = yield* DeliveryWakeup

      /** One event row and one pending delivery row (due at once) per event, in two statements. */
      const insertAll = Effect.fnUntraced(function* (
        made: ReadonlyArray<{
          readonly applicationId: Ids.ApplicationId
          readonly payment: Payment.Payment
          readonly event: WebhookEvent.WebhookEvent
        }>,
        at: DateTime.Utc
      ) {
        const [first, ...rest] = made
        if (first === undefined) return
        const createdAt = DateTime.toDateUtc(at)
        // The span that caused the events: each webhook attempt's span links to it (Dispatcher).
        const traceContext = (yield* Tracing.currentTraceparent) ?? null
        const eventRow = ({ applicationId, payment, event }: (typeof made)[number]) => ({
          id: event.id,
          application_id: applicationId,
          payment_id: payment.id,
          mode: payment.mode,
          event: event.event,
          body: eventBody(event),
          created_at: createdAt,
          trace_context: traceContext
        })
        const deliveryRow = ({ applicationId, payment, event }: (typeof made)[number], id: Ids.DeliveryId) => ({
          id,
          event_id: event.id,
          application_id: applicationId,
          mode: payment.mode,
          status: "pending",
          next_attempt_at: createdAt,
          created_at: createdAt,
          updated_at: createdAt
        })
        const deliveryIds: Array<Ids.DeliveryId> = []
        for (let index = 0; index < made.length; index++) deliveryIds.push(Ids.DeliveryId.make(yield* random.uuidV4()))
        yield* sql`INSERT INTO events ${sql.insert([eventRow(first), ...rest.map(eventRow)])}`
        yield* sql`INSERT INTO deliveries ${sql.insert(
          [first, ...rest].map((entry, index) => deliveryRow(entry, deliveryIds[index] as Ids.DeliveryId)) as [
            ReturnType<typeof deliveryRow>,
            ...Array<ReturnType<typeof deliveryRow>>
          ]
        )}`
      })

      const record = Effect.fn("EventOutbox.record")(function* (
        applicationId: Ids.ApplicationId,
        payment: Payment.Payment,
        events: ReadonlyArray<WebhookEvent.EventName>,
        at: DateTime.Utc
      ) {
        const made = yield* WebhookEvent.makeAll(events, payment, at).pipe(
          Effect.provideService(SecureRandom.SecureRandom, random)
        )
        yield* insertAll(
          made.map((event) => ({ applicationId, payment, event })),
          at
        )
        // The dispatcher in this process starts on the first attempt as soon as the change commits.
        yield* sql.afterCommit(wakeup.wake)
        return made
      }, Effect.orDie)

      const recordMany = Effect.fn("EventOutbox.recordMany")(function* (
        changes: ReadonlyArray<{
          readonly applicationId: Ids.ApplicationId
          readonly payment: Payment.Payment
          readonly events: ReadonlyArray<WebhookEvent.EventName>
        }>,
        at: DateTime.Utc
      ) {
        const made = []
        for (const { applicationId, payment, events } of changes) {
          const built = yield* WebhookEvent.makeAll(events, payment, at).pipe(
            Effect.provideService(SecureRandom.SecureRandom, random)
          )
          for (const event of built) made.push({ applicationId, payment, event })
        }
        if (made.length === 0) return
        yield* insertAll(made, at)
        yield* sql.afterCommit(wakeup.wake)
      }, Effect.orDie)

      return EventOutbox.of({ record, recordMany })
    })
  )
}
