/**
 * The provider-neutral vocabulary of the connector boundary (issue 12, decisions §10): what a payment provider says
 * about a checkout or a refund when Kassa reads it, or that it did not answer. Adapters (Stripe first, Mollie next)
 * translate their objects into these; the rules in {@link ProviderSettlement} only ever see these.
 */
import { Schema } from "effect"
import { RefundId } from "../domain/Ids.ts"
import { Amount } from "../domain/Money.ts"
import { Timestamp } from "../domain/Timestamp.ts"

/** What the customer gave the provider's checkout (Stripe's `customer_details`); any of it may be missing. */
export const CustomerDetails = Schema.Struct({
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String)
})
export type CustomerDetails = typeof CustomerDetails.Type

/**
 * A checkout as the provider reports it now. A provider's checkout only moves forward:
 * `Open` → `Paid` | `Unpaid` → `Paid` | `Failed`, or `Open` → `Expired`.
 * - `Paid`: complete and paid (Stripe: `status: complete`, `payment_status: paid`).
 * - `Unpaid`: complete but the money has not arrived (a delayed method: `payment_status: unpaid`).
 * - `Failed`: a delayed method failed after the checkout completed (`checkout.session.async_payment_failed`).
 * - `Expired`: closed without payment; nobody can pay it any more.
 * - `Cancelled`: closed without payment because someone cancelled it: the customer at the provider, or Kassa's own
 *   close (Mollie's `canceled`; Stripe reports a close as `Expired`).
 */
export const CheckoutState = Schema.TaggedUnion({
  Open: {},
  Paid: { customer: CustomerDetails },
  Unpaid: {},
  Failed: {},
  Expired: {},
  Cancelled: {}
})
export type CheckoutState = typeof CheckoutState.Type

/** A refund's state at the provider (Stripe's refund `status`; `requires_action` reads as `pending`). */
export const ProviderRefundStatus = Schema.Literals(["pending", "succeeded", "failed", "canceled"])
export type ProviderRefundStatus = typeof ProviderRefundStatus.Type

/**
 * A refund as the provider reports it now. `refund_id` is Kassa's id: the one Kassa sent with it
 * (`metadata[kassa_refund_id]`), or, for a refund made in the provider's own dashboard, the id the caller gave it
 * the first time it saw the provider's refund (kept next to `provider_refund_id`, so a repeated answer names
 * the same refund).
 */
export const RefundState = Schema.Struct({
  refund_id: RefundId,
  provider_refund_id: Schema.String,
  amount: Amount,
  status: ProviderRefundStatus,
  // When the provider created it (Stripe's `created`): a refund made at the provider is filed under this time.
  created_at: Timestamp
})
export type RefundState = typeof RefundState.Type

/**
 * Why the provider gave no answer. Money may have moved, so this is never read as `failed`: the caller keeps the
 * payment or refund as it is and asks again (decisions §10).
 */
export const NoAnswerReason = Schema.Literals(["timeout", "unavailable", "rate_limited"])
export type NoAnswerReason = typeof NoAnswerReason.Type

/** One answer of the provider: a checkout, a refund, or no answer at all. */
export const ProviderAnswer = Schema.TaggedUnion({
  Checkout: { state: CheckoutState },
  Refund: { refund: RefundState },
  NoAnswer: { reason: NoAnswerReason },
  // The provider will not close an open checkout (Mollie: not `isCancelable`); it stays payable until `expires_at`.
  Unclosable: { expires_at: Timestamp }
})
export type ProviderAnswer = typeof ProviderAnswer.Type

/** The answer to a close request (expire or cancel at the provider), or the read that follows it. */
export type CloseAnswer = Extract<ProviderAnswer, { readonly _tag: "Checkout" | "NoAnswer" | "Unclosable" }>

/** The checkout visit Kassa recorded before sending the customer to the provider (`payer.ip`, `user_agent`). */
export interface CheckoutVisit {
  readonly ip: string
  readonly user_agent: string
}

/** Reason recorded on a refund Kassa learns of only from the provider (decisions §10). */
export const refundedAtProvider = "refunded at provider"
