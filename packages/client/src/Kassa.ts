/**
 * The Promise face of the SDK, for code that does not use Effect. A thin wrapper: every method runs the matching
 * effect of {@link KassaClientService}, so both faces share one implementation (validation, retries, errors).
 */
import { EventsApi, Payment, PaymentsApi, WebhookEvent } from "@kassa/core"
import type { KassaEvent, KassaEventName, KassaEventOf, KassaPayment } from "@kassa/webhook-verify"
import { Cause, Effect, Exit, Schema, Stream } from "effect"
import type { ListEventsParams } from "./Events.ts"
import { type AnyKassaError, RequestAbortedError } from "./errors.ts"
import {
  type CreatePaymentParams,
  fetchHttpClient,
  type KassaClientOptions,
  type ListPaymentsParams,
  make,
  type RefundParams,
  type SimulateParams,
  settingsOf
} from "./KassaClient.ts"

/** Settings of a {@link Kassa} client. */
export interface KassaOptions extends Omit<KassaClientOptions, "apiKey" | "timeout"> {
  /** The application's API key, `pk_test_…` or `pk_live_…`. Keep it on the server. */
  readonly apiKey: string
  /** How long one attempt may take, in milliseconds, answer body included. Default 30 000. */
  readonly timeout?: number | undefined
}

/** Per-call settings; they override the client's. */
export interface CallOptions {
  /** Milliseconds one attempt may take. */
  readonly timeout?: number | undefined
  readonly maxRetries?: number | undefined
  /** Aborts the call, retries included; it then rejects with {@link RequestAbortedError}. */
  readonly signal?: AbortSignal | undefined
}

/** Per-call settings of create and refund. */
export interface IdempotentCallOptions extends CallOptions {
  /** The `Idempotency-Key`; default a new random `kassa_<uuid>` per call, reused by the SDK's retries of it. */
  readonly idempotencyKey?: string | undefined
}

/** Per-call settings of create. */
export interface CreatePaymentCallOptions extends IdempotentCallOptions {
  /** Test keys only: `provider_error` makes the simulated provider refuse. */
  readonly simulate?: "provider_error" | undefined
}

/** One page of payments; `has_more` says whether older ones follow the last entry. */
export interface KassaPaymentPage {
  readonly data: ReadonlyArray<KassaPayment>
  readonly has_more: boolean
}

/** `client.payments`. */
export interface KassaPayments {
  create(params: CreatePaymentParams, options?: CreatePaymentCallOptions): Promise<KassaPayment>
  get(id: string, options?: CallOptions): Promise<KassaPayment>
  /** Every matching payment, newest first, for `for await`; pages are fetched as the loop goes. */
  list(params?: ListPaymentsParams, options?: CallOptions): AsyncIterable<KassaPayment>
  /** One page; pass the last `id` as `starting_after` for the next. */
  listPage(params?: ListPaymentsParams, options?: CallOptions): Promise<KassaPaymentPage>
  cancel(id: string, options?: CallOptions): Promise<KassaPayment>
  refund(id: string, params?: RefundParams, options?: IdempotentCallOptions): Promise<KassaPayment>
}

/**
 * The event with one of the names `Name`, as JSON shows it (the webhook's body); for several names (the default: all
 * of them) the union of each, discriminated on `event`.
 */
export type KassaEventNamed<Name extends KassaEventName = KassaEventName> = Name extends KassaEventName
  ? KassaEventOf<Name>
  : never

/** One page of events, newest first; `has_more` says whether older ones follow the last entry. */
export interface KassaEventPage<Name extends KassaEventName = KassaEventName> {
  readonly data: ReadonlyArray<KassaEventNamed<Name>>
  readonly has_more: boolean
}

/** `client.events`: the events the webhooks carry, read back; `type` narrows the events' type to that name. */
export interface KassaEvents {
  /** Every matching event, newest first, for `for await`; pages are fetched as the loop goes. */
  list<Name extends KassaEventName = KassaEventName>(
    params?: ListEventsParams<Name>,
    options?: CallOptions
  ): AsyncIterable<KassaEventNamed<Name>>
  /** One page; pass the last `id` as `starting_after` for the next. */
  listPage<Name extends KassaEventName = KassaEventName>(
    params?: ListEventsParams<Name>,
    options?: CallOptions
  ): Promise<KassaEventPage<Name>>
  /** The event exactly as its webhook carried it. */
  retrieve(id: string, options?: CallOptions): Promise<KassaEvent>
}

/** `client.test`: helpers for test keys. */
export interface KassaTest {
  simulate(id: string, params: SimulateParams, options?: CallOptions): Promise<KassaPayment>
}

// The signal is the Promise face's business; the rest passes through to the effect.
const effectOptions = <O extends CallOptions>(options: O | undefined) => {
  if (options === undefined) return undefined
  const { signal: _, ...rest } = options
  return rest
}

