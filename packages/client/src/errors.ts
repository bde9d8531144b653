/**
 * Every error the SDK fails with: one class per error code of the merchant API, plus the failures that have no code
 * on the wire (no connection, no answer in time, an answer that is not Kassa's). All are `Error` subclasses, so
 * `instanceof` works in Promise code, and yieldable Effect errors with a literal `_tag`, so `Effect.catchTag` works in
 * Effect code.
 */
import type { ApiError, Payment } from "@kassa/core"
import { Data } from "effect"

/** The base of every error of this package. Branch on `code` (or the class), never on `message`. */
export abstract class KassaError extends Data.Error<{ readonly message: string; readonly cause?: unknown }> {
  abstract readonly _tag: string
  abstract readonly code: string
}
// `name` is the tag, so stack traces and logs show the class. A getter on the prototype rather than a field keeps
// it out of the instances' own (enumerable, serialised) properties; stacks read it lazily, once `_tag` is set.
Object.defineProperty(KassaError.prototype, "name", {
  configurable: true,
  get(this: KassaError) {
    return this._tag
  }
})

/** What every error answer of the API carries besides its own fields. */
export interface ApiErrorInit {
  readonly message: string
  /** The HTTP status of the answer. */
  readonly status: number
  /** The `Request-Id` of the answer; `undefined` when the SDK refused the request before sending it. */
  readonly requestId: string | undefined
  /** `Retry-After` of the answer, in seconds, when it had one. */
  readonly retryAfter?: number | undefined
}

/** An error answer of the Kassa API: `{"error":{"code","message",…}}`. */
export abstract class KassaApiError extends KassaError {
  abstract override readonly code: ApiError.ErrorCode
  /** The HTTP status of the answer (the status the server gives, for requests refused before sending). */
  readonly status: number
  /** The `Request-Id` of the answer, to quote to the operator; `undefined` when nothing was sent. */
  readonly requestId: string | undefined
  /** Seconds to wait before retrying, from `Retry-After`; set on 429 `rate_limited` and 409 in-progress answers. */
  readonly retryAfter: number | undefined
  constructor(init: ApiErrorInit) {
    super({ message: init.message })
    this.status = init.status
    this.requestId = init.requestId
    this.retryAfter = init.retryAfter
  }
}

type PaymentStatus = Payment.PaymentStatus

// --- 401 / 403 ------------------------------------------------------------------------------------------------------

/** 401: no `Authorization: Bearer` header, or an empty key. */
export class UnauthenticatedError extends KassaApiError {
  readonly _tag = "UnauthenticatedError"
  readonly code = "unauthenticated"
}
/** 401: the key is unknown, revoked or rolled. */
export class InvalidApiKeyError extends KassaApiError {
  readonly _tag = "InvalidApiKeyError"
  readonly code = "invalid_api_key"
}
/** 403: the application is switched off. */
export class ApplicationDisabledError extends KassaApiError {
  readonly _tag = "ApplicationDisabledError"
  readonly code = "application_disabled"
}
/** 403: the application is not yet activated. */
export class ApplicationPendingReviewError extends KassaApiError {
  readonly _tag = "ApplicationPendingReviewError"
  readonly code = "application_pending_review"
}
/** 403: the application is suspended. */
export class ApplicationSuspendedError extends KassaApiError {
  readonly _tag = "ApplicationSuspendedError"
  readonly code = "application_suspended"
}
/** 403: the request came from an address outside the application's IP allow-list. */
export class IpNotAllowedError extends KassaApiError {
  readonly _tag = "IpNotAllowedError"
  readonly code = "ip_not_allowed"
}

// --- 404 / 409 ------------------------------------------------------------------------------------------------------

/** 404: no payment with this id for this application in this mode (a malformed id is refused the same way). */
export class NotFoundError extends KassaApiError {
  readonly _tag = "NotFoundError"
  readonly code = "not_found"
}

/** 409: the `order_reference` already has a pending, paid or refunded payment, named by `payment_id`. */
export class OrderReferenceAlreadyPaidError extends KassaApiError {
  readonly _tag = "OrderReferenceAlreadyPaidError"
  readonly code = "order_reference_already_paid"
  readonly payment_id: string
  constructor(init: ApiErrorInit & { readonly payment_id: string }) {
    super(init)
    this.payment_id = init.payment_id
  }
}

