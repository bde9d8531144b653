/**
 * `kassa.events` of the Effect face (decisions §12): the events the webhooks carry, read back by a merchant who
 * missed deliveries. `list` pages through them newest first as a stream, `listPage` is one page, `retrieve` one event.
 * An event is typed by its name: checking `event.event` narrows the union, and `list({ type })` gives events of that
 * name only. `data` is the payment at the moment of the change for every name (not necessarily its status now).
 */
import { ApiError, EventsApi, Ids, MerchantApi, RequestValidation, type WebhookEvent } from "@kassa/core"
import { DateTime, Effect, Option, Schema, Stream } from "effect"
import type { HttpClientResponse } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { type AnyKassaError, fromApiError } from "./errors.ts"
import type { RequestOptions } from "./KassaClient.ts"

/** An event name, such as `payment.paid`. */
export type EventName = WebhookEvent.EventName

/**
 * The event (decoded: `created_at` and the payment's timestamps as `DateTime`) with one of the names `Name`; for
 * several names (the default: all of them) the union of each, discriminated on `event`.
 */
export type EventOf<Name extends EventName = EventName> = Name extends EventName
  ? WebhookEvent.WebhookEvent & { readonly event: Name }
  : never

/** One page of events, newest first; `has_more` says whether older ones follow the last entry. */
export interface EventPage<Name extends EventName = EventName> {
  readonly data: ReadonlyArray<EventOf<Name>>
  readonly has_more: boolean
}

/** A time of `created_gte` / `created_lt`: an RFC 3339 string (`2026-11-27T10:15:30Z`), a `Date` or a `DateTime`. */
export type EventTime = string | Date | DateTime.DateTime

/** The query of `GET /api/v1/events`: newest first, `limit` (1–100, default 10) per page. */
export interface ListEventsParams<Name extends EventName = EventName> {
  readonly limit?: number | undefined
  /** Continue after this event id: the last `id` of the previous page. */
  readonly starting_after?: string | undefined
  /** Only events with this name; the events' type narrows to it. */
  readonly type?: Name | undefined
  /** Only this payment's events. */
  readonly payment_id?: string | undefined
  /** Only events created at or after this time. */
  readonly created_gte?: EventTime | undefined
  /** Only events created before this time. */
  readonly created_lt?: EventTime | undefined
}

/** `KassaClient`'s `events`. Every call fails with an {@link AnyKassaError}. */
export interface KassaClientEvents {
  /** Every event matching `params`, newest first, fetching page after page as the stream is read. */
  readonly list: <Name extends EventName = EventName>(
    params?: ListEventsParams<Name>,
    options?: RequestOptions
  ) => Stream.Stream<EventOf<Name>, AnyKassaError>
  /** One page of events. */
  readonly listPage: <Name extends EventName = EventName>(
    params?: ListEventsParams<Name>,
    options?: RequestOptions
  ) => Effect.Effect<EventPage<Name>, AnyKassaError>
  /** Fetches an event, exactly as its webhook carried it. */
  readonly retrieve: (id: string, options?: RequestOptions) => Effect.Effect<EventOf, AnyKassaError>
}

/** The typed client's `events` group, as `KassaClient.make` builds it. */
export type EventsGroupClient = HttpApiClient.ForApi<typeof MerchantApi.MerchantApi>["events"]

/** How `KassaClient` sends a call (its `sendWith`): attempts within the timeout, decoding, retries. */
export type Send = <A>(
  request: Effect.Effect<HttpClientResponse.HttpClientResponse, unknown>,
  decode: (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<A, unknown>,
  options: RequestOptions | undefined
) => Effect.Effect<A, AnyKassaError>

const decoders = {
  list: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "events", endpoint: "list" }),
  retrieve: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "events", endpoint: "retrieve" })
}

// Refused before sending, as the server would answer: a malformed id is 404 (nothing could have it), a malformed
// query parameter 422 `validation_failed` naming it.
const refused = (error: ApiError.NotFound | ApiError.ValidationFailed) =>
  fromApiError(error, { status: ApiError.statusOf(error), requestId: undefined })

const validEventId = (id: string) =>
  Effect.fromResult(Schema.decodeUnknownResult(Ids.EventId)(id)).pipe(
    Effect.mapError(() => refused(new ApiError.NotFound({ message: "No event with this id." })))
  )

const ListQuery = Schema.Struct(EventsApi.ListEventsQuery)

// Times are checked in their wire form (RFC 3339), so a `Date` or `DateTime` is written as one first; an invalid
// `Date` stays a value the check refuses rather than throwing.
const wireTime = (time: EventTime): unknown => {
  if (typeof time === "string") return time
  if (time instanceof Date) return Number.isNaN(time.getTime()) ? String(time) : time.toISOString()
  return DateTime.isDateTime(time) ? DateTime.formatIso(time) : time
}

// Unknown query parameters are tolerated by the server, so only the declared ones are checked.
const validListQuery = (params: ListEventsParams) => {
  const { created_gte, created_lt, ...rest } = params
  const input = {
    ...rest,
    ...(created_gte === undefined ? {} : { created_gte: wireTime(created_gte) }),
    ...(created_lt === undefined ? {} : { created_lt: wireTime(created_lt) })
  }
  return Effect.fromResult(
    Schema.decodeUnknownResult(ListQuery, { errors: "all" })(
      Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined))
    )
  ).pipe(
    Effect.mapError((error) => refused(RequestValidation.validationFailed(RequestValidation.fieldErrors(error.issue))))
  )
}

/** `events` over the typed client's group and `KassaClient`'s sending. */
export const makeEvents = (client: EventsGroupClient, send: Send): KassaClientEvents => {
  const listPage = Effect.fn("KassaClient.events.listPage")(function* (
    params: ListEventsParams = {},
    options?: RequestOptions
  ) {
    const query = yield* validListQuery(params)
    return yield* send(client.list({ query, responseMode: "response-only" }), decoders.list, options)
  })

  const retrieve = Effect.fn("KassaClient.events.retrieve")(function* (id: string, options?: RequestOptions) {
    const eventId = yield* validEventId(id)
    const event: EventOf = yield* send(
      client.retrieve({ params: { id: eventId }, responseMode: "response-only" }),
      decoders.retrieve,
      options
    )
    return event
  })

  // The server answers only events of `params.type` when it is given, which is what narrows the page's type.
  const typedPage = <Name extends EventName>(params: ListEventsParams<Name> = {}, options?: RequestOptions) =>
    Effect.map(listPage(params, options), (page) => page as EventPage<Name>)

  const list = <Name extends EventName>(params: ListEventsParams<Name> = {}, options?: RequestOptions) =>
    Stream.paginate(params.starting_after, (cursor: string | undefined) =>
      Effect.map(typedPage({ ...params, starting_after: cursor }, options), (page) => {
        const last = page.data.at(-1)
        const next = page.has_more && last !== undefined ? Option.some(last.id) : Option.none()
        return [page.data, next] as const
      })
    )

  return { list, listPage: typedPage, retrieve }
}
