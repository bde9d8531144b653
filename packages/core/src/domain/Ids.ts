import { Schema } from "effect"

// Lower-case UUIDs (decisions §3): ids are compared as strings in SQL and URLs, so one spelling only.
const lowerUuid = Schema.String.check(
  Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, {
    expected: "a lower-case UUID"
  })
)

/** Identifier of a payment: a lower-case UUID. */
export const PaymentId = lowerUuid.pipe(Schema.brand("PaymentId"))
export type PaymentId = typeof PaymentId.Type

/** Identifier of a refund entry: a lower-case UUID. */
export const RefundId = lowerUuid.pipe(Schema.brand("RefundId"))
export type RefundId = typeof RefundId.Type

/** Identifier of an application (a merchant integration). */
export const ApplicationId = lowerUuid.pipe(Schema.brand("ApplicationId"))
export type ApplicationId = typeof ApplicationId.Type

/** Identifier of an API key record (never the key itself). */
export const ApiKeyId = lowerUuid.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type

/** Identifier of a webhook delivery (one per event). */
export const DeliveryId = lowerUuid.pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type

/** Identifier of a webhook event: `evt_<uuid>`, the same across every retry of the event. */
export const EventId = Schema.String.check(
  Schema.isPattern(/^evt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, { expected: "evt_<uuid>" })
).pipe(Schema.brand("EventId"))
export type EventId = typeof EventId.Type

/** Identifier of a dashboard user: a lower-case UUID. */
export const UserId = lowerUuid.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

/** Identifier of a live-mode provider link (`provider_links.id`, in the webhook URL the provider posts to). */
export const ProviderLinkId = lowerUuid.pipe(Schema.brand("ProviderLinkId"))
export type ProviderLinkId = typeof ProviderLinkId.Type
