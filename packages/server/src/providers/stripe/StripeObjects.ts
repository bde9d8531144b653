/**
 * Stripe's objects and events in Kassa's words, for StripeConnector.ts: pure translations, no calls. A Checkout
 * Session (with its PaymentIntent, charge and disputes) becomes a checkout reading, a Refund a refund reading, and a
 * verified event's body what the event is about, or a refusal when its shape is not an event's.
 */
import { Ids, type ProviderSettlement } from "@kassa/core"
import { DateTime, Option, Result, Schema } from "effect"
import type Stripe from "stripe"
import type { CheckoutReading, EventSubject, ProviderEvent, RefundReading } from "../ProviderConnector.ts"

export const fromUnix = (seconds: number) => DateTime.makeUnsafe(seconds * 1000)

export const idOf = (value: string | { readonly id: string } | null | undefined): string | null =>
  typeof value === "string" ? value : (value?.id ?? null)

/**
 * Money the payer's bank took back through disputes, in the charge's minor units. A chargeback withdraws the disputed
 * amount from the balance when it opens and returns it only if the merchant wins
 * (https://docs.stripe.com/disputes/how-disputes-work); an inquiry withdraws nothing until it becomes a chargeback
 * (ibid., "Inquiries"). The dispute's `balance_transactions` record exactly that: "zero, one, or two balance
 * transactions that show funds withdrawn and reinstated" (https://docs.stripe.com/api/disputes/object#dispute_object-balance_transactions).
 * So a dispute counts its `amount` while it has more withdrawals than reinstatements: open or lost chargebacks, not
 * inquiries and not won ones. The fee is Stripe's charge to the merchant, not the payer's money, and is left out.
 */
export const chargedBack = (disputes: ReadonlyArray<Stripe.Dispute>): number =>
  disputes.reduce((total, dispute) => {
    const movements = dispute.balance_transactions ?? []
    const withdrawn = movements.filter((movement) => movement.amount < 0).length
    const reinstated = movements.filter((movement) => movement.amount > 0).length
    return withdrawn > reinstated ? total + dispute.amount : total
  }, 0)

/** Whether the session's charge was ever disputed (its disputes are then listed): `charge.disputed`. */
export const wasDisputed = (session: Stripe.Checkout.Session): boolean => {
  const intent = session.payment_intent
  const charge = typeof intent === "object" && intent !== null ? intent.latest_charge : null
  return typeof charge === "object" && charge !== null && charge.disputed
}

/** The session's own words for operators: `open`, `expired`, or `complete/paid`, `complete/unpaid`. */
const providerStatus = (session: Stripe.Checkout.Session): string =>
  session.status === "complete" ? `complete/${session.payment_status}` : String(session.status ?? "unknown")

/** A checkout as Stripe shows it now, in the core's vocabulary (decisions §10's table). */
export const checkoutReading = (
  session: Stripe.Checkout.Session,
  disputes: ReadonlyArray<Stripe.Dispute> = []
): CheckoutReading => {
  const intent = session.payment_intent
  const reading = (state: ProviderSettlement.CheckoutState): CheckoutReading => ({
    _tag: "Checkout",
    state,
    providerPaymentId: idOf(intent),
    providerStatus: providerStatus(session),
    providerExpiresAt: fromUnix(session.expires_at),
    chargedBack: chargedBack(disputes),
    // Checkout in `payment` mode captures automatically: nothing waits for Kassa to capture.
    awaitingCapture: false
  })
  switch (session.status) {
    case "complete": {
      if (session.payment_status === "paid" || session.payment_status === "no_payment_required") {
        const details = session.customer_details
        return reading({
          _tag: "Paid",
          customer: { name: details?.name ?? null, email: details?.email ?? null, phone: details?.phone ?? null }
        })
      }
      // A delayed method that failed leaves the session complete and unpaid; its PaymentIntent tells
      // (https://docs.stripe.com/payments/checkout/how-checkout-works#delayed-notification: the intent goes back to
      // requires_payment_method, or is canceled).
      const status = typeof intent === "object" && intent !== null ? intent.status : null
      const failed = status === "requires_payment_method" || status === "canceled"
      return reading(failed ? { _tag: "Failed" } : { _tag: "Unpaid" })
    }
    // Kassa's close expires the session too: Stripe has no separate "cancelled" (so never `Cancelled`).
    case "expired":
      return reading({ _tag: "Expired" })
    default:
      return reading({ _tag: "Open" })
  }
}

const refundStatus = (status: string | null): ProviderSettlement.ProviderRefundStatus =>
  status === "succeeded" || status === "failed" || status === "canceled" ? status : "pending"

const decodeRefundId = Schema.decodeUnknownOption(Ids.RefundId)
const decodePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

