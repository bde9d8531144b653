/**
 * @kassa/core — Kassa's payment domain. Pure: no sockets, files, database or clock reads; time,
 * randomness and cryptography come in through Effect services.
 */

export * as Application from "./domain/Application.ts"
export * as Ids from "./domain/Ids.ts"
export * as Mode from "./domain/Mode.ts"
export * as Money from "./domain/Money.ts"
export * as Payment from "./domain/Payment.ts"
export * as Timestamp from "./domain/Timestamp.ts"
export * as WebhookEvent from "./domain/WebhookEvent.ts"
export * as ApiError from "./errors/ApiError.ts"
export * as CanonicalJson from "./idempotency/CanonicalJson.ts"
export * as IdempotencyDecision from "./idempotency/IdempotencyDecision.ts"
export * as IdempotencyKey from "./idempotency/IdempotencyKey.ts"
export * as RequestFingerprint from "./idempotency/RequestFingerprint.ts"
export * as ApiKey from "./keys/ApiKey.ts"
export * as Base62 from "./keys/Base62.ts"
export * as WebhookSecret from "./keys/WebhookSecret.ts"
export * as CreatePayment from "./payments/CreatePayment.ts"
export * as PaymentRequests from "./payments/PaymentRequests.ts"
export * as PaymentStateMachine from "./payments/PaymentStateMachine.ts"
export * as RefundRules from "./payments/RefundRules.ts"
export * as RequestValidation from "./payments/RequestValidation.ts"
export * as RetrySchedule from "./webhooks/RetrySchedule.ts"
export * as WebhookSignature from "./webhooks/WebhookSignature.ts"
