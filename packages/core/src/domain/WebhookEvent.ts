import { type DateTime, Effect, Schema } from "effect"
import { SecureRandom } from "effect/crypto"
import { EventId } from "./Ids.ts"
import { Payment, type PaymentStatus } from "./Payment.ts"
import { Timestamp } from "./Timestamp.ts"

/** Event names (specification, "Event names"). */
export const EventName = Schema.Literals([
  "payment.paid",
  "payment.failed",
  "payment.cancelled",
  "payment.expired",
  "payment.partially_refunded",
  "payment.refunded"
])
export type EventName = typeof EventName.Type

/** The event a payment sends when it becomes `status`; `pending` sends none (no event on create). */
export const eventForStatus = (status: PaymentStatus): EventName | null =>
  status === "pending" ? null : `payment.${status}`

/** The webhook body: `data` is the payment exactly as fetch returns it at the moment of the change. */
export const WebhookEvent = Schema.Struct({
  id: EventId,
  event: EventName,
  created_at: Timestamp,
  data: Payment
}).annotate({ identifier: "WebhookEvent" })
export type WebhookEvent = typeof WebhookEvent.Type
export type WebhookEventEncoded = typeof WebhookEvent.Encoded

/**
 * Builds the event a status change sends: a fresh `evt_<uuid>` (kept across every retry by the
 * delivery), the time of the change, and the payment as it is after the change.
 */
export const make = Effect.fn("WebhookEvent.make")(function* (
  event: EventName,
  payment: Payment,
  createdAt: DateTime.Utc
) {
  const random = yield* SecureRandom.SecureRandom
  const uuid = yield* random.uuidV4()
  const webhookEvent: WebhookEvent = { id: EventId.make(`evt_${uuid}`), event, created_at: createdAt, data: payment }
  return webhookEvent
})

/** Events in the order their transition emitted them, all stamped with the transition's time. */
export const makeAll = (events: ReadonlyArray<EventName>, payment: Payment, createdAt: DateTime.Utc) =>
  Effect.forEach(events, (event) => make(event, payment, createdAt))
