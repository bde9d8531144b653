/**
 * One class per code of the core's error catalogue (`ApiError.catalogue` in `@kassa/core`, which says what each code
 * means, its HTTP status and its added fields). Each is named after the catalogue's tag; its `_tag`, `code` and fields
 * come from the catalogue's row ({@link apiErrorClass}). This module holds nothing else: `errors.ts` finds the class
 * of each code here, and fails to compile while a code of the catalogue has none.
 */
import { apiErrorClass } from "./KassaError.ts"

export class UnauthenticatedError extends apiErrorClass("Unauthenticated") {}
export class InvalidApiKeyError extends apiErrorClass("InvalidApiKey") {}
export class ApplicationDisabledError extends apiErrorClass("ApplicationDisabled") {}
export class ApplicationPendingReviewError extends apiErrorClass("ApplicationPendingReview") {}
export class ApplicationSuspendedError extends apiErrorClass("ApplicationSuspended") {}
export class IpNotAllowedError extends apiErrorClass("IpNotAllowed") {}
export class NotFoundError extends apiErrorClass("NotFound") {}
export class OrderReferenceAlreadyPaidError extends apiErrorClass("OrderReferenceAlreadyPaid") {}
export class IdempotencyKeyReusedError extends apiErrorClass("IdempotencyKeyReused") {}
export class IdempotencyRequestInProgressError extends apiErrorClass("IdempotencyRequestInProgress") {}
export class PaymentNotCancellableError extends apiErrorClass("PaymentNotCancellable") {}
export class PaymentNotRefundableError extends apiErrorClass("PaymentNotRefundable") {}
export class PaymentNotPendingError extends apiErrorClass("PaymentNotPending") {}
export class PaymentBusyError extends apiErrorClass("PaymentBusy") {}
export class ValidationFailedError extends apiErrorClass("ValidationFailed") {}
export class MethodRequiredError extends apiErrorClass("MethodRequired") {}
export class MethodNotEnabledError extends apiErrorClass("MethodNotEnabled") {}
export class AmountBelowMinimumError extends apiErrorClass("AmountBelowMinimum") {}
export class AmountAboveMaximumError extends apiErrorClass("AmountAboveMaximum") {}
export class ReturnUrlNotAllowedError extends apiErrorClass("ReturnUrlNotAllowed") {}
export class RefundAmountExceedsRefundableError extends apiErrorClass("RefundAmountExceedsRefundable") {}
export class RefundsProcessedManuallyError extends apiErrorClass("RefundsProcessedManually") {}
export class RateLimitedError extends apiErrorClass("RateLimited") {}
export class ProviderError extends apiErrorClass("ProviderError") {}
export class ServerError extends apiErrorClass("ServerError") {}
export class HttpError extends apiErrorClass("HttpError") {}
