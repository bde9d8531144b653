/**
 * The `events` group of the merchant API (decisions §12): the events the webhooks carry, read back by a merchant
 * who missed deliveries. List (newest first, filtered) and fetch; both see the key's application and mode only.
 * `MerchantApi` adds the authentication and request-validation errors every endpoint can answer with.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { EventId, PaymentId } from "../domain/Ids.ts"
import { EventName, WebhookEvent } from "../domain/WebhookEvent.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import { ListPaymentsQuery } from "./PaymentsApi.ts"

/** How long events stay readable at the least, whatever `KASSA_RETENTION_DELIVERIES` says (decisions §12). */
export const minimumRetentionDays = 30

/**
 * `{id}` of `GET /events/{id}`. A plain string: the one path-decoding answer (`InvalidRequest`) speaks of payments,
 * so the handler answers a malformed id itself, with the same 404 as an unknown one.
 */
export const EventParams = {
  id: Schema.String.annotate({ description: "The event's id, `evt_<uuid>`." })
}

// RFC 3339 `date-time` (section 5.6): full date, `T`, full time with an optional fraction, `Z` or a numeric offset.
const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/

/** Whether `text` is an RFC 3339 timestamp naming a real day and time (`Date` would roll 30 February over). */
export const isRfc3339 = (text: string): boolean => {
  const match = rfc3339.exec(text)
  if (match === null) return false
  // An absent offset (`Z`) reads as 0.
  const part = (index: number) => Number(match[index] ?? 0)
  const [year, month, day] = [part(1), part(2), part(3)]
  const date = new Date(Date.UTC(year, month - 1, day))
  return (
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    part(4) <= 23 &&
    part(5) <= 59 &&
    part(6) <= 59 &&
    part(7) <= 23 &&
    part(8) <= 59
  )
}

/**
 * An RFC 3339 timestamp in a query, as a `DateTime.Utc`; anything else (`2026-11-27`, `yesterday`) is refused. The
 * description sits on the string side, which is what OpenAPI shows of a query parameter (a custom check has no
 * JSON Schema form, so its annotations are not shown).
 */
export const queryTimestamp = (description: string) =>
  Schema.String.annotate({ description, format: "date-time" })
    .check(
      Schema.makeFilter(isRfc3339, {
        message: "must be an RFC 3339 timestamp, such as 2026-11-27T10:15:30Z",
        expected: "an RFC 3339 timestamp"
      })
    )
    .pipe(Schema.decodeTo(Schema.DateTimeUtc, SchemaTransformation.dateTimeUtcFromString))

/** A page of events, newest first; `has_more` says whether older ones follow `data`'s last entry. */
export const EventList = Schema.Struct({
  data: Schema.Array(WebhookEvent),
  has_more: Schema.Boolean
}).annotate({ identifier: "EventList" })
export type EventList = typeof EventList.Type

/** The query of `GET /events`: values arrive as strings, decoded with these schemas' string forms. */
export const ListEventsQuery = {
  limit: ListPaymentsQuery.limit,
  starting_after: Schema.optionalKey(
    EventId.annotate({ description: "Continue after this event: the last `id` of the previous page." })
  ),
  type: Schema.optionalKey(EventName.annotate({ description: "Only events with this name." })),
  payment_id: Schema.optionalKey(PaymentId.annotate({ description: "Only this payment's events." })),
  created_gte: Schema.optionalKey(queryTimestamp("Only events created at or after this RFC 3339 time.")),
  created_lt: Schema.optionalKey(queryTimestamp("Only events created before this RFC 3339 time."))
}
export type ListEventsQuery = Schema.Struct.Type<typeof ListEventsQuery>

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("list", "/events", {
      query: ListEventsQuery,
      success: EventList,
      error: [ErrorEnvelope.ValidationFailed, ErrorEnvelope.ServerError]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List events",
        description:
          "Events of the key's application and mode, newest first, in pages of `limit` (1–100, default 10); each " +
          "is the body a webhook carried. For the next page, pass the last `id` as `starting_after`. Events stay " +
          `readable for at least ${minimumRetentionDays} days.`
      })
    ),
    HttpApiEndpoint.get("retrieve", "/events/:id", {
      params: EventParams,
      success: WebhookEvent,
      error: [ErrorEnvelope.NotFound, ErrorEnvelope.ServerError]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Fetch an event",
        description:
          "The event exactly as its webhook carried it: `data` is the payment at the moment of the change, not now."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Events",
      description: "Read back the events the webhooks carry, for a receiver that missed some."
    })
  ) {}
