/**
 * The HTTP form of every error in the catalogue. Each schema's type side is the `ApiError` class (what handlers fail
 * with and what the typed client gives back) and its encoded side is the wire object
 * `{"error":{"code":<literal>,"message":string,…added fields}}`, answered with the catalogue's status. Endpoints list
 * these schemas, never the bare classes, so the server, the typed client and `/openapi.json` all agree with
 * `ApiError.toWire` (the tests check every class against it).
 *
 * `RateLimited` also answers with `Retry-After: <retryAfterSeconds>` (decisions §5); `retryAfterSeconds` is not in the
 * body.
 *
 * `HttpError` has one schema per status it is used with (400, 405, 413, 415): its status is data, and a schema is
 * chosen by refining on `httpStatus`, so encoding an `HttpError` picks the schema of its own status.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"
import * as ApiError from "../errors/ApiError.ts"

type Tag = ApiError.ApiErrorTag

// The error classes hold plain data: every field is a codec that needs no services.
type ErrorClass<T extends Tag> = Schema.Top & {
  readonly fields: { readonly _tag: Schema.tag<T> } & { readonly [field: string]: Schema.Codec<unknown, unknown> }
}

/**
 * The wire object of one code: `code` is a literal, `message` and the added fields come from the class. Named
 * `<Tag>Error` (`ServerError`, not `ServerErrorError`) in the OpenAPI components.
 */
const wireOf = <const C extends ApiError.ErrorCode, F extends Schema.Struct.Fields>(
  tag: Tag,
  code: C,
  added: F,
  description: string
) =>
  Schema.Struct({ error: Schema.Struct({ code: Schema.Literal(code), ...added }) }).annotate({
    identifier: tag.endsWith("Error") ? tag : `${tag}Error`,
    description
  })

// OpenAPI describes a response by its type side; saying the code there lists the codes of each status.
const responseDescription = (code: ApiError.ErrorCode, description: string) => ({
  description: `\`${code}\`: ${description}`
})

/**
 * The envelope schema of an error whose wire object is its fields minus `_tag`, plus `code` (every class but
 * `RateLimited` and `HttpError`, whose internal fields steer the HTTP answer instead).
 *
 * The reshaping is structural (rename `_tag` to `code`, nest under `error`). TypeScript cannot follow rest and spread
 * through generic field types, hence the two casts; "envelope equals toWire" in the tests covers every class.
 */
const envelope = <const T extends Exclude<Tag, "HttpError" | "RateLimited">, S extends ErrorClass<T>>(
  tag: T,
  errorClass: S,
  description: string
) => {
  const code: (typeof ApiError.catalogue)[T]["code"] = ApiError.catalogue[tag].code
  const status = ApiError.catalogue[tag].status
  const { _tag: _, ...added } = errorClass.fields
  const Wire = wireOf(tag, code, added, description)
  type Wire = typeof Wire.Type
  return Wire.pipe(
    Schema.decodeTo(
      errorClass,
      SchemaTransformation.transform<S["Encoded"], Wire>({
        decode: ({ error: { code: _, ...fields } }) => ({ ...fields, _tag: tag }) as S["Encoded"],
        encode: (encoded) => {
          const { _tag: _, ...fields } = encoded as Readonly<Record<string, unknown>>
          return { error: { ...fields, code } } as Wire
        }
      })
    ),
    HttpApiSchema.status(status)
  ).annotate(responseDescription(code, description))
}

// --- 401 / 403: authentication (decisions §5 check order) ---------------------------------------------------------

export const Unauthenticated = envelope(
  "Unauthenticated",
  ApiError.Unauthenticated,
  "No `Authorization: Bearer` header, or an empty token."
)
export const InvalidApiKey = envelope("InvalidApiKey", ApiError.InvalidApiKey, "Key unknown, revoked or rolled.")
export const ApplicationDisabled = envelope(
  "ApplicationDisabled",
  ApiError.ApplicationDisabled,
  "The application is switched off."
)
export const ApplicationPendingReview = envelope(
  "ApplicationPendingReview",
  ApiError.ApplicationPendingReview,
  "The application is not yet activated."
)
export const ApplicationSuspended = envelope(
  "ApplicationSuspended",
  ApiError.ApplicationSuspended,
  "The application is suspended."
)
export const IpNotAllowed = envelope(
  "IpNotAllowed",
  ApiError.IpNotAllowed,
  "The request came from an address outside the application's IP allow-list."
)

