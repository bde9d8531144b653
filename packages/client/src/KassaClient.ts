/**
 * The Effect face of the SDK: the {@link KassaClient} service, built on the typed client that effect derives from the
 * core's API contract (`MerchantApi`), so requests and answers cannot drift from the server. The Promise face
 * (`Kassa`) runs these same effects.
 *
 * @example
 * import { KassaClient } from "@kassa/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const kassa = yield* KassaClient
 *   return yield* kassa.payments.create({ amount: 1250, currency: "EUR", order_reference: "order-1" })
 * }).pipe(Effect.provide(KassaClient.layer({ apiKey: "pk_test_…", baseUrl: "https://kassa.example.com" })))
 */
import {
  ApiError,
  Authentication,
  IdempotencyKey,
  Ids,
  MerchantApi,
  type Payment,
  PaymentRequests,
  PaymentsApi,
  RequestValidation
} from "@kassa/core"
import { Context, Duration, Effect, Layer, Option, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { type KassaClientEvents, makeEvents } from "./Events.ts"
import { type AnyKassaError, fromApiError } from "./errors.ts"
import { sendWith } from "./Sending.ts"

// --- options ----------------------------------------------------------------------------------------------------------

/** Settings of a client. */
export interface KassaClientOptions {
  /** The application's API key, `pk_test_…` or `pk_live_…`. Keep it on the server. */
  readonly apiKey: string | Redacted.Redacted<string>
  /** Where the Kassa server answers, e.g. `https://kassa.example.com` (without `/api/v1`). */
  readonly baseUrl: string | URL
  /** Retries after a network failure, a timeout, a 5xx, a 429 or a retryable 409. Default 2; 0 turns retries off. */
  readonly maxRetries?: number | undefined
  /** How long one attempt may take, answer body included. Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** The `fetch` to send requests with (`KassaClient.layer` and `Kassa` only); default `globalThis.fetch`. */
  readonly fetch?: typeof globalThis.fetch | undefined
  /** Run even where `window` or `document` exists. Anyone who can open the page can then read the API key. */
  readonly dangerouslyAllowBrowser?: boolean | undefined
}

/** Per-call settings; they override the client's. */
export interface RequestOptions {
  readonly timeout?: Duration.Input | undefined
  readonly maxRetries?: number | undefined
}

/** Per-call settings of create and refund. */
export interface IdempotentRequestOptions extends RequestOptions {
  /**
   * The `Idempotency-Key` (1–255 printable ASCII characters). Default: a new random `kassa_<uuid>` per call, reused by
   * the SDK's retries of that call. Pass your own (e.g. derived from your order) to make retries across processes safe.
   */
  readonly idempotencyKey?: string | undefined
}

/** Per-call settings of create. */
export interface CreatePaymentOptions extends IdempotentRequestOptions {
  /** Test keys only: `provider_error` makes the simulated provider refuse (502 `provider_error`, payment `failed`). */
  readonly simulate?: "provider_error" | undefined
}

/** The body of `POST /api/v1/payments`. */
export type CreatePaymentParams = PaymentRequests.CreatePaymentBody
/** The body of `POST /api/v1/payments/{id}/refunds`; empty refunds everything still refundable. */
export type RefundParams = PaymentRequests.RefundBody
/** The body of `POST /api/v1/test/payments/{id}/simulate`. */
export type SimulateParams = PaymentRequests.SimulateBody

/** The query of `GET /api/v1/payments`: newest first, `limit` (1–100, default 10) per page. */
export interface ListPaymentsParams {
  readonly limit?: number | undefined
  /** Continue after this payment id: the last `id` of the previous page. */
  readonly starting_after?: string | undefined
  readonly status?: Payment.PaymentStatus | undefined
  readonly order_reference?: string | undefined
}

/** One page of payments; `has_more` says whether older ones follow the last entry. */
export type PaymentPage = PaymentsApi.PaymentList

// --- the service ------------------------------------------------------------------------------------------------------

/** The merchant API as effects. Every call fails with an {@link AnyKassaError}. */
export interface KassaClientService {
  readonly payments: {
    /** Creates a payment (with an automatic `Idempotency-Key`, see {@link IdempotentRequestOptions}). */
    readonly create: (
      params: CreatePaymentParams,
      options?: CreatePaymentOptions
    ) => Effect.Effect<Payment.Payment, AnyKassaError>
    /** Fetches a payment. */
    readonly get: (id: string, options?: RequestOptions) => Effect.Effect<Payment.Payment, AnyKassaError>
    /** Every payment matching `params`, newest first, fetching page after page as the stream is read. */
    readonly list: (
      params?: ListPaymentsParams,
      options?: RequestOptions
    ) => Stream.Stream<Payment.Payment, AnyKassaError>
    /** One page of payments. */
    readonly listPage: (
      params?: ListPaymentsParams,
      options?: RequestOptions
    ) => Effect.Effect<PaymentPage, AnyKassaError>
    /** Cancels a pending payment. */
    readonly cancel: (id: string, options?: RequestOptions) => Effect.Effect<Payment.Payment, AnyKassaError>
    /** Refunds a paid payment, by default all that is still refundable (test keys; live refunds are manual). */
    readonly refund: (
      id: string,
      params?: RefundParams,
      options?: IdempotentRequestOptions
    ) => Effect.Effect<Payment.Payment, AnyKassaError>
  }
  /** The events the webhooks carry, read back (`Events.ts`). */
  readonly events: KassaClientEvents
  readonly test: {
    /** Test keys only: moves a pending payment to `paid`, `failed` or `expired`, as the hosted checkout would. */
    readonly simulate: (
      id: string,
      params: SimulateParams,
      options?: RequestOptions
    ) => Effect.Effect<Payment.Payment, AnyKassaError>
  }
}

// --- settings ---------------------------------------------------------------------------------------------------------

interface Settings {
  readonly apiKey: Redacted.Redacted<string>
  readonly baseUrl: string
  readonly maxRetries: number
  readonly timeout: Duration.Duration
}

export const defaultMaxRetries = 2
export const defaultTimeout = Duration.seconds(30)

const isRetryCount = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0

/**
 * Checks the options; throws on a mistake, as early as possible. The browser check keeps API keys out of pages:
 * `window` or `document` means browser code, where anyone can read the key.
 */
export const settingsOf = (options: KassaClientOptions): Settings => {
  if (options.dangerouslyAllowBrowser !== true && (typeof window !== "undefined" || typeof document !== "undefined")) {
    throw new Error(
      "@kassa/client does not run in a browser: an API key in browser code can be read by anyone who opens the " +
        "page. Call Kassa from your server instead. If this is server code in an environment that defines `window` " +
        "or `document` (such as a test with jsdom), pass `dangerouslyAllowBrowser: true`."
    )
  }
  const apiKey = Redacted.isRedacted(options.apiKey) ? options.apiKey : Redacted.make(options.apiKey)
  const key: unknown = Redacted.value(apiKey)
  if (typeof key !== "string" || key.length === 0) {
    throw new TypeError("@kassa/client: `apiKey` is required (pk_test_… or pk_live_…).")
  }
  const baseUrl = String(options.baseUrl)
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new TypeError(`@kassa/client: \`baseUrl\` must be an absolute http(s) URL, got ${JSON.stringify(baseUrl)}.`)
  }
  const maxRetries = options.maxRetries ?? defaultMaxRetries
  if (!isRetryCount(maxRetries)) {
    throw new TypeError(`@kassa/client: \`maxRetries\` must be a whole number ≥ 0, got ${String(maxRetries)}.`)
  }
  const timeout = options.timeout === undefined ? Option.some(defaultTimeout) : Duration.fromInput(options.timeout)
  if (Option.isNone(timeout)) {
    throw new TypeError(`@kassa/client: \`timeout\` is not a duration: ${String(options.timeout)}.`)
  }
  return { apiKey, baseUrl: baseUrl.replace(/\/+$/, ""), maxRetries, timeout: timeout.value }
}

