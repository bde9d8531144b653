/**
 * The error catalogue: every row of the specification's Errors table plus `payment_not_pending`
 * (decisions §1). Each error is a `Schema.TaggedError` carrying exactly the fields the wire object adds;
 * `code` and `status` come from {@link catalogue}, and {@link toWire} is the one mapping to
 * `{"error":{"code","message",…}}`.
 */
import { Schema } from "effect"
import { PaymentStatus } from "../domain/Payment.ts"

const message = { message: Schema.String }

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", message, {
  httpApiStatus: 401
}) {}

export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", message, {
  httpApiStatus: 401
}) {}

export class ApplicationDisabled extends Schema.TaggedError<ApplicationDisabled>()("ApplicationDisabled", message, {
  httpApiStatus: 403
}) {}

export class ApplicationPendingReview extends Schema.TaggedError<ApplicationPendingReview>()(
  "ApplicationPendingReview",
  message,
  { httpApiStatus: 403 }
) {}

export class ApplicationSuspended extends Schema.TaggedError<ApplicationSuspended>()("ApplicationSuspended", message, {
  httpApiStatus: 403
}) {}

export class IpNotAllowed extends Schema.TaggedError<IpNotAllowed>()("IpNotAllowed", message, {
  httpApiStatus: 403
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", message, { httpApiStatus: 404 }) {}

export class OrderReferenceAlreadyPaid extends Schema.TaggedError<OrderReferenceAlreadyPaid>()(
  "OrderReferenceAlreadyPaid",
  { ...message, payment_id: Schema.String },
  { httpApiStatus: 409 }
) {}

export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", message, {
  httpApiStatus: 409
}) {}

export class IdempotencyRequestInProgress extends Schema.TaggedError<IdempotencyRequestInProgress>()(
  "IdempotencyRequestInProgress",
  message,
  { httpApiStatus: 409 }
) {}

export class PaymentNotCancellable extends Schema.TaggedError<PaymentNotCancellable>()(
  "PaymentNotCancellable",
  { ...message, status: PaymentStatus },
  { httpApiStatus: 409 }
) {}

export class PaymentNotRefundable extends Schema.TaggedError<PaymentNotRefundable>()(
  "PaymentNotRefundable",
  { ...message, status: PaymentStatus },
  { httpApiStatus: 409 }
) {}

export class PaymentNotPending extends Schema.TaggedError<PaymentNotPending>()(
  "PaymentNotPending",
  { ...message, status: PaymentStatus },
  { httpApiStatus: 409 }
) {}

export class PaymentBusy extends Schema.TaggedError<PaymentBusy>()("PaymentBusy", message, { httpApiStatus: 409 }) {}

/** Field name → messages; every invalid field is reported at once. */
export const FieldErrors = Schema.Record(Schema.String, Schema.NonEmptyArray(Schema.String))
export type FieldErrors = typeof FieldErrors.Type

export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()(
  "ValidationFailed",
  { ...message, fields: FieldErrors },
  { httpApiStatus: 422 }
) {}

export class MethodRequired extends Schema.TaggedError<MethodRequired>()("MethodRequired", message, {
  httpApiStatus: 422
}) {}

export class MethodNotEnabled extends Schema.TaggedError<MethodNotEnabled>()("MethodNotEnabled", message, {
  httpApiStatus: 422
}) {}

export class AmountBelowMinimum extends Schema.TaggedError<AmountBelowMinimum>()(
  "AmountBelowMinimum",
  { ...message, min_amount: Schema.Int },
  { httpApiStatus: 422 }
) {}

export class AmountAboveMaximum extends Schema.TaggedError<AmountAboveMaximum>()(
  "AmountAboveMaximum",
  { ...message, max_amount: Schema.Int },
  { httpApiStatus: 422 }
) {}

export class ReturnUrlNotAllowed extends Schema.TaggedError<ReturnUrlNotAllowed>()("ReturnUrlNotAllowed", message, {
  httpApiStatus: 422
}) {}

export class RefundAmountExceedsRefundable extends Schema.TaggedError<RefundAmountExceedsRefundable>()(
  "RefundAmountExceedsRefundable",
  { ...message, refundable_amount: Schema.Int },
  { httpApiStatus: 422 }
) {}

