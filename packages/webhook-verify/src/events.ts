/** Status of a payment. */
export type KassaPaymentStatus =
  | "pending"
  | "paid"
  | "failed"
  | "cancelled"
  | "expired"
  | "partially_refunded"
  | "refunded"

/** Status of a refund. Live refunds stay `pending` until the provider confirms them. */
export type KassaRefundStatus = "pending" | "succeeded" | "failed"

/** A refund entry of a payment, oldest first in `refunds`. */
export interface KassaRefund {
  readonly id: string
  readonly amount: number
  readonly status: KassaRefundStatus
  readonly reason: string | null
  /** RFC 3339 UTC timestamp with milliseconds. */
  readonly created_at: string
  readonly confirmed_at: string | null
}

/** The customer as the application supplied it; `null` where unknown. */
export interface KassaCustomer {
  readonly name: string | null
  readonly email: string | null
  readonly phone: string | null
}

/** Who actually completed the checkout. */
export interface KassaPayer {
  readonly name: string
  readonly email: string | null
  readonly phone: string | null
  readonly ip: string
  readonly user_agent: string
}

/** A payment, exactly as `GET /api/v1/payments/{id}` returns it. */
export interface KassaPayment {
  readonly id: string
  readonly status: KassaPaymentStatus
  readonly mode: "test" | "live"
  readonly amount: number
  /** Sum of succeeded refunds. */
  readonly refunded_amount: number
  readonly currency: string
  readonly method: string
  readonly order_reference: string
  readonly description: string | null
  readonly customer: KassaCustomer
  /** `null` until someone completes the checkout. */
  readonly payer: KassaPayer | null
  readonly locale: string
  readonly return_url: string | null
  readonly metadata: Readonly<Record<string, string | number | boolean | null>>
  readonly checkout_url: string
  readonly expires_at: string
  readonly paid_at: string | null
  readonly created_at: string
  readonly refunds: ReadonlyArray<KassaRefund>
}

/** Every event name Kassa sends. */
export const kassaEventNames = [
  "payment.paid",
  "payment.failed",
  "payment.cancelled",
  "payment.expired",
  "payment.partially_refunded",
  "payment.refunded"
] as const

/** Name of a webhook event, also sent in the `X-Service-Event` header. */
export type KassaEventName = (typeof kassaEventNames)[number]

/** A webhook event with a given name. */
export interface KassaEventOf<Name extends KassaEventName> {
  /** `evt_<uuid>`, the same across retries and resends of one event: deduplicate on it. */
  readonly id: string
  readonly event: Name
  readonly created_at: string
  /**
   * The payment at the moment of the change. Events can arrive out of order,
   * so `data.status` (or a fresh fetch) is authoritative, not the event name.
   */
  readonly data: KassaPayment
}

/**
 * A webhook event, discriminated on `event`.
 *
 * @example
 * switch (event.event) {
 *   case "payment.paid": return fulfil(event.data.order_reference)
 *   case "payment.refunded": return restock(event.data.order_reference)
 * }
 */
export type KassaEvent = { readonly [Name in KassaEventName]: KassaEventOf<Name> }[KassaEventName]
