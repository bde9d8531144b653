/**
 * Shared by MerchantApiErrors.test.ts and MerchantApiPayments.test.ts: a sample of every API error, a payment on the
 * wire, and the merchant API served in process (the real HttpApi pipeline behind a fetch-style handler, with stand-in
 * handlers that echo what they received or fail with the error a request names) plus the typed client talking to it.
 */
import { ByteSize, Context, Effect, Layer, Redacted, Schema } from "effect"
import {
  FetchHttpClient,
  HttpClient,
  HttpClientRequest,
  HttpIncomingMessage,
  HttpRouter,
  HttpServer,
  type HttpServerRequest
} from "effect/http"
import { HttpApiBuilder, HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { Authentication, CurrentApplication } from "../../src/api/Authentication.ts"
import * as InvalidRequest from "../../src/api/InvalidRequest.ts"
import { MerchantApi } from "../../src/api/MerchantApi.ts"
import { ApiKeyId, ApplicationId, PaymentId } from "../../src/domain/Ids.ts"
import { Payment } from "../../src/domain/Payment.ts"
import * as ApiError from "../../src/errors/ApiError.ts"

type Tag = ApiError.ApiErrorTag
type ErrorOf<T extends Tag> = Extract<ApiError.ApiError, { readonly _tag: T }>

// --- samples ------------------------------------------------------------------------------------------------------

/** At least one instance of every error; the record type makes a missing class a compile error. */
export const samplesByTag: { readonly [T in Tag]: ReadonlyArray<ErrorOf<T>> } = {
  Unauthenticated: [new ApiError.Unauthenticated({ message: "Send Authorization: Bearer <API key>." })],
  InvalidApiKey: [new ApiError.InvalidApiKey({ message: "Unknown API key." })],
  ApplicationDisabled: [new ApiError.ApplicationDisabled({ message: "Disabled." })],
  ApplicationPendingReview: [new ApiError.ApplicationPendingReview({ message: "Pending review." })],
  ApplicationSuspended: [new ApiError.ApplicationSuspended({ message: "Suspended." })],
  IpNotAllowed: [new ApiError.IpNotAllowed({ message: "203.0.113.9 is not allowed." })],
  NotFound: [new ApiError.NotFound({ message: "No such payment." })],
  OrderReferenceAlreadyPaid: [
    new ApiError.OrderReferenceAlreadyPaid({
      message: "order-1 is taken.",
      payment_id: "5d1c7a2e-0c1b-4f4e-9a57-2b1d3c4e5f60"
    })
  ],
  IdempotencyKeyReused: [new ApiError.IdempotencyKeyReused({ message: "Different body." })],
  IdempotencyRequestInProgress: [new ApiError.IdempotencyRequestInProgress({ message: "Still running." })],
  PaymentNotCancellable: [new ApiError.PaymentNotCancellable({ message: "Paid.", status: "paid" })],
  PaymentNotRefundable: [new ApiError.PaymentNotRefundable({ message: "Pending.", status: "pending" })],
  PaymentNotPending: [new ApiError.PaymentNotPending({ message: "Expired.", status: "expired" })],
  PaymentBusy: [new ApiError.PaymentBusy({ message: "Busy." })],
  ValidationFailed: [
    new ApiError.ValidationFailed({
      message: "Invalid fields: amount, customer.email",
      fields: { amount: ["is required"], "customer.email": ["must be an e-mail address"] }
    })
  ],
  MethodRequired: [new ApiError.MethodRequired({ message: "Choose a method." })],
  MethodNotEnabled: [new ApiError.MethodNotEnabled({ message: "ideal is not enabled." })],
  AmountBelowMinimum: [new ApiError.AmountBelowMinimum({ message: "Too small.", min_amount: 100 })],
  AmountAboveMaximum: [new ApiError.AmountAboveMaximum({ message: "Too large.", max_amount: 10_000_000 })],
  ReturnUrlNotAllowed: [new ApiError.ReturnUrlNotAllowed({ message: "Other host." })],
  RefundAmountExceedsRefundable: [
    new ApiError.RefundAmountExceedsRefundable({ message: "Too much.", refundable_amount: 2500 })
  ],
  RefundsProcessedManually: [
    new ApiError.RefundsProcessedManually({ message: "Use the dashboard.", docs_url: "http://kassa.test/docs/refunds" })
  ],
  RateLimited: [new ApiError.RateLimited({ message: "Slow down.", retryAfterSeconds: 17 })],
  ProviderError: [
    new ApiError.ProviderError({ message: "Refused.", payment_id: "6e2d8b3f-1d2c-4a5f-8b68-3c2e4d5f6a71" }),
    new ApiError.ProviderError({ message: "No answer." })
  ],
  ServerError: [new ApiError.ServerError({ message: "Something broke." })],
  HttpError: [
    new ApiError.HttpError({ message: "Not JSON.", httpStatus: 400 }),
    new ApiError.HttpError({ message: "Wrong method.", httpStatus: 405 }),
    new ApiError.HttpError({ message: "Too large.", httpStatus: 413 }),
    new ApiError.HttpError({ message: "Not JSON content.", httpStatus: 415 })
  ]
}

export const samples: ReadonlyArray<ApiError.ApiError> = Object.values(samplesByTag).flat()

// --- the payment on the wire --------------------------------------------------------------------------------------

export const paymentWire: typeof Payment.Encoded = {
  id: "0b7e4a4e-6c1f-4a57-9d59-1f2c3a4b5c6d",
  status: "partially_refunded",
  mode: "test",
  amount: 10_000,
  refunded_amount: 2500,
  currency: "EUR",
  method: "card",
  order_reference: "order-1",
  description: "Two tickets",
  customer: { name: "Ada Lovelace", email: "ada@example.com", phone: null },
  payer: { name: "Ada Lovelace", email: null, phone: null, ip: "203.0.113.7", user_agent: "Mozilla/5.0" },
  locale: "nl-NL",
  return_url: "https://shop.example/return",
  metadata: { cart: "42", gift: true, seats: 2, note: null },
  checkout_url: "http://localhost:4000/checkout/0b7e4a4e-6c1f-4a57-9d59-1f2c3a4b5c6d",
  expires_at: "2026-11-22T11:15:30.123Z",
  paid_at: "2026-11-22T10:16:00.000Z",
  created_at: "2026-11-22T10:15:30.123Z",
  refunds: [
    {
      id: "9f8e7d6c-5b4a-4321-8fed-cba987654321",
      amount: 2500,
      status: "succeeded",
      reason: "One ticket returned",
      created_at: "2026-11-22T10:20:00.000Z",
      confirmed_at: "2026-11-22T10:20:00.000Z"
    }
  ]
}

export const samplePayment = Schema.decodeUnknownSync(Payment)(paymentWire)

// --- in process: the real HttpApi pipeline behind a fetch-style handler ------------------------------------------

const goodKey = "pk_test_0123456789abcdefghijklmnopqrstuv"
export const application = {
  applicationId: ApplicationId.make("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"),
  mode: "test",
  keyId: ApiKeyId.make("b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e")
} as const

// A stand-in for the server's key lookup: just enough to exercise the middleware contract.
const AuthenticationTest = Layer.succeed(Authentication, {
  bearer: (httpEffect, { credential }) => {
    const key = Redacted.value(credential)
    if (key === "") return Effect.fail(new ApiError.Unauthenticated({ message: "Send a bearer API key." }))
    if (key !== goodKey) return Effect.fail(new ApiError.InvalidApiKey({ message: "Unknown API key." }))
    return Effect.provideService(httpEffect, CurrentApplication, application)
  }
})

// Each test request may name the error its handler fails with: `x-test-error: <index into samples>`.
const testErrorHeader = "x-test-error"

export const middlewareTags = [
  "Unauthenticated",
  "InvalidApiKey",
  "ApplicationDisabled",
  "ApplicationPendingReview",
  "ApplicationSuspended",
  "IpNotAllowed",
  "RateLimited",
  "ValidationFailed",
  "NotFound",
  "HttpError"
] as const satisfies ReadonlyArray<Tag>

// The errors each handler may fail with besides the middleware's, as the endpoints declare them. A tag an endpoint
// does not declare is a type error in the handlers below.
export const endpointTags = {
  create: [
    "ValidationFailed",
    "MethodRequired",
    "MethodNotEnabled",
    "AmountBelowMinimum",
    "AmountAboveMaximum",
    "ReturnUrlNotAllowed",
    "OrderReferenceAlreadyPaid",
    "IdempotencyKeyReused",
    "IdempotencyRequestInProgress",
    "ProviderError",
    "ServerError"
  ],
  retrieve: ["NotFound", "ServerError"],
  list: ["ValidationFailed", "ServerError"],
  cancel: ["NotFound", "PaymentNotCancellable", "PaymentBusy", "ServerError"],
  refund: [
    "NotFound",
    "RefundsProcessedManually",
    "PaymentNotRefundable",
    "RefundAmountExceedsRefundable",
    "PaymentBusy",
    "IdempotencyKeyReused",
    "IdempotencyRequestInProgress",
    "ValidationFailed",
    "ServerError"
  ],
  simulate: ["NotFound", "PaymentNotPending", "PaymentBusy", "ValidationFailed", "ServerError"]
} as const satisfies Record<string, ReadonlyArray<Tag>>

export type Endpoint = keyof typeof endpointTags

export const isOneOf = <T extends Tag>(error: ApiError.ApiError, tags: ReadonlyArray<T>): error is ErrorOf<T> =>
  tags.some((tag) => tag === error._tag)

/** Fails with the error the request names, when the endpoint (or its middleware) may answer with it. */
const planned = <T extends Tag>(
  request: HttpServerRequest.HttpServerRequest,
  tags: ReadonlyArray<T>
): Effect.Effect<void, ErrorOf<T | (typeof middlewareTags)[number]>> => {
  const index = request.headers[testErrorHeader]
  const error = index === undefined ? undefined : samples[Number(index)]
  if (error === undefined) return Effect.void
  return isOneOf(error, [...tags, ...middlewareTags]) ? Effect.fail(error) : Effect.die(`undeclared ${error._tag}`)
}

// Echoes what the handler received in `order_reference`, so tests can see the decoded request.
const echo = (received: unknown) => ({ ...samplePayment, order_reference: JSON.stringify(received) })

const PaymentsHandlers = HttpApiBuilder.group(MerchantApi, "payments", (handlers) =>
  Effect.succeed(
    handlers
      .handle("create", ({ request, payload, headers }) =>
        planned(request, endpointTags.create).pipe(Effect.as(echo({ payload, headers })))
      )
      .handle("retrieve", ({ request, params }) =>
        planned(request, endpointTags.retrieve).pipe(
          Effect.andThen(CurrentApplication),
          Effect.map(({ mode }) => ({ ...samplePayment, id: params.id, mode }))
        )
      )
      .handle("list", ({ request, query }) =>
        planned(request, endpointTags.list).pipe(Effect.as({ data: [echo(query)], has_more: false }))
      )
      .handle("cancel", ({ request, payload }) => planned(request, endpointTags.cancel).pipe(Effect.as(echo(payload))))
      .handle("refund", ({ request, payload, headers }) =>
        planned(request, endpointTags.refund).pipe(Effect.as(echo({ payload, headers })))
      )
  )
)

// Events (decisions §12): their own tests are test/EventsApi.test.ts; here only what the app needs to be complete.
const EventsHandlers = HttpApiBuilder.group(MerchantApi, "events", (handlers) =>
  Effect.succeed(
    handlers
      .handle("list", ({ request }) =>
        planned(request, ["ValidationFailed", "ServerError"]).pipe(Effect.as({ data: [], has_more: false }))
      )
      .handle("retrieve", ({ request }) =>
        planned(request, ["NotFound", "ServerError"]).pipe(
          Effect.andThen(Effect.fail(new ApiError.NotFound({ message: "No event with this id." })))
        )
      )
  )
)

const TestHandlers = HttpApiBuilder.group(MerchantApi, "test", (handlers) =>
  Effect.succeed(
    handlers.handle("simulate", ({ request, payload }) =>
      planned(request, endpointTags.simulate).pipe(Effect.as(echo(payload)))
    )
  )
)

const HealthHandlers = HttpApiBuilder.group(MerchantApi, "health", (handlers) =>
  Effect.succeed(handlers.handle("health", () => Effect.succeed({ status: "ok" as const })))
)

export const maxBodySize = 1024 * 1024

const App = HttpApiBuilder.layer(MerchantApi).pipe(
  Layer.provide([PaymentsHandlers, EventsHandlers, TestHandlers, HealthHandlers]),
  Layer.provide([AuthenticationTest, InvalidRequest.layer]),
  Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBodySize))),
  Layer.provide(HttpServer.layerServices)
)