export class RefundsProcessedManually extends Schema.TaggedError<RefundsProcessedManually>()(
  "RefundsProcessedManually",
  { ...message, docs_url: Schema.String },
  { httpApiStatus: 422 }
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  // Seconds to wait: sent as `Retry-After`, not in the wire object.
  { ...message, retryAfterSeconds: Schema.Int },
  { httpApiStatus: 429 }
) {}

export class ProviderError extends Schema.TaggedError<ProviderError>()(
  "ProviderError",
  // `payment_id` is present on create: the payment now exists as `failed`.
  { ...message, payment_id: Schema.optionalKey(Schema.String) },
  { httpApiStatus: 502 }
) {}

export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", message, { httpApiStatus: 500 }) {}

/** Any other HTTP error (400 bad JSON, 405 wrong method, 413 too large, 415 not JSON). */
export class HttpError extends Schema.TaggedError<HttpError>()("HttpError", { ...message, httpStatus: Schema.Int }) {}

/** Every error the merchant API can answer with. */
export const ApiError = Schema.Union([
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
  ServerError,
  HttpError
])
export type ApiError = typeof ApiError.Type
export type ApiErrorTag = ApiError["_tag"]

/** Wire code and HTTP status of each error; `HttpError` carries its own status. */
export const catalogue = {
  Unauthenticated: { code: "unauthenticated", status: 401 },
  InvalidApiKey: { code: "invalid_api_key", status: 401 },
  ApplicationDisabled: { code: "application_disabled", status: 403 },
  ApplicationPendingReview: { code: "application_pending_review", status: 403 },
  ApplicationSuspended: { code: "application_suspended", status: 403 },
  IpNotAllowed: { code: "ip_not_allowed", status: 403 },
  NotFound: { code: "not_found", status: 404 },
  OrderReferenceAlreadyPaid: { code: "order_reference_already_paid", status: 409 },
  IdempotencyKeyReused: { code: "idempotency_key_reused", status: 409 },
  IdempotencyRequestInProgress: { code: "idempotency_request_in_progress", status: 409 },
  PaymentNotCancellable: { code: "payment_not_cancellable", status: 409 },
  PaymentNotRefundable: { code: "payment_not_refundable", status: 409 },
  PaymentNotPending: { code: "payment_not_pending", status: 409 },
  PaymentBusy: { code: "payment_busy", status: 409 },
  ValidationFailed: { code: "validation_failed", status: 422 },
  MethodRequired: { code: "method_required", status: 422 },
  MethodNotEnabled: { code: "method_not_enabled", status: 422 },
  AmountBelowMinimum: { code: "amount_below_minimum", status: 422 },
  AmountAboveMaximum: { code: "amount_above_maximum", status: 422 },
  ReturnUrlNotAllowed: { code: "return_url_not_allowed", status: 422 },
  RefundAmountExceedsRefundable: { code: "refund_amount_exceeds_refundable", status: 422 },
  RefundsProcessedManually: { code: "refunds_processed_manually", status: 422 },
  RateLimited: { code: "rate_limited", status: 429 },
  ProviderError: { code: "provider_error", status: 502 },
  ServerError: { code: "server_error", status: 500 },
  HttpError: { code: "http_error", status: 400 }
} as const satisfies Record<ApiErrorTag, { readonly code: string; readonly status: number }>

export type ErrorCode = (typeof catalogue)[ApiErrorTag]["code"]

/** The wire object of every error. */
export interface WireError {
  readonly error: { readonly code: ErrorCode; readonly message: string } & Readonly<Record<string, unknown>>
}

/** The HTTP status an error is answered with. */
export const statusOf = (error: ApiError): number =>
  error._tag === "HttpError" ? error.httpStatus : catalogue[error._tag].status

// Fields that steer the HTTP answer (status line, `Retry-After`) rather than belong to the wire object.
const internalFields = new Set(["_tag", "message", "httpStatus", "retryAfterSeconds"])

/** The one mapping from an error to its wire object: code, message, and the added fields of its row. */
export const toWire = (error: ApiError): WireError => {
  const encoded: Record<string, unknown> = Schema.encodeSync(ApiError)(error)
  const added = Object.fromEntries(Object.entries(encoded).filter(([key]) => !internalFields.has(key)))
  return { error: { code: catalogue[error._tag].code, message: error.message, ...added } }
}
