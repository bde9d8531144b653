/**
 * The `payments` group of the merchant API (decisions §1): create, fetch, list, cancel and refund. Each endpoint
 * lists the errors its handler may fail with; `MerchantApi` adds the authentication and request-validation errors
 * that every endpoint can answer with.
 */
import { Effect, Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { PaymentId } from "../domain/Ids.ts"
import { Payment, PaymentStatus } from "../domain/Payment.ts"
import * as Text from "../domain/Text.ts"
import { IdempotencyKey } from "../idempotency/IdempotencyKey.ts"
import { CancelBody, CreatePaymentBody, RefundBody } from "../payments/PaymentRequests.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"

/** Where the merchant API is mounted; `MerchantApi` prefixes every group but the health check with it. */
export const apiPrefix = "/api/v1"

/** The address of a payment, sent as the `Location` of a created payment. */
export const paymentLocation = (id: PaymentId): string => `${apiPrefix}/payments/${id}`

/** `{id}` of the payment paths. A malformed id is answered 404 like an unknown one (see `InvalidRequest`). */
export const PaymentParams = { id: PaymentId.annotate({ description: "The payment's id, a lower-case UUID." }) }

/** The optional `Idempotency-Key` header (decisions §4). HttpApi header keys are lower-case. */
export const IdempotencyKeyHeader = Schema.optionalKey(
  IdempotencyKey.annotate({
    description:
      "1–255 printable ASCII characters. A retry with the same key and body never repeats the work; the same key " +
      "with another body gives 409 `idempotency_key_reused`. Remembered for 24 hours."
  })
)

/** The optional `Kassa-Simulate` header of create: with a test key, `provider_error` makes the provider refuse. */
export const KassaSimulateHeader = Schema.optionalKey(
  Schema.Literal("provider_error").annotate({
    description:
      "Test keys only: `provider_error` behaves as if the provider refused (502 `provider_error`, payment `failed`)."
  })
)

/** 201 with the payment and `Location: /api/v1/payments/{id}`, derived from the payment so no handler can forget it. */
export const PaymentCreated = Payment.pipe(
  HttpApiSchema.encodeToWithHeaders(
    {
      body: Payment.pipe(HttpApiSchema.status(201)),
      headers: { location: Schema.String.annotate({ description: "The path of the new payment." }) }
    },
    {
      decode: ({ body }) => body,
      encode: (payment) => ({ body: payment, headers: { location: paymentLocation(payment.id) } })
    }
  )
)

/** A page of payments, newest first; `has_more` says whether older ones follow `data`'s last entry. */
export const PaymentList = Schema.Struct({
  data: Schema.Array(Payment),
  has_more: Schema.Boolean
}).annotate({ identifier: "PaymentList" })
export type PaymentList = typeof PaymentList.Type

/**
 * The query of `GET /payments`. Values arrive as strings; HttpApi decodes them with these schemas' string forms.
 * (OpenAPI shows a numeric query parameter as its string form without annotations, so the operation's description
 * documents `limit`.)
 */
export const ListPaymentsQuery = {
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }, { message: "must be from 1 to 100" })).pipe(
    Schema.withDecodingDefaultTypeKey(Effect.succeed(10))
  ),
  starting_after: Schema.optionalKey(
    PaymentId.annotate({ description: "Continue after this payment: the last `id` of the previous page." })
  ),
  status: Schema.optionalKey(PaymentStatus.annotate({ description: "Only payments in this status." })),
  order_reference: Schema.optionalKey(
    Schema.String.check(
      // The length check last: OpenAPI reads the description from the last check.
      Text.storable(),
      Schema.isBetweenLength(1, 255, { message: "must be 1 to 255 characters" })
    ).annotate({
      description: "Only payments with this reference."
    })
  )
}

const NoBody = Schema.Null.annotate({ identifier: "NoBody", description: "No body; JSON `null` reads the same." })

/**
 * A body that may be left out: `[schema, absent]`, where `absent` reads an empty body (and JSON `null`) as `empty`.
 * HttpApi hands an empty body to the payload schemas as `null` when one of them is `null` on its encoded side.
 */
const orEmpty = <S extends Schema.Top>(schema: S, empty: S["Type"]) =>
  [
    schema,
    NoBody.pipe(
      Schema.decodeTo(
        Schema.toType(schema),
        SchemaTransformation.transform<S["Type"], null>({ decode: () => empty, encode: () => null })
      )
    )
  ] as const