/** 409: the `Idempotency-Key` was used before with another body or on another endpoint. */
export class IdempotencyKeyReusedError extends KassaApiError {
  readonly _tag = "IdempotencyKeyReusedError"
  readonly code = "idempotency_key_reused"
}
/** 409: the first request with this `Idempotency-Key` is still running. Retried by the SDK. */
export class IdempotencyRequestInProgressError extends KassaApiError {
  readonly _tag = "IdempotencyRequestInProgressError"
  readonly code = "idempotency_request_in_progress"
}

/** 409: only a pending payment can be cancelled. */
export class PaymentNotCancellableError extends KassaApiError {
  readonly _tag = "PaymentNotCancellableError"
  readonly code = "payment_not_cancellable"
  /** The payment's current status (the wire's `status`; `status` here is the HTTP status). */
  readonly payment_status: PaymentStatus
  constructor(init: ApiErrorInit & { readonly payment_status: PaymentStatus }) {
    super(init)
    this.payment_status = init.payment_status
  }
}
/** 409: only a paid or partially refunded payment can be refunded. */
export class PaymentNotRefundableError extends KassaApiError {
  readonly _tag = "PaymentNotRefundableError"
  readonly code = "payment_not_refundable"
  /** The payment's current status (the wire's `status`; `status` here is the HTTP status). */
  readonly payment_status: PaymentStatus
  constructor(init: ApiErrorInit & { readonly payment_status: PaymentStatus }) {
    super(init)
    this.payment_status = init.payment_status
  }
}
/** 409: only a pending test payment can be simulated. */
export class PaymentNotPendingError extends KassaApiError {
  readonly _tag = "PaymentNotPendingError"
  readonly code = "payment_not_pending"
  /** The payment's current status (the wire's `status`; `status` here is the HTTP status). */
  readonly payment_status: PaymentStatus
  constructor(init: ApiErrorInit & { readonly payment_status: PaymentStatus }) {
    super(init)
    this.payment_status = init.payment_status
  }
}
/** 409: the payment is being updated at this moment. Retried by the SDK. */
export class PaymentBusyError extends KassaApiError {
  readonly _tag = "PaymentBusyError"
  readonly code = "payment_busy"
}

// --- 422 ------------------------------------------------------------------------------------------------------------

/** 422: one or more fields are invalid; `fields` maps each to its messages. */
export class ValidationFailedError extends KassaApiError {
  readonly _tag = "ValidationFailedError"
  readonly code = "validation_failed"
  readonly fields: Readonly<Record<string, ReadonlyArray<string>>>
  constructor(init: ApiErrorInit & { readonly fields: Readonly<Record<string, ReadonlyArray<string>>> }) {
    super(init)
    this.fields = init.fields
  }
}
/** 422: the application offers several methods and `method` was not sent. */
export class MethodRequiredError extends KassaApiError {
  readonly _tag = "MethodRequiredError"
  readonly code = "method_required"
}
/** 422: the method is not enabled for the application. */
export class MethodNotEnabledError extends KassaApiError {
  readonly _tag = "MethodNotEnabledError"
  readonly code = "method_not_enabled"
}

/** 422: `amount` is below the application's minimum, `min_amount`. */
export class AmountBelowMinimumError extends KassaApiError {
  readonly _tag = "AmountBelowMinimumError"
  readonly code = "amount_below_minimum"
  readonly min_amount: number
  constructor(init: ApiErrorInit & { readonly min_amount: number }) {
    super(init)
    this.min_amount = init.min_amount
  }
}
/** 422: `amount` is above the application's maximum, `max_amount`. */
export class AmountAboveMaximumError extends KassaApiError {
  readonly _tag = "AmountAboveMaximumError"
  readonly code = "amount_above_maximum"
  readonly max_amount: number
  constructor(init: ApiErrorInit & { readonly max_amount: number }) {
    super(init)
    this.max_amount = init.max_amount
  }
}
/** 422: the host of `return_url` differs from the application's return-URL host. */
export class ReturnUrlNotAllowedError extends KassaApiError {
  readonly _tag = "ReturnUrlNotAllowedError"
  readonly code = "return_url_not_allowed"
}
/** 422: the refund is larger than what remains refundable, `refundable_amount`. */
export class RefundAmountExceedsRefundableError extends KassaApiError {
  readonly _tag = "RefundAmountExceedsRefundableError"
  readonly code = "refund_amount_exceeds_refundable"
  readonly refundable_amount: number
  constructor(init: ApiErrorInit & { readonly refundable_amount: number }) {
    super(init)
    this.refundable_amount = init.refundable_amount
  }
}
/** 422: a live key asked for a refund; live refunds are requested from the dashboard, see `docs_url`. */
export class RefundsProcessedManuallyError extends KassaApiError {
  readonly _tag = "RefundsProcessedManuallyError"
  readonly code = "refunds_processed_manually"
  readonly docs_url: string
  constructor(init: ApiErrorInit & { readonly docs_url: string }) {
    super(init)
    this.docs_url = init.docs_url
  }
}