/** A Stripe refund in the core's vocabulary; Kassa's id from its metadata, else `unknownAs`. */
export const refundReading = (refund: Stripe.Refund, unknownAs: Ids.RefundId): RefundReading => {
  const kassaId = Option.getOrNull(decodeRefundId(refund.metadata?.kassa_refund_id))
  return {
    _tag: "Refund",
    kassaMade: kassaId !== null,
    providerPaymentId: idOf(refund.payment_intent),
    refund: {
      refund_id: kassaId ?? unknownAs,
      provider_refund_id: refund.id,
      amount: refund.amount,
      status: refundStatus(refund.status),
      created_at: fromUnix(refund.created)
    }
  }
}

/**
 * A Stripe id as Kassa accepts one from an event: printable ASCII without spaces, at most 255 characters (Stripe
 * guarantees no more: https://docs.stripe.com/upgrades#what-changes-does-stripe-consider-to-be-backward-compatible).
 * Anything else (a NUL, a megabyte of text, a number) is no Stripe id and never reaches a query.
 */
const StripeId = Schema.String.check(
  Schema.isPattern(/^[\x21-\x7e]{1,255}$/, { expected: "a Stripe id (printable ASCII, 1 to 255 characters)" })
)

/** An event's envelope (https://docs.stripe.com/api/events/object): `data.object` is always an object. */
const Envelope = Schema.Struct({
  id: StripeId,
  type: Schema.String.check(Schema.isPattern(/^[a-z0-9_.]{1,255}$/, { expected: "an event type" })),
  livemode: Schema.Boolean,
  data: Schema.Struct({ object: Schema.Record(Schema.String, Schema.Unknown) })
})

/** The fields Kassa reads of each event's object, as Stripe types them (a missing one is a malformed event). */
const Identified = Schema.Struct({ id: StripeId })
const OfSession = Schema.Struct({ id: StripeId, client_reference_id: Schema.optional(Schema.NullOr(Schema.String)) })
/** A Charge or a Dispute: both name their PaymentIntent, null for a charge made without one. */
const OfPayment = Schema.Struct({ payment_intent: Schema.NullOr(StripeId) })

const decodeEnvelope = Schema.decodeUnknownResult(Envelope)
const decodeIdentified = Schema.decodeUnknownResult(Identified)
const decodeSession = Schema.decodeUnknownResult(OfSession)
const decodePayment = Schema.decodeUnknownResult(OfPayment)

/** The dispute events (https://docs.stripe.com/api/events/types): each may change what the payer took back. */
export const disputeEvents = [
  "charge.dispute.created",
  "charge.dispute.funds_withdrawn",
  "charge.dispute.funds_reinstated",
  "charge.dispute.closed"
] as const

const subjectOf = (type: string, object: unknown): Result.Result<EventSubject, Schema.SchemaError> => {
  switch (type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
    case "checkout.session.async_payment_failed":
    case "checkout.session.expired":
      return Result.map(decodeSession(object), (session) => ({
        _tag: "Checkout" as const,
        checkoutId: session.id,
        // Kassa's payment id when the session names one; any other reference is not Kassa's.
        paymentId: Option.getOrNull(decodePaymentId(session.client_reference_id))
      }))
    case "refund.created":
    case "refund.updated":
    case "refund.failed":
      return Result.map(decodeIdentified(object), (refund) => ({
        _tag: "Refund" as const,
        providerRefundId: refund.id
      }))
    // A Charge has carried no `refunds` list since API version 2022-11-15 (https://docs.stripe.com/upgrades#2022-11-15):
    // its refunds are listed by payment intent (ProviderConnector.listRefunds).
    case "charge.refunded":
      return Result.map(decodePayment(object), (charge) => ({
        _tag: "RefundsChanged" as const,
        providerPaymentId: charge.payment_intent
      }))
    case "charge.dispute.created":
    case "charge.dispute.funds_withdrawn":
    case "charge.dispute.funds_reinstated":
    case "charge.dispute.closed":
      // https://docs.stripe.com/api/disputes/object#dispute_object-payment_intent
      return Result.map(decodePayment(object), (dispute) =>
        dispute.payment_intent === null
          ? { _tag: "Other" as const }
          : { _tag: "ProviderPaymentChanged" as const, providerPaymentId: dispute.payment_intent }
      )
    default:
      return Result.succeed({ _tag: "Other" })
  }
}

/**
 * A verified event's parsed body as a {@link ProviderEvent}, or why it is not an event (a short message: it may
 * be answered to whoever posted it). The signature proves who sent the bytes, not that they are well formed.
 */
export const decodeEvent = (parsed: unknown): Result.Result<ProviderEvent, string> => {
  const envelope = decodeEnvelope(parsed)
  if (Result.isFailure(envelope)) return Result.fail(describe(envelope.failure))
  const { id, type, livemode, data } = envelope.success
  const subject = subjectOf(type, data.object)
  if (Result.isFailure(subject)) return Result.fail(describe(subject.failure, "data.object"))
  return Result.succeed({ id, type, livemode, subject: subject.success })
}

const describe = (error: Schema.SchemaError, under?: string) =>
  `The event is signed but is not a Stripe event${under === undefined ? "" : ` (in ${under})`}: ${error.message
    .replace(/\s+/g, " ")
    .replace(/[^\x20-\x7e]/g, "?")
    .slice(0, 300)}`