// --- answers ----------------------------------------------------------------------------------------------------------

// Built once: each walks the API declaration. They decode exactly as the typed client would in its default mode.
const decoders = {
  create: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "payments", endpoint: "create" }),
  retrieve: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "payments", endpoint: "retrieve" }),
  list: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "payments", endpoint: "list" }),
  cancel: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "payments", endpoint: "cancel" }),
  refund: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "payments", endpoint: "refund" }),
  simulate: HttpApiClient.decodeResponse(MerchantApi.MerchantApi, { group: "test", endpoint: "simulate" })
}

// --- answers, retries and sending: Sending.ts ---------------------------------------------------------------------

// --- requests refused before sending ------------------------------------------------------------------------------

// The SDK checks requests with the contract's schemas (the typed client would refuse to encode them anyway) and
// answers as the server would: malformed ids are 404, invalid fields 422 `validation_failed` with `fields`.
const refused = (error: ApiError.NotFound | ApiError.ValidationFailed) =>
  fromApiError(error, { status: ApiError.statusOf(error), requestId: undefined })

const validPaymentId = (id: string) =>
  Effect.fromResult(Schema.decodeUnknownResult(Ids.PaymentId)(id)).pipe(
    Effect.mapError(() => refused(new ApiError.NotFound({ message: "No payment with this id." })))
  )

