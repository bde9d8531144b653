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
  }
>()("@kassa/server/payments/EventOutbox") {
  static readonly layer = Layer.effect(
    EventOutbox,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const random = yield* SecureRandom.SecureRandom
      const wakeup = yield* DeliveryWakeup

      const record = Effect.fn("EventOutbox.record")(function* (
        applicationId: Ids.ApplicationId,
        payment: Payment.Payment,
        events: ReadonlyArray<WebhookEvent.EventName>,
        at: DateTime.Utc
      ) {
        const made = yield* WebhookEvent.makeAll(events, payment, at).pipe(
          Effect.provideService(SecureRandom.SecureRandom, random)
        )
        const createdAt = DateTime.toDateUtc(at)
        for (const event of made) {
          const deliveryId = Ids.DeliveryId.make(yield* random.uuidV4())
          yield* sql`
            INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
            VALUES (${event.id}, ${applicationId}, ${payment.id}, ${payment.mode}, ${event.event}, ${eventBody(event)},
              ${createdAt})
          `
          yield* sql`
            INSERT INTO deliveries (id, event_id, application_id, status, next_attempt_at, created_at, updated_at)
            VALUES (${deliveryId}, ${event.id}, ${applicationId}, 'pending', ${createdAt}, ${createdAt}, ${createdAt})
          `
        }
        // The dispatcher in this process starts on the first attempt as soon as the change commits.
        yield* sql.afterCommit(wakeup.wake)
        return made
      }, Effect.orDie)

      return EventOutbox.of({ record })
    })
  )
}