// --- 429 / 5xx / other ----------------------------------------------------------------------------------------------

/** 429: more requests in a minute than the key may make; `retryAfter` says how many seconds to wait. Retried. */
export class RateLimitedError extends KassaApiError {
  readonly _tag = "RateLimitedError"
  readonly code = "rate_limited"
}

/**
 * 502: the provider refused or did not answer. On create the payment now exists as `failed`, named by `payment_id`;
 * the answer is final for its `Idempotency-Key`, so the SDK does not retry it: a new attempt needs a new key.
 */
export class ProviderError extends KassaApiError {
  readonly _tag = "ProviderError"
  readonly code = "provider_error"
  readonly payment_id: string | undefined
  constructor(init: ApiErrorInit & { readonly payment_id?: string | undefined }) {
    super(init)
    this.payment_id = init.payment_id
  }
}
/** 500: a failure on the service side; nothing was committed. Retried. */
export class ServerError extends KassaApiError {
  readonly _tag = "ServerError"
  readonly code = "server_error"
}
/** Any other HTTP error (400 body not JSON, 405 wrong method, 413 too large, 415 not JSON); `status` tells which. */
export class HttpError extends KassaApiError {
  readonly _tag = "HttpError"
  readonly code = "http_error"
}

// --- no error code on the wire --------------------------------------------------------------------------------------

/** The request did not get an answer: the connection failed or broke off. Retried. */
export class ConnectionError extends KassaError {
  readonly _tag = "ConnectionError"
  readonly code = "connection_error"
}

/** No complete answer within the timeout (per attempt). Retried. */
export class TimeoutError extends KassaError {
  readonly _tag = "TimeoutError"
  readonly code = "timeout"
}

/**
 * An answer that is not a Kassa answer: not JSON (a proxy's HTML error page), an unknown error code, or a body that
 * does not match the API contract. Retried when `status` is 5xx.
 */
export class UnexpectedResponseError extends KassaError {
  readonly _tag = "UnexpectedResponseError"
  readonly code = "unexpected_response"
  readonly status: number
  readonly requestId: string | undefined
  readonly retryAfter: number | undefined
  /** The start of the body, for logs. */
  readonly body: string
  constructor(init: ApiErrorInit & { readonly body: string; readonly cause?: unknown }) {
    super({ message: init.message, cause: init.cause })
    this.status = init.status
    this.requestId = init.requestId
    this.retryAfter = init.retryAfter
    this.body = init.body
  }
}

/** Promise API only: the call's `AbortSignal` fired; `cause` is the signal's reason. */
export class RequestAbortedError extends KassaError {
  readonly _tag = "RequestAbortedError"
  readonly code = "request_aborted"
}

/** Every error answer of the API, one class per code. */
export type AnyKassaApiError =
  | UnauthenticatedError
  | InvalidApiKeyError
  | ApplicationDisabledError
  | ApplicationPendingReviewError
  | ApplicationSuspendedError
  | IpNotAllowedError
  | NotFoundError
  | OrderReferenceAlreadyPaidError
  | IdempotencyKeyReusedError
  | IdempotencyRequestInProgressError
  | PaymentNotCancellableError
  | PaymentNotRefundableError
  | PaymentNotPendingError
  | PaymentBusyError
  | ValidationFailedError
  | MethodRequiredError
  | MethodNotEnabledError
  | AmountBelowMinimumError
  | AmountAboveMaximumError
  | ReturnUrlNotAllowedError
  | RefundAmountExceedsRefundableError
  | RefundsProcessedManuallyError
  | RateLimitedError
  | ProviderError
  | ServerError
  | HttpError

/** What an SDK call can fail with (the Promise API adds {@link RequestAbortedError}). */
export type AnyKassaError = AnyKassaApiError | ConnectionError | TimeoutError | UnexpectedResponseError