const validBody = <S extends Schema.Decoder<unknown>>(schema: S, input: unknown) =>
  Effect.fromResult(RequestValidation.validate(schema)(input)).pipe(Effect.mapError(refused))

const validIdempotencyKey = (key: string) =>
  Effect.fromResult(IdempotencyKey.parse(key)).pipe(
    Effect.mapError((error) =>
      refused(RequestValidation.validationFailed({ [IdempotencyKey.headerName]: [error.message] }))
    )
  )

const ListQuery = Schema.Struct(PaymentsApi.ListPaymentsQuery)

// Unknown query parameters are tolerated by the server, so only the declared ones are checked.
const validListQuery = (params: ListPaymentsParams) =>
  Effect.fromResult(
    Schema.decodeUnknownResult(ListQuery, { errors: "all" })(
      Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined))
    )
  ).pipe(
    Effect.mapError((error) => refused(RequestValidation.validationFailed(RequestValidation.fieldErrors(error.issue))))
  )

const newIdempotencyKey = () => `kassa_${crypto.randomUUID()}`

// --- construction -----------------------------------------------------------------------------------------------------

/**
 * Builds the service over the `HttpClient` in context (as `KassaClient.make`). Use it to send requests with another
 * `HttpClient` (such as `NodeHttpClient`); {@link KassaClient.layer} uses `fetch`.
 */
