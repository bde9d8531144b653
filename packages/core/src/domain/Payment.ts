import { Schema } from "effect"
import { PaymentId, RefundId } from "./Ids.ts"
import { Mode } from "./Mode.ts"
import { Amount, Currency, Locale, Method, NonNegativeAmount } from "./Money.ts"
import { Timestamp } from "./Timestamp.ts"

/** The states of a payment (specification, "Payment states"). */
export const PaymentStatus = Schema.Literals([
  "pending",
  "paid",
  "failed",
  "cancelled",
  "expired",
  "partially_refunded",
  "refunded"
])
export type PaymentStatus = typeof PaymentStatus.Type

/** States a payment never leaves (a refunded payment is terminal too: nothing is left to refund). */
export const terminalStatuses: ReadonlySet<PaymentStatus> = new Set(["failed", "cancelled", "expired", "refunded"])

/** The customer as the application described it; every key present, `null` where unknown (decisions §3). */
export const Customer = Schema.Struct({
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String)
})
export type Customer = typeof Customer.Type

/** Who actually paid, recorded by the checkout (paid or failed); `null` until then. */
export const Payer = Schema.Struct({
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  ip: Schema.String,
  user_agent: Schema.String
})
export type Payer = typeof Payer.Type

/** Application-defined data, returned unchanged. Limits are create rules, not part of the stored shape. */
export const MetadataValue = Schema.Union([Schema.String, Schema.Finite, Schema.Boolean, Schema.Null])
export const Metadata = Schema.Record(Schema.String, MetadataValue)
export type Metadata = typeof Metadata.Type

export const RefundStatus = Schema.Literals(["pending", "succeeded", "failed"])
export type RefundStatus = typeof RefundStatus.Type

/** A refund entry (decisions §3); entries are kept oldest first. */
export const Refund = Schema.Struct({
  id: RefundId,
  amount: Amount,
  status: RefundStatus,
  reason: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  confirmed_at: Schema.NullOr(Timestamp)
})
export type Refund = typeof Refund.Type

/**
 * The payment object: the same value is the fetch endpoint's body and a webhook's `data`, so one schema
 * serves both. Field names are the wire names.
 */
export const Payment = Schema.Struct({
  id: PaymentId,
  status: PaymentStatus,
  mode: Mode,
  amount: Amount,
  refunded_amount: NonNegativeAmount,
  currency: Currency,
  method: Method,
  order_reference: Schema.String,
  description: Schema.NullOr(Schema.String),
  customer: Customer,
  payer: Schema.NullOr(Payer),
  locale: Locale,
  return_url: Schema.NullOr(Schema.String),
  metadata: Metadata,
  checkout_url: Schema.String,
  expires_at: Timestamp,
  paid_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  refunds: Schema.Array(Refund)
}).annotate({ identifier: "Payment" })
export type Payment = typeof Payment.Type
export type PaymentEncoded = typeof Payment.Encoded

/**
 * Statuses whose `order_reference` blocks a new payment (specification, rule 5: pending, paid, refunded).
 * A partially refunded payment was paid, so it blocks too (docs/decisions.md).
 */
export const orderReferenceBlockingStatuses: ReadonlyArray<PaymentStatus> = [
  "pending",
  "paid",
  "partially_refunded",
  "refunded"
]
