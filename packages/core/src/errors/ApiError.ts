/**
 * The error catalogue: every row of the specification's Errors table plus `payment_not_pending`
 * (decisions §1). Each error is a `Schema.TaggedError` carrying exactly the fields the wire object adds;
 * {@link catalogue} gives each its one code, status, retry rule and description, and {@link toWire} is the one
 * mapping to `{"error":{"code","message",…}}`. Everything else that lists codes (the envelopes and `/openapi.json`,
 * the SDK's classes) is derived from the catalogue.
 */
import { Schema } from "effect"
import { PaymentStatus } from "../domain/Payment.ts"

const message = { message: Schema.String }

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", message) {}

export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", message) {}

export class ApplicationDisabled extends Schema.TaggedError<ApplicationDisabled>()("ApplicationDisabled", message) {}

export class ApplicationPendingReview extends Schema.TaggedError<ApplicationPendingReview>()(
  "ApplicationPendingReview",
  message
) {}

export class ApplicationSuspended extends Schema.TaggedError<ApplicationSuspended>()("ApplicationSuspended", message) {}

export class IpNotAllowed extends Schema.TaggedError<IpNotAllowed>()("IpNotAllowed", message) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", message) {}

export class OrderReferenceAlreadyPaid extends Schema.TaggedError<OrderReferenceAlreadyPaid>()(
  "OrderReferenceAlreadyPaid",
  { ...message, payment_id: Schema.String }
) {}

export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", message) {}

export class IdempotencyRequestInProgress extends Schema.TaggedError<IdempotencyRequestInProgress>()(
  "IdempotencyRequestInProgress",
  message
) {}

export class PaymentNotCancellable extends Schema.TaggedError<PaymentNotCancellable>()("PaymentNotCancellable", {
  ...message,
  status: PaymentStatus
}) {}

export class PaymentNotRefundable extends Schema.TaggedError<PaymentNotRefundable>()("PaymentNotRefundable", {
  ...message,
  status: PaymentStatus
}) {}

export class PaymentNotPending extends Schema.TaggedError<PaymentNotPending>()("PaymentNotPending", {
  ...message,
  status: PaymentStatus
}) {}

export class PaymentBusy extends Schema.TaggedError<PaymentBusy>()("PaymentBusy", message) {}

/** Field name → messages; every invalid field is reported at once. */
export const FieldErrors = Schema.Record(Schema.String, Schema.NonEmptyArray(Schema.String))
export type FieldErrors = typeof FieldErrors.Type

export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", {
  ...message,
  fields: FieldErrors
}) {}

export class MethodRequired extends Schema.TaggedError<MethodRequired>()("MethodRequired", message) {}

export class MethodNotEnabled extends Schema.TaggedError<MethodNotEnabled>()("MethodNotEnabled", message) {}

export class AmountBelowMinimum extends Schema.TaggedError<AmountBelowMinimum>()("AmountBelowMinimum", {
  ...message,
  min_amount: Schema.Int
}) {}

export class AmountAboveMaximum extends Schema.TaggedError<AmountAboveMaximum>()("AmountAboveMaximum", {
  ...message,
  max_amount: Schema.Int
}) {}

export class ReturnUrlNotAllowed extends Schema.TaggedError<ReturnUrlNotAllowed>()("ReturnUrlNotAllowed", message) {}

export class RefundAmountExceedsRefundable extends Schema.TaggedError<RefundAmountExceedsRefundable>()(
  "RefundAmountExceedsRefundable",
  { ...message, refundable_amount: Schema.Int }
) {}

export class RefundsProcessedManually extends Schema.TaggedError<RefundsProcessedManually>()(
  "RefundsProcessedManually",
  { ...message, docs_url: Schema.String }
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  // Seconds to wait: sent as `Retry-After`, not in the wire object.
  { ...message, retryAfterSeconds: Schema.Int }
) {}

export class ProviderError extends Schema.TaggedError<ProviderError>()(
  "ProviderError",
  // `payment_id` is present on create: the payment now exists as `failed`.
  { ...message, payment_id: Schema.optionalKey(Schema.String) }
) {}

export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", message) {}

/** Any other HTTP error (400 bad JSON, 405 wrong method, 413 too large, 415 not JSON). */
export class HttpError extends Schema.TaggedError<HttpError>()("HttpError", { ...message, httpStatus: Schema.Int }) {}

// --- the catalogue ------------------------------------------------------------------------------------------------

/**
 * What a client may do about an answer (the specification's retry rules):
 * - `"never"`: the same request gets the same answer until it changes (rule 1), or the answer is final
 *   (`provider_error`: the payment now exists as `failed`; a new attempt needs a new `Idempotency-Key`);
 * - `"wait"`: send the same request again after `Retry-After` seconds, 1 without it (the rule 1 exceptions);
 * - `"backoff"`: send it again after a growing pause, or `Retry-After` when given (rule 2: 5xx).
 */
export type Retry = "never" | "wait" | "backoff"