/** The body may be absent; OpenAPI says so (HttpApi marks every request body required). */
const bodyOptional = OpenApi.annotations({
  transform: (operation) => ({ ...operation, requestBody: { ...operation.requestBody, required: false } })
})

/** Cancel takes no body, or `{}` (decisions §1); any key is refused as unknown. */
export const CancelPayload = orEmpty(CancelBody, {})

/** Refund: `{"amount"?, "reason"?}`; no body refunds the whole refundable amount. */
export const RefundPayload = orEmpty(RefundBody, {})

export class PaymentsApi extends HttpApiGroup.make("payments")
  .add(
    HttpApiEndpoint.post("create", "/payments", {
      headers: { "idempotency-key": IdempotencyKeyHeader, "kassa-simulate": KassaSimulateHeader },
      payload: CreatePaymentBody,
      success: PaymentCreated,
      error: [
        ErrorEnvelope.ValidationFailed,
        ErrorEnvelope.MethodRequired,
        ErrorEnvelope.MethodNotEnabled,
        ErrorEnvelope.AmountBelowMinimum,
        ErrorEnvelope.AmountAboveMaximum,
        ErrorEnvelope.ReturnUrlNotAllowed,
        ErrorEnvelope.OrderReferenceAlreadyPaid,
        ErrorEnvelope.IdempotencyKeyReused,
        ErrorEnvelope.IdempotencyRequestInProgress,
        ErrorEnvelope.ProviderError,
        ErrorEnvelope.ServerError
      ]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Create a payment",
        description:
          "Creates a `pending` payment; send the customer to its `checkout_url`. With a live key the provider is " +
          "asked first: if it refuses, the answer is 502 `provider_error` and the payment exists as `failed`. " +
          "Send an `Idempotency-Key` so that a retry cannot create a second payment."
      })
    ),
    HttpApiEndpoint.get("retrieve", "/payments/:id", {
      params: PaymentParams,
      success: Payment,
      error: [ErrorEnvelope.NotFound, ErrorEnvelope.ServerError]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Fetch a payment",
        description: "The payment as it is now; the same object a webhook sends as `data`."
      })
    ),
    HttpApiEndpoint.get("list", "/payments", {
      query: ListPaymentsQuery,
      success: PaymentList,
      error: [ErrorEnvelope.ValidationFailed, ErrorEnvelope.ServerError]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List payments",
        description:
          "Payments of the key's application and mode, newest first, in pages of `limit` (1–100, default 10). " +
          "For the next page, pass the last `id` as `starting_after`."
      })
    ),
    HttpApiEndpoint.post("cancel", "/payments/:id/cancel", {
      params: PaymentParams,
      payload: CancelPayload,
      success: Payment,
      error: [
        ErrorEnvelope.NotFound,
        ErrorEnvelope.PaymentNotCancellable,
        ErrorEnvelope.PaymentBusy,
        // A live payment is closed at its provider first (decisions §10); no answer leaves it unchanged.
        ErrorEnvelope.ProviderError,
        ErrorEnvelope.ServerError
      ]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Cancel a payment",
          description: "Cancels a `pending` payment; a payment in any other status is not cancellable."
        })
      )
      .annotateMerge(bodyOptional),
    HttpApiEndpoint.post("refund", "/payments/:id/refunds", {
      params: PaymentParams,
      headers: { "idempotency-key": IdempotencyKeyHeader },
      payload: RefundPayload,
      success: Payment.pipe(HttpApiSchema.status(201)),
      error: [
        ErrorEnvelope.NotFound,
        ErrorEnvelope.RefundsProcessedManually,
        ErrorEnvelope.PaymentNotRefundable,
        ErrorEnvelope.RefundAmountExceedsRefundable,
        ErrorEnvelope.PaymentBusy,
        ErrorEnvelope.IdempotencyKeyReused,
        ErrorEnvelope.IdempotencyRequestInProgress,
        ErrorEnvelope.ValidationFailed,
        ErrorEnvelope.ServerError
      ]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Refund a payment",
          description:
            "Refunds a `paid` or `partially_refunded` payment, by default all that is still refundable; the new " +
            "refund is the last entry of `refunds`. Test keys only: a live key gets 422 `refunds_processed_manually`."
        })
      )
      .annotateMerge(bodyOptional)
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Payments",
      description: "Create payments, follow them, cancel and refund them."
    })
  ) {}