// --- 404 / 409 ----------------------------------------------------------------------------------------------------

export const NotFound = envelope(
  "NotFound",
  ApiError.NotFound,
  "No payment with this id for this application in this mode, or an unknown path."
)
export const OrderReferenceAlreadyPaid = envelope(
  "OrderReferenceAlreadyPaid",
  ApiError.OrderReferenceAlreadyPaid,
  "The `order_reference` already has a pending, paid or refunded payment; `payment_id` names it."
)
export const IdempotencyKeyReused = envelope(
  "IdempotencyKeyReused",
  ApiError.IdempotencyKeyReused,
  "The `Idempotency-Key` was used before with a different body or on another endpoint."
)
export const PaymentNotCancellable = envelope(
  "PaymentNotCancellable",
  ApiError.PaymentNotCancellable,
  "Only a pending payment can be cancelled; `status` is the payment's current status."
)
export const PaymentNotRefundable = envelope(
  "PaymentNotRefundable",
  ApiError.PaymentNotRefundable,
  "Only a paid or partially refunded payment can be refunded; `status` is the payment's current status."
)
export const PaymentNotPending = envelope(
  "PaymentNotPending",
  ApiError.PaymentNotPending,
  "Only a pending payment can be simulated; `status` is the payment's current status."
)
export const PaymentBusy = envelope(
  "PaymentBusy",
  ApiError.PaymentBusy,
  "The payment is being updated at this moment; retry after a few seconds."
)

/**
 * 409 `idempotency_request_in_progress`. Decisions §4 also wants `Retry-After: 1`, but HttpApi refuses a response
 * with headers next to other responses of the same status (every 409 here), so the server adds that header.
 */
export const IdempotencyRequestInProgress = envelope(
  "IdempotencyRequestInProgress",
  ApiError.IdempotencyRequestInProgress,
  "The first request with this `Idempotency-Key` is still running; retry after `Retry-After` (1) seconds."
)

// --- 422 ----------------------------------------------------------------------------------------------------------

export const ValidationFailed = envelope(
  "ValidationFailed",
  ApiError.ValidationFailed,
  "One or more fields are invalid; `fields` maps each invalid field to its messages, all reported at once."
)
export const MethodRequired = envelope(
  "MethodRequired",
  ApiError.MethodRequired,
  "The application offers several methods and `method` was not sent."
)
export const MethodNotEnabled = envelope(
  "MethodNotEnabled",
  ApiError.MethodNotEnabled,
  "The method is not enabled for the application, or none is."
)
export const AmountBelowMinimum = envelope(
  "AmountBelowMinimum",
  ApiError.AmountBelowMinimum,
  "`amount` is below the application's minimum, given as `min_amount`."
)
export const AmountAboveMaximum = envelope(
  "AmountAboveMaximum",
  ApiError.AmountAboveMaximum,
  "`amount` is above the application's maximum, given as `max_amount`."
)
export const ReturnUrlNotAllowed = envelope(
  "ReturnUrlNotAllowed",
  ApiError.ReturnUrlNotAllowed,
  "The host of `return_url` differs from the application's return-URL host."
)
export const RefundAmountExceedsRefundable = envelope(
  "RefundAmountExceedsRefundable",
  ApiError.RefundAmountExceedsRefundable,
  "The refund is larger than what remains refundable, given as `refundable_amount`."
)
export const RefundsProcessedManually = envelope(
  "RefundsProcessedManually",
  ApiError.RefundsProcessedManually,
  "A live key asked for a refund; live refunds are requested from the dashboard (see `docs_url`)."
)

// --- 429 ----------------------------------------------------------------------------------------------------------

const rateLimitedDescription = "More requests in a minute than this key may make; retry after `Retry-After` seconds."