/** The app as a fetch-style handler, with no socket. */
export class WebHandler extends Context.Service<WebHandler, (request: Request) => Promise<Response>>()(
  "test/WebHandler"
) {
  static readonly layer = Layer.effect(
    WebHandler,
    Effect.acquireRelease(
      Effect.sync(() => HttpRouter.toWebHandler(App, { disableLogger: true })),
      ({ dispose }) => Effect.promise(dispose)
    ).pipe(
      Effect.map(
        ({ handler }) =>
          (request: Request) =>
            handler(request)
      )
    )
  )
}

export const base = "http://kassa.test"
export const paymentId = PaymentId.make("0b7e4a4e-6c1f-4a57-9d59-1f2c3a4b5c6d")

export interface WireRequest {
  readonly method: string
  readonly path: string
  readonly body?: string
  readonly headers?: Record<string, string>
}

interface WireResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

export const send = Effect.fnUntraced(function* (request: WireRequest) {
  const handler = yield* WebHandler
  const response = yield* Effect.promise(() =>
    handler(
      new Request(`${base}${request.path}`, {
        method: request.method,
        headers: { authorization: `Bearer ${goodKey}`, ...request.headers },
        ...(request.body === undefined ? {} : { body: request.body })
      })
    )
  )
  const text = yield* Effect.promise(() => response.text())
  return { status: response.status, headers: response.headers, text } satisfies WireResponse
})