/** One row of the catalogue: the class of the error, its wire code, its one HTTP status, retry and description. */
export interface Row<T extends string = string> {
  /** The error's class; its fields are the wire object's added fields. */
  readonly error: Schema.Top & { readonly Type: { readonly _tag: T } }
  readonly code: string
  /** The one status the code is answered with (decisions.md, "One status per code"); `http_error` carries its own. */
  readonly status: number
  readonly retry: Retry
  /**
   * Whether an answer with this code is stored under its `Idempotency-Key` and replayed (decisions §4): false for
   * answers that say nothing final about the request (it may succeed when retried) and for those of a layer in front
   * of the endpoint (authentication, rate limit, transport, the idempotency layer's own answers).
   */
  readonly stored: boolean
  /** What the code means, for the OpenAPI document and the SDK's documentation. */
  readonly description: string
}

// Each key must be the tag of its row's class.
const rows = <const C extends { readonly [T in keyof C & string]: Row<T> }>(table: C): C => table

/**
 * The one list of error codes: the server answers with it, `/openapi.json` documents it (`ErrorEnvelope`), and the
 * SDK derives its error classes, its code → class lookup and its retries from it.
 */
export const catalogue = rows({
  // 401 / 403: authentication (decisions §5 check order)
  Unauthenticated: {
    error: Unauthenticated,
    code: "unauthenticated",
    status: 401,
    retry: "never",
    stored: false,
    description: "No `Authorization: Bearer` header, or an empty token."
  },
  InvalidApiKey: {
    error: InvalidApiKey,
    code: "invalid_api_key",
    status: 401,
    retry: "never",
    stored: false,
    description: "Key unknown, revoked or rolled."
  },
  ApplicationDisabled: {
    error: ApplicationDisabled,
    code: "application_disabled",
    status: 403,
    retry: "never",
    stored: false,
    description: "The application is switched off."
  },
  ApplicationPendingReview: {
    error: ApplicationPendingReview,
    code: "application_pending_review",
    status: 403,
    retry: "never",
    stored: false,
    description: "The application is not yet activated."
  },
  ApplicationSuspended: {
    error: ApplicationSuspended,
    code: "application_suspended",
    status: 403,
    retry: "never",
    stored: false,
    description: "The application is suspended."
  },
  IpNotAllowed: {
    error: IpNotAllowed,
    code: "ip_not_allowed",
    status: 403,
    retry: "never",
    stored: false,
    description: "The request came from an address outside the application's IP allow-list."
  },
  // 404 / 409
  NotFound: {
    error: NotFound,
    code: "not_found",
    status: 404,
    retry: "never",
    stored: true,
    description: "No payment with this id for this application in this mode, or an unknown path."
  },
  OrderReferenceAlreadyPaid: {
    error: OrderReferenceAlreadyPaid,
    code: "order_reference_already_paid",
    status: 409,
    retry: "never",
    stored: true,
    description: "The `order_reference` already has a pending, paid or refunded payment; `payment_id` names it."
  },
  IdempotencyKeyReused: {
    error: IdempotencyKeyReused,
    code: "idempotency_key_reused",
    status: 409,
    retry: "never",
    stored: false,
    description: "The `Idempotency-Key` was used before with a different body or on another endpoint."
  },
  // Decisions §4 also wants `Retry-After: 1`, but HttpApi refuses a response with headers next to other responses of
  // the same status (every 409 here), so the server adds that header.
  IdempotencyRequestInProgress: {
    error: IdempotencyRequestInProgress,
    code: "idempotency_request_in_progress",
    status: 409,
    retry: "wait",
    stored: false,
    description:
      "The first request with this `Idempotency-Key` is still running; retry after `Retry-After` (1) seconds."
  },
  PaymentNotCancellable: {
    error: PaymentNotCancellable,
    code: "payment_not_cancellable",
    status: 409,
    retry: "never",
    stored: true,
    description: "Only a pending payment can be cancelled; `status` is the payment's current status."
  },
  PaymentNotRefundable: {
    error: PaymentNotRefundable,
    code: "payment_not_refundable",
    status: 409,
    retry: "never",
    stored: true,
    description: "Only a paid or partially refunded payment can be refunded; `status` is the payment's current status."
  },
  PaymentNotPending: {
    error: PaymentNotPending,
    code: "payment_not_pending",
    status: 409,
    retry: "never",
    stored: true,
    description: "Only a pending payment can be simulated; `status` is the payment's current status."
  },
  PaymentBusy: {
    error: PaymentBusy,
    code: "payment_busy",
    status: 409,
    retry: "wait",
    stored: false,
    description: "The payment is being updated at this moment; retry after a few seconds."
  },
  // 422
  ValidationFailed: {
    error: ValidationFailed,
    code: "validation_failed",
    status: 422,
    retry: "never",
    stored: true,
    description:
      "One or more fields are invalid; `fields` maps each invalid field to its messages, all reported at once."
  },
  MethodRequired: {
    error: MethodRequired,
    code: "method_required",
    status: 422,
    retry: "never",
    stored: true,
    description: "The application offers several methods and `method` was not sent."
  },
  MethodNotEnabled: {
    error: MethodNotEnabled,
    code: "method_not_enabled",
    status: 422,
    retry: "never",
    stored: true,
    description: "The method is not enabled for the application, or none is."
  },
  AmountBelowMinimum: {
    error: AmountBelowMinimum,
    code: "amount_below_minimum",
    status: 422,
    retry: "never",
    stored: true,
    description: "`amount` is below the application's minimum, given as `min_amount`."
  },
  AmountAboveMaximum: {
    error: AmountAboveMaximum,
    code: "amount_above_maximum",
    status: 422,
    retry: "never",
    stored: true,
    description: "`amount` is above the application's maximum, given as `max_amount`."
  },
  ReturnUrlNotAllowed: {
    error: ReturnUrlNotAllowed,
    code: "return_url_not_allowed",
    status: 422,
    retry: "never",
    stored: true,
    description: "The host of `return_url` differs from the application's return-URL host."
  },
  RefundAmountExceedsRefundable: {
    error: RefundAmountExceedsRefundable,
    code: "refund_amount_exceeds_refundable",
    status: 422,
    retry: "never",
    stored: true,
    description: "The refund is larger than what remains refundable, given as `refundable_amount`."
  },
  RefundsProcessedManually: {
    error: RefundsProcessedManually,
    code: "refunds_processed_manually",
    status: 422,
    retry: "never",
    stored: true,
    description: "A live key asked for a refund; live refunds are requested from the dashboard (see `docs_url`)."
  },
  // 429: `Retry-After` in whole seconds (decisions §5)
  RateLimited: {
    error: RateLimited,
    code: "rate_limited",
    status: 429,
    retry: "wait",
    stored: false,
    description: "More requests in a minute than this key may make; retry after `Retry-After` seconds."
  },
  // 5xx
  ProviderError: {
    error: ProviderError,
    code: "provider_error",
    status: 502,
    retry: "never",
    stored: true,
    description:
      "The provider refused or did not answer. On create the payment now exists as `failed`, named by `payment_id`."
  },
  ServerError: {
    error: ServerError,
    code: "server_error",
    status: 500,
    retry: "backoff",
    stored: false,
    description: "A failure on the service side."
  },
  // The specification's "other": the status is the answer's own (`httpStatus`: 400, 405, 413, 415, and Node's own
  // refusals 408 and 431); 400, a body that is not JSON, stands for them here.
  HttpError: {
    error: HttpError,
    code: "http_error",
    status: 400,
    retry: "never",
    stored: false,
    description:
      "Any other HTTP error: 400 body is not JSON, 405 wrong method, 413 body too large, 415 body not sent as JSON."
  }
})