/** The class of each error code; a code added to the API without a class here does not compile. */
export const errorClasses = {
  unauthenticated: UnauthenticatedError,
  invalid_api_key: InvalidApiKeyError,
  application_disabled: ApplicationDisabledError,
  application_pending_review: ApplicationPendingReviewError,
  application_suspended: ApplicationSuspendedError,
  ip_not_allowed: IpNotAllowedError,
  not_found: NotFoundError,
  order_reference_already_paid: OrderReferenceAlreadyPaidError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  idempotency_request_in_progress: IdempotencyRequestInProgressError,
  payment_not_cancellable: PaymentNotCancellableError,
  payment_not_refundable: PaymentNotRefundableError,
  payment_not_pending: PaymentNotPendingError,
  payment_busy: PaymentBusyError,
  validation_failed: ValidationFailedError,
  method_required: MethodRequiredError,
  method_not_enabled: MethodNotEnabledError,
  amount_below_minimum: AmountBelowMinimumError,
  amount_above_maximum: AmountAboveMaximumError,
  return_url_not_allowed: ReturnUrlNotAllowedError,
  refund_amount_exceeds_refundable: RefundAmountExceedsRefundableError,
  refunds_processed_manually: RefundsProcessedManuallyError,
  rate_limited: RateLimitedError,
  provider_error: ProviderError,
  server_error: ServerError,
  http_error: HttpError
} as const satisfies { readonly [Code in ApiError.ErrorCode]: abstract new (...args: never) => KassaApiError }

/** The response facts an API error carries besides the wire object. */
export type ResponseFacts = Omit<ApiErrorInit, "message">

/**
 * The SDK error of an error decoded by the API contract (the core's `ApiError` classes): the wire fields, plus the
 * status, `Request-Id` and `Retry-After` of the answer.
 */
export const fromApiError = (error: ApiError.ApiError, facts: ResponseFacts): AnyKassaApiError => {
  const init = { ...facts, message: error.message }
  switch (error._tag) {
    case "Unauthenticated":
      return new UnauthenticatedError(init)
    case "InvalidApiKey":
      return new InvalidApiKeyError(init)
    case "ApplicationDisabled":
      return new ApplicationDisabledError(init)
    case "ApplicationPendingReview":
      return new ApplicationPendingReviewError(init)
    case "ApplicationSuspended":
      return new ApplicationSuspendedError(init)
    case "IpNotAllowed":
      return new IpNotAllowedError(init)
    case "NotFound":
      return new NotFoundError(init)
    case "OrderReferenceAlreadyPaid":
      return new OrderReferenceAlreadyPaidError({ ...init, payment_id: error.payment_id })
    case "IdempotencyKeyReused":
      return new IdempotencyKeyReusedError(init)
    case "IdempotencyRequestInProgress":
      return new IdempotencyRequestInProgressError(init)
    case "PaymentNotCancellable":
      return new PaymentNotCancellableError({ ...init, payment_status: error.status })
    case "PaymentNotRefundable":
      return new PaymentNotRefundableError({ ...init, payment_status: error.status })
    case "PaymentNotPending":
      return new PaymentNotPendingError({ ...init, payment_status: error.status })
    case "PaymentBusy":
      return new PaymentBusyError(init)
    case "ValidationFailed":
      return new ValidationFailedError({ ...init, fields: error.fields })
    case "MethodRequired":
      return new MethodRequiredError(init)
    case "MethodNotEnabled":
      return new MethodNotEnabledError(init)
    case "AmountBelowMinimum":
      return new AmountBelowMinimumError({ ...init, min_amount: error.min_amount })
    case "AmountAboveMaximum":
      return new AmountAboveMaximumError({ ...init, max_amount: error.max_amount })
    case "ReturnUrlNotAllowed":
      return new ReturnUrlNotAllowedError(init)
    case "RefundAmountExceedsRefundable":
      return new RefundAmountExceedsRefundableError({ ...init, refundable_amount: error.refundable_amount })
    case "RefundsProcessedManually":
      return new RefundsProcessedManuallyError({ ...init, docs_url: error.docs_url })
    case "RateLimited":
      return new RateLimitedError({ ...init, retryAfter: error.retryAfterSeconds })
    case "ProviderError":
      return new ProviderError({ ...init, payment_id: error.payment_id })
    case "ServerError":
      return new ServerError(init)
    case "HttpError":
      return new HttpError(init)
  }
}