// Promise code gets payments as JSON shows them (timestamps as strings), the shape webhooks deliver as `data`; the
// Effect face gives the contract's decoded types. Encoding what was just decoded cannot fail.
const toJson = Effect.fnUntraced(function* (payment: Payment.Payment) {
  const json: KassaPayment = yield* Effect.orDie(Schema.encodeEffect(Payment.Payment)(payment))
  return json
})
const pageToJson = Effect.fnUntraced(function* (page: PaymentsApi.PaymentList) {
  const json: KassaPaymentPage = yield* Effect.orDie(Schema.encodeEffect(PaymentsApi.PaymentList)(page))
  return json
})

// Events likewise, as their webhooks carried them. The server answers only events of `type` when it is given, which
// is what narrows the type.
const eventToJson = Effect.fnUntraced(function* <Name extends KassaEventName>(event: WebhookEvent.WebhookEvent) {
  const json: KassaEvent = yield* Effect.orDie(Schema.encodeEffect(WebhookEvent.WebhookEvent)(event))
  return json as KassaEventNamed<Name>
})
const eventPageToJson = Effect.fnUntraced(function* <Name extends KassaEventName>(page: EventsApi.EventList) {
  const json: KassaEventPage = yield* Effect.orDie(Schema.encodeEffect(EventsApi.EventList)(page))
  return json as KassaEventPage<Name>
})

const aborted = (signal: AbortSignal) =>
  new RequestAbortedError({ message: "The request was aborted.", cause: signal.reason })

/** Runs a call; rejects with the call's {@link KassaError} (or {@link RequestAbortedError}), never with a wrapper. */
const run = async <A>(effect: Effect.Effect<A, AnyKassaError>, signal: AbortSignal | undefined): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect, signal === undefined ? undefined : { signal })
  if (Exit.isSuccess(exit)) return exit.value
  if (signal?.aborted === true && Cause.hasInterruptsOnly(exit.cause)) throw aborted(signal)
  throw Cause.squash(exit.cause)
}

const iterate = <A>(stream: Stream.Stream<A, AnyKassaError>, signal: AbortSignal | undefined): AsyncIterable<A> =>
  Stream.toAsyncIterable(
    signal === undefined
      ? stream
      : Stream.interruptWhen(
          stream,
          Effect.callback<never, RequestAbortedError>((resume) => {
            const onAbort = () => resume(Effect.fail(aborted(signal)))
            if (signal.aborted) return onAbort()
            signal.addEventListener("abort", onAbort, { once: true })
            return Effect.sync(() => signal.removeEventListener("abort", onAbort))
          })
        )
  )

/**
 * The Kassa merchant API for Promise code.
 *
 * @example
 * import { Kassa } from "@kassa/client"
 *
 * const kassa = new Kassa({ apiKey: "pk_test_…", baseUrl: "https://kassa.example.com" })
 * const payment = await kassa.payments.create({ amount: 1250, currency: "EUR", order_reference: "order-1" })
 */
export class Kassa {
  readonly payments: KassaPayments
  readonly events: KassaEvents
  readonly test: KassaTest

  constructor(options: KassaOptions) {
    // Checked here too so that a mistake throws its own error from `new Kassa`, not a wrapped defect.
    settingsOf(options)
    const client = Effect.runSync(make(options).pipe(Effect.provide(fetchHttpClient(options))))
    this.payments = {
      create: (params, options) =>
        run(Effect.flatMap(client.payments.create(params, effectOptions(options)), toJson), options?.signal),
      get: (id, options) =>
        run(Effect.flatMap(client.payments.get(id, effectOptions(options)), toJson), options?.signal),
      list: (params, options) =>
        iterate(Stream.mapEffect(client.payments.list(params, effectOptions(options)), toJson), options?.signal),
      listPage: (params, options) =>
        run(Effect.flatMap(client.payments.listPage(params, effectOptions(options)), pageToJson), options?.signal),
      cancel: (id, options) =>
        run(Effect.flatMap(client.payments.cancel(id, effectOptions(options)), toJson), options?.signal),
      refund: (id, params, options) =>
        run(Effect.flatMap(client.payments.refund(id, params, effectOptions(options)), toJson), options?.signal)
    }
    this.events = {
      list: <Name extends KassaEventName>(params?: ListEventsParams<Name>, options?: CallOptions) =>
        iterate(
          Stream.mapEffect(client.events.list(params, effectOptions(options)), (event) => eventToJson<Name>(event)),
          options?.signal
        ),
      listPage: <Name extends KassaEventName>(params?: ListEventsParams<Name>, options?: CallOptions) =>
        run(
          Effect.flatMap(client.events.listPage(params, effectOptions(options)), (page) => eventPageToJson<Name>(page)),
          options?.signal
        ),
      retrieve: (id, options) =>
        run(Effect.flatMap(client.events.retrieve(id, effectOptions(options)), eventToJson), options?.signal)
    }
    this.test = {
      simulate: (id, params, options) =>
        run(Effect.flatMap(client.test.simulate(id, params, effectOptions(options)), toJson), options?.signal)
    }
  }
}