export type ApiErrorTag = keyof typeof catalogue

/** Every error the merchant API can answer with. */
export const ApiError = Schema.Union(
  Object.values(catalogue).map((row) => row.error) as ReadonlyArray<(typeof catalogue)[ApiErrorTag]["error"]>
)
export type ApiError = typeof ApiError.Type

export type ErrorCode = (typeof catalogue)[ApiErrorTag]["code"]

/** The row of each code. */
export const byCode: { readonly [T in ApiErrorTag as (typeof catalogue)[T]["code"]]: (typeof catalogue)[T] } =
  Object.fromEntries(Object.values(catalogue).map((row) => [row.code, row])) as never

/** The wire object of every error. */
export interface WireError {
  readonly error: { readonly code: ErrorCode; readonly message: string } & Readonly<Record<string, unknown>>
}

/** The HTTP status an error is answered with. */
export const statusOf = (error: ApiError): number =>
  error._tag === "HttpError" ? error.httpStatus : catalogue[error._tag].status

// Fields that steer the HTTP answer (status line, `Retry-After`) rather than belong to the wire object.
const internalFields = new Set(["_tag", "message", "httpStatus", "retryAfterSeconds"])
type InternalField = "_tag" | "message" | "httpStatus" | "retryAfterSeconds"

/** The fields the wire object of a code adds to `code` and `message`, with their types. */
export type AddedFields<T extends ApiErrorTag> = Omit<
  Schema.Struct.Type<(typeof catalogue)[T]["error"]["fields"]>,
  InternalField
>

/** The names of the fields the wire object of a code adds to `code` and `message`. */
export const addedFields = (tag: ApiErrorTag): ReadonlyArray<string> =>
  Object.keys(catalogue[tag].error.fields).filter((field) => !internalFields.has(field))

/** The one mapping from an error to its wire object: code, message, and the added fields of its row. */
export const toWire = (error: ApiError): WireError => {
  const encoded: Record<string, unknown> = Schema.encodeSync(ApiError)(error)
  const added = Object.fromEntries(Object.entries(encoded).filter(([key]) => !internalFields.has(key)))
  return { error: { code: catalogue[error._tag].code, message: error.message, ...added } }
}
