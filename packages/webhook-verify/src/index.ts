/**
 * Verify Kassa webhooks on any runtime with Web Crypto. No dependencies.
 *
 * @example
 * import { verify } from "@kassa/webhook-verify"
 *
 * const event = await verify(rawBody, signatureHeader, webhookSecret)
 */
export { isKnownEventName, type RawBody } from "./body.ts"
export type {
  KassaCustomer,
  KassaEvent,
  KassaEventName,
  KassaEventOf,
  KassaPayer,
  KassaPayment,
  KassaPaymentStatus,
  KassaRefund,
  KassaRefundStatus
} from "./events.ts"
export { kassaEventNames } from "./events.ts"
export {
  type HandledEventStore,
  InMemoryHandledEventStore,
  type InMemoryHandledEventStoreOptions
} from "./HandledEvents.ts"
export { eventHeaderName, type SignatureHeaderValue, signatureHeaderName, userAgent } from "./header.ts"
export { type SignedRequestInit, type SignOptions, sign, signedRequest } from "./sign.ts"
export { defaultToleranceSeconds, type Secrets, type VerifyOptions, verify, verifyRequest } from "./verify.ts"
export { WebhookVerificationError, type WebhookVerificationErrorReason } from "./WebhookVerificationError.ts"