/** 429 with `Retry-After` in whole seconds; `retryAfterSeconds` travels in the header, not in the body. */
export const RateLimited = ApiError.RateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders(
    {
      body: wireOf(
        "RateLimited",
        ApiError.catalogue.RateLimited.code,
        { message: Schema.String },
        rateLimitedDescription
      ).pipe(HttpApiSchema.status(ApiError.catalogue.RateLimited.status)),
      headers: { "retry-after": Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)) }
    },
    {
      decode: ({ body, headers }) =>
        new ApiError.RateLimited({ message: body.error.message, retryAfterSeconds: headers["retry-after"] }),
      encode: (error) => ({
        body: { error: { code: ApiError.catalogue.RateLimited.code, message: error.message } },
        headers: { "retry-after": error.retryAfterSeconds }
      })
    }
  )
).annotate(responseDescription(ApiError.catalogue.RateLimited.code, rateLimitedDescription))

// --- 5xx ----------------------------------------------------------------------------------------------------------

export const ProviderError = envelope(
  "ProviderError",
  ApiError.ProviderError,
  "The provider refused or did not answer. On create the payment now exists as `failed`, named by `payment_id`."
)
export const ServerError = envelope("ServerError", ApiError.ServerError, "A failure on the service side.")

// --- http_error ---------------------------------------------------------------------------------------------------

/** Statuses answered with `http_error` (decisions §2, §5). */
export type HttpErrorStatus = 400 | 405 | 413 | 415

// One wire schema for every status, so OpenAPI shows one `HttpError` component.
const HttpErrorWire = wireOf(
  "HttpError",
  ApiError.catalogue.HttpError.code,
  { message: Schema.String },
  "Any other HTTP error: 400 body is not JSON, 405 wrong method, 413 body too large, 415 body not sent as JSON."
)

const httpError = (status: HttpErrorStatus, description: string) =>
  HttpErrorWire.pipe(
    Schema.decodeTo(
      // Only an `HttpError` of this status encodes here, so a union of these picks the one matching `httpStatus`.
      ApiError.HttpError.check(
        Schema.makeFilter((error) => error.httpStatus === status, { expected: `an HttpError with status ${status}` })
      ),
      SchemaTransformation.transform<typeof ApiError.HttpError.Encoded, typeof HttpErrorWire.Type>({
        decode: ({ error }) => ({ _tag: "HttpError", message: error.message, httpStatus: status }),
        encode: (error) => ({ error: { code: ApiError.catalogue.HttpError.code, message: error.message } })
      })
    ),
    HttpApiSchema.status(status)
  ).annotate(responseDescription(ApiError.catalogue.HttpError.code, description))

export const BadRequest = httpError(400, "The request body is not valid JSON.")
export const MethodNotAllowed = httpError(405, "A known path with the wrong method; `Allow` lists the methods.")
export const PayloadTooLarge = httpError(413, "The request body is larger than 1 MiB.")
export const UnsupportedMediaType = httpError(415, "A request body was sent with a `Content-Type` other than JSON.")

/** The `HttpError` schema of each status. */
export const httpErrors = {
  400: BadRequest,
  405: MethodNotAllowed,
  413: PayloadTooLarge,
  415: UnsupportedMediaType
} as const satisfies Record<HttpErrorStatus, Schema.Top>

/** The envelope schema of every error except `HttpError` (see {@link httpErrors}), by tag. */
export const byTag = {
  Unauthenticated,
  InvalidApiKey,
  ApplicationDisabled,
  ApplicationPendingReview,
  ApplicationSuspended,
  IpNotAllowed,
  NotFound,
  OrderReferenceAlreadyPaid,
  IdempotencyKeyReused,
  IdempotencyRequestInProgress,
  PaymentNotCancellable,
  PaymentNotRefundable,
  PaymentNotPending,
  PaymentBusy,
  ValidationFailed,
  MethodRequired,
  MethodNotEnabled,
  AmountBelowMinimum,
  AmountAboveMaximum,
  ReturnUrlNotAllowed,
  RefundAmountExceedsRefundable,
  RefundsProcessedManually,
  RateLimited,
  ProviderError,
  ServerError
} as const satisfies Record<Exclude<Tag, "HttpError">, Schema.Top>