export const make = Effect.fnUntraced(function* (options: KassaClientOptions) {
  const settings = yield* Effect.sync(() => settingsOf(options))
  const client = yield* HttpApiClient.make(MerchantApi.MerchantApi, { baseUrl: settings.baseUrl }).pipe(
    Effect.provide(
      HttpApiMiddleware.layerClient(Authentication.Authentication, ({ next, request }) =>
        next(HttpClientRequest.bearerToken(request, settings.apiKey))
      )
    )
  )

  const send = sendWith(settings)

  const create = Effect.fn("KassaClient.payments.create")(function* (
    params: CreatePaymentParams,
    key: string,
    options: CreatePaymentOptions | undefined
  ) {
    const payload = yield* validBody(PaymentRequests.CreatePaymentBody, params)
    const idempotencyKey = yield* validIdempotencyKey(key)
    const headers = options?.simulate === undefined ? {} : { "kassa-simulate": options.simulate }
    return yield* send(
      client.payments.create({
        headers: { "idempotency-key": idempotencyKey, ...headers },
        payload,
        responseMode: "response-only"
      }),
      decoders.create,
      options
    )
  })

  const get = Effect.fn("KassaClient.payments.get")(function* (id: string, options?: RequestOptions) {
    const paymentId = yield* validPaymentId(id)
    return yield* send(
      client.payments.retrieve({ params: { id: paymentId }, responseMode: "response-only" }),
      decoders.retrieve,
      options
    )
  })

  const listPage = Effect.fn("KassaClient.payments.listPage")(function* (
    params: ListPaymentsParams = {},
    options?: RequestOptions
  ) {
    const query = yield* validListQuery(params)
    return yield* send(client.payments.list({ query, responseMode: "response-only" }), decoders.list, options)
  })

  const list = (params: ListPaymentsParams = {}, options?: RequestOptions) =>
    Stream.paginate(params.starting_after, (cursor: string | undefined) =>
      Effect.map(listPage({ ...params, starting_after: cursor }, options), (page) => {
        const last = page.data.at(-1)
        const next = page.has_more && last !== undefined ? Option.some(last.id) : Option.none()
        return [page.data, next] as const
      })
    )

  const cancel = Effect.fn("KassaClient.payments.cancel")(function* (id: string, options?: RequestOptions) {
    const paymentId = yield* validPaymentId(id)
    return yield* send(
      client.payments.cancel({ params: { id: paymentId }, payload: {}, responseMode: "response-only" }),
      decoders.cancel,
      options
    )
  })

  const refund = Effect.fn("KassaClient.payments.refund")(function* (
    id: string,
    params: RefundParams,
    key: string,
    options: IdempotentRequestOptions | undefined
  ) {
    const paymentId = yield* validPaymentId(id)
    const payload = yield* validBody(PaymentRequests.RefundBody, params)
    const idempotencyKey = yield* validIdempotencyKey(key)
    return yield* send(
      client.payments.refund({
        params: { id: paymentId },
        headers: { "idempotency-key": idempotencyKey },
        payload,
        responseMode: "response-only"
      }),
      decoders.refund,
      options
    )
  })

  const simulate = Effect.fn("KassaClient.test.simulate")(function* (
    id: string,
    params: SimulateParams,
    options?: RequestOptions
  ) {
    const paymentId = yield* validPaymentId(id)
    const payload = yield* validBody(PaymentRequests.SimulateBody, params)
    return yield* send(
      client.test.simulate({ params: { id: paymentId }, payload, responseMode: "response-only" }),
      decoders.simulate,
      options
    )
  })

  return KassaClient.of({
    payments: {
      // The key is chosen when the method is called, not when the effect runs, so that retrying the returned
      // effect (`Effect.retry`) reuses it and cannot create a second payment or refund.
      create: (params, options) => create(params, options?.idempotencyKey ?? newIdempotencyKey(), options),
      get,
      list,
      listPage,
      cancel,
      refund: (id, params = {}, options) => refund(id, params, options?.idempotencyKey ?? newIdempotencyKey(), options)
    },
    events: makeEvents(client.events, send),
    test: { simulate }
  })
})

/** The `fetch`-based `HttpClient`, with the caller's `fetch` when given. */
export const fetchHttpClient = (options: Pick<KassaClientOptions, "fetch">) =>
  options.fetch === undefined
    ? FetchHttpClient.layer
    : FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.Fetch, options.fetch)))

/** The Kassa merchant API as an Effect service. */
export class KassaClient extends Context.Service<KassaClient, KassaClientService>()("@kassa/client/KassaClient") {
  /** Builds the service over the `HttpClient` in context (such as `NodeHttpClient`). */
  static readonly make = make

  /** A client that sends requests with `fetch` (`options.fetch` or the global one). */
  static readonly layer = (options: KassaClientOptions): Layer.Layer<KassaClient> =>
    Layer.effect(KassaClient, make(options)).pipe(Layer.provide(fetchHttpClient(options)))
}