export const json = (response: WireResponse): unknown => JSON.parse(response.text)
export const jsonBody = { "content-type": "application/json" }

// A request each endpoint accepts, so that only the planned error decides the answer.
export const validRequests: Record<Endpoint, WireRequest> = {
  create: {
    method: "POST",
    path: "/api/v1/payments",
    body: `{"amount":1000,"order_reference":"order-1"}`,
    headers: jsonBody
  },
  retrieve: { method: "GET", path: `/api/v1/payments/${paymentId}` },
  list: { method: "GET", path: "/api/v1/payments" },
  cancel: { method: "POST", path: `/api/v1/payments/${paymentId}/cancel` },
  refund: { method: "POST", path: `/api/v1/payments/${paymentId}/refunds`, body: "{}", headers: jsonBody },
  simulate: {
    method: "POST",
    path: `/api/v1/test/payments/${paymentId}/simulate`,
    body: `{"outcome":"paid"}`,
    headers: jsonBody
  }
}

export const withError = (request: WireRequest, error: ApiError.ApiError): WireRequest => ({
  ...request,
  headers: { ...request.headers, [testErrorHeader]: String(samples.indexOf(error)) }
})

const ClientAuthentication = HttpApiMiddleware.layerClient(Authentication, ({ next, request }) =>
  next(HttpClientRequest.bearerToken(request, goodKey))
)

/** The typed client, talking to the same handler; `plannedError` is sent as the test header. */
export const makeClient = (plannedError?: ApiError.ApiError) =>
  Effect.gen(function* () {
    const handler = yield* WebHandler
    return yield* HttpApiClient.make(MerchantApi, {
      baseUrl: base,
      transformClient: (client) =>
        plannedError === undefined
          ? client
          : HttpClient.mapRequest(
              client,
              HttpClientRequest.setHeader(testErrorHeader, String(samples.indexOf(plannedError)))
            )
    }).pipe(
      Effect.provide(FetchHttpClient.layer),
      Effect.provideService(FetchHttpClient.Fetch, (input, init) => handler(new Request(input, init))),
      Effect.provide(ClientAuthentication)
    )
  })
