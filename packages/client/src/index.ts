/**
 * @kassa/client — the merchant SDK of Kassa, derived from the core's API contract. Two faces over one
 * implementation: `Kassa` for Promise code and the `KassaClient` Effect service.
 *
 * @example
 * import { Kassa } from "@kassa/client"
 *
 * const kassa = new Kassa({ apiKey, baseUrl: "https://kassa.example.com" })
 * const payment = await kassa.payments.create({ amount: 1250, currency: "EUR", order_reference: "order-1" })
 */
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
} from "@kassa/webhook-verify"
export * from "./ApiErrors.ts"
export type {
  EventName,
  EventOf,
  EventPage,
  EventTime,
  KassaClientEvents,
  ListEventsParams
} from "./Events.ts"
export {
  type AnyKassaApiError,
  type AnyKassaError,
  type ApiErrorInit,
  ConnectionError,
  errorClasses,
  KassaApiError,
  type KassaApiErrorClass,
  type KassaApiErrorOf,
  KassaError,
  RequestAbortedError,
  TimeoutError,
  UnexpectedResponseError
} from "./errors.ts"
export {
  type CallOptions,
  type CreatePaymentCallOptions,
  type IdempotentCallOptions,
  Kassa,
  type KassaEventNamed,
  type KassaEventPage,
  type KassaEvents,
  type KassaOptions,
  type KassaPaymentPage,
  type KassaPayments,
  type KassaTest
} from "./Kassa.ts"
export {
  type CreatePaymentOptions,
  type CreatePaymentParams,
  defaultMaxRetries,
  defaultTimeout,
  type IdempotentRequestOptions,
  KassaClient,
  type KassaClientOptions,
  type KassaClientService,
  type ListPaymentsParams,
  type PaymentPage,
  type RefundParams,
  type RequestOptions,
  type SimulateParams
} from "./KassaClient.ts"
export { type SendSettings, sendWith } from "./Sending.ts"
