/**
 * From what the payment provider says to Kassa's transitions (decisions §10, "Settlement", "Expiry and cancel ask
 * Stripe first", "Live refunds"). Pure: the caller reads the provider, locks the payment, calls {@link apply} or
 * {@link decideClose}, and stores the payment, its events and any discrepancy in one transaction.
 *
 * Every answer is a snapshot of a provider object that only moves forward, so applying answers in any order and any
 * number of times ends in the same payment: an answer that does not move Kassa forward changes nothing.
 */
import { DateTime, Result, Schema } from "effect"
import { RefundId } from "../domain/Ids.ts"
import { formatPlain } from "../domain/Money.ts"
import type { Payer, Payment, PaymentStatus, Refund } from "../domain/Payment.ts"
import type { EventName } from "../domain/WebhookEvent.ts"
import { PaymentNotCancellable, ProviderError } from "../errors/ApiError.ts"
import * as PaymentStateMachine from "../payments/PaymentStateMachine.ts"
import { isRefundable, refundableAmount, refundedAmount } from "../payments/RefundRules.ts"
import {
  type CheckoutState,
  type CheckoutVisit,
  type CloseAnswer,
  type CustomerDetails,
  type ProviderAnswer,
  type RefundState,
  refundedAtProvider
} from "./ProviderAnswer.ts"

export * from "./ProviderAnswer.ts"
/** When to read the provider again (decisions §10, "Lost events"). */
export * as Schedule from "./ProviderSchedule.ts"

/**
 * Where the provider and Kassa disagree in a way Kassa must not settle on its own: the operator's discrepancy page
 * lists these (decisions §10, "Seen by operators").
 */
export const DiscrepancyKind = Schema.Literals([
  // The provider took the money of a payment Kassa had already closed (failed, cancelled, expired).
  "paid_after_final",
  // The provider reports a paid payment as failed or expired.
  "unpaid_after_paid",
  // A refund the provider had confirmed is now failed (decisions §10: failed, recomputed, no event).
  "refund_failed_after_success",
  // The provider reports a refund Kassa cannot hold: on a payment never paid, or beyond what is refundable.
  "refund_not_recordable",
  // The payer's bank took money back (a chargeback, a dispute); the payment's status does not change.
  "charged_back",
  // The provider holds an authorization that needs a capture Kassa does not make (Mollie's `authorized`).
  "awaiting_capture"
])
export type DiscrepancyKind = typeof DiscrepancyKind.Type

export const Discrepancy = Schema.Struct({
  kind: DiscrepancyKind,
  refund_id: Schema.NullOr(RefundId),
  message: Schema.String
})
export type Discrepancy = typeof Discrepancy.Type

/**
 * The outcome of one answer: the payment after it and the events to send (as {@link PaymentStateMachine.Transition}),
 * a discrepancy to record, and whether the caller should ask the provider again later (no answer, or an answer
 * that cannot apply yet).
 */
export interface Settlement extends PaymentStateMachine.Transition {
  readonly discrepancy: Discrepancy | null
  readonly askAgain: boolean
}

const unchanged = (payment: Payment, askAgain = false): Settlement => ({
  payment,
  events: [],
  discrepancy: null,
  askAgain
})

const flagged = (payment: Payment, kind: DiscrepancyKind, message: string, refundId: RefundId | null = null) => ({
  ...unchanged(payment),
  discrepancy: { kind, refund_id: refundId, message }
})

const fromTransition = (transition: PaymentStateMachine.Transition): Settlement => ({
  ...transition,
  discrepancy: null,
  askAgain: false
})

/** Why Kassa closes a pending live payment at the provider. */
export type ClosePurpose = "cancel" | "expire"

/**
 * What the caller knows besides the answer: the time, the checkout visit Kassa recorded for `payer` (null when the
 * customer never came through Kassa's checkout URL), and the close Kassa has asked the provider for, if any. Kassa
 * records that request on the payment before calling the provider, so that the provider's `expired` event, which
 * may arrive before the close call's own answer, still ends a cancel as `cancelled`, not `expired`.
 */
export interface SettlementContext {
  readonly now: DateTime.Utc
  readonly visit: CheckoutVisit | null
  readonly closing?: ClosePurpose | null | undefined
}

const paidStatuses: ReadonlySet<PaymentStatus> = new Set(["paid", "partially_refunded", "refunded"])

/**
 * `payer` of a payment paid at the provider: name, e-mail and phone from the provider's checkout, IP and
 * User-Agent from Kassa's checkout visit. The contract's payer (payment-service-api.md) allows null for `phone` and
 * `email` only, so those are null when unknown; `name`, `ip` and `user_agent` are strings there, "" when unknown
 * (§10's "null when there was none" would break the payment object's shape).
 */
export const payerOf = (customer: CustomerDetails, visit: CheckoutVisit | null): Payer => ({
  name: customer.name ?? "",
  email: customer.email,
  phone: customer.phone,
  ip: visit?.ip ?? "",
  user_agent: visit?.user_agent ?? ""
})

const settleOrStay = (
  payment: Payment,
  outcome: PaymentStateMachine.Outcome,
  options: Parameters<typeof PaymentStateMachine.settle>[2]
) =>
  Result.match(PaymentStateMachine.settle(payment, outcome, options), {
    onFailure: () => unchanged(payment),
    onSuccess: fromTransition
  })

const cancelOrStay = (payment: Payment) =>
  Result.match(PaymentStateMachine.cancel(payment), { onFailure: () => unchanged(payment), onSuccess: fromTransition })

/** §10's table for a checkout: complete+paid → paid, complete+unpaid → pending, failed → failed, expired → expired. */
const applyCheckout = (payment: Payment, state: CheckoutState, context: SettlementContext): Settlement => {
  if (payment.status === "pending") {
    switch (state._tag) {
      case "Open":
      case "Unpaid":
        return unchanged(payment)
      case "Paid":
        return settleOrStay(payment, "paid", { now: context.now, payer: payerOf(state.customer, context.visit) })
      case "Failed":
        return settleOrStay(payment, "failed", { now: context.now })
      case "Expired":
        return context.closing === "cancel" ? cancelOrStay(payment) : settleOrStay(payment, "expired", context)
      case "Cancelled":
        // The customer cancelled at the provider, or Kassa's own close: an expiry's close ends `expired`.
        return context.closing === "expire"
          ? settleOrStay(payment, "expired", { now: context.now })
          : cancelOrStay(payment)
    }
  }
  if (paidStatuses.has(payment.status)) {
    // A checkout never leaves paid at the provider: Open/Unpaid are older reads; Failed/Expired contradict.
    return state._tag === "Failed" || state._tag === "Expired" || state._tag === "Cancelled"
      ? flagged(
          payment,
          "unpaid_after_paid",
          `The provider reports the ${payment.status} payment's checkout ${state._tag.toLowerCase()}`
        )
      : unchanged(payment)
  }
  // failed, cancelled, expired: final, never reopened. Money taken for it is the operator's to refund.
  return state._tag === "Paid"
    ? flagged(payment, "paid_after_final", `The provider took the money of a ${payment.status} payment`)
    : unchanged(payment)
}

/**
 * A refund the provider had confirmed now failed (decisions §10): the refund becomes `failed`, `refunded_amount`
 * and the status are computed again (a payment with no succeeded refund left is `paid`), and no event is sent —
 * the merchant was told of the refund and no event name says "un-refunded"; the operator sees the discrepancy.
 */
export const failRefundAfterSuccess = (
  payment: Payment,
  refundId: RefundId,
  now: DateTime.Utc
): PaymentStateMachine.Transition => {
  const refunds = payment.refunds.map((refund) =>
    refund.id === refundId && refund.status === "succeeded"
      ? { ...refund, status: "failed" as const, confirmed_at: now }
      : refund
  )
  const refunded = refundedAmount(refunds)
  const status: PaymentStatus = refunded === 0 ? "paid" : refunded >= payment.amount ? "refunded" : "partially_refunded"
  return { payment: { ...payment, refunds, refunded_amount: refunded, status }, events: [] }
}

/**
 * A refund Kassa did not ask for (made in the provider's dashboard), recorded under the id the caller gave it with
 * reason "refunded at provider". Pending reserves its amount like Kassa's own pending refunds; succeeded moves the
 * payment and sends its event; failed or canceled is kept as `failed`, so that an older read saying `succeeded`
 * cannot record it later.
 */
export const recordProviderRefund = (
  payment: Payment,
  refund: RefundState,
  now: DateTime.Utc
): PaymentStateMachine.Transition => {
  const status = refund.status === "canceled" ? "failed" : refund.status
  const entry: Refund = {
    id: refund.refund_id,
    amount: refund.amount,
    status,
    reason: refundedAtProvider,
    created_at: refund.created_at,
    confirmed_at: status === "pending" ? null : now
  }
  // Oldest first (decisions §3), by the provider's time then id: the same place whichever answer is seen first.
  const later = payment.refunds.findIndex((other) => isBefore(entry, other))
  const refunds =
    later === -1
      ? [...payment.refunds, entry]
      : [...payment.refunds.slice(0, later), entry, ...payment.refunds.slice(later)]
  if (status !== "succeeded") return { payment: { ...payment, refunds }, events: [] }
  const refunded = refundedAmount(refunds)
  const next: PaymentStatus = refunded >= payment.amount ? "refunded" : "partially_refunded"
  return {
    payment: { ...payment, refunds, refunded_amount: refunded, status: next },
    events: [`payment.${next}` satisfies EventName]
  }
}

const isBefore = (a: Refund, b: Refund): boolean => {
  const order = DateTime.Order(a.created_at, b.created_at)
  return order < 0 || (order === 0 && a.id < b.id)
}

/** §10's table for a refund, Kassa's own or one made at the provider. */
const applyRefund = (payment: Payment, answer: RefundState, now: DateTime.Utc): Settlement => {
  const known = payment.refunds.find((refund) => refund.id === answer.refund_id)
  if (known === undefined) {
    // A refund before Kassa knows the payment paid: an older read of the checkout; read it again first.
    if (payment.status === "pending") return unchanged(payment, true)
    if (!paidStatuses.has(payment.status)) {
      return flagged(
        payment,
        "refund_not_recordable",
        `The provider reports a refund on a ${payment.status} payment`,
        answer.refund_id
      )
    }
    const movesMoney = answer.status === "pending" || answer.status === "succeeded"
    if (movesMoney && (!isRefundable(payment) || answer.amount > refundableAmount(payment))) {
      return flagged(
        payment,
        "refund_not_recordable",
        `The provider reports a refund of ${answer.amount} but ${refundableAmount(payment)} is refundable`,
        answer.refund_id
      )
    }
    return fromTransition(recordProviderRefund(payment, answer, now))
  }
  switch (known.status) {
    case "pending":
      if (answer.status === "pending") return unchanged(payment)
      return Result.match(
        PaymentStateMachine.resolveRefund(
          payment,
          known.id,
          answer.status === "succeeded" ? "succeeded" : "failed",
          now
        ),
        { onFailure: () => unchanged(payment), onSuccess: fromTransition }
      )
    case "succeeded":
      if (answer.status === "failed" || answer.status === "canceled") {
        return {
          ...fromTransition(failRefundAfterSuccess(payment, known.id, now)),
          discrepancy: {
            kind: "refund_failed_after_success",
            refund_id: known.id,
            message: `The provider reports the refund of ${known.amount}, confirmed before, as ${answer.status}`
          }
        }
      }
      return unchanged(payment)
    case "failed":
      // Failed is final at the provider too: a `succeeded` read is older than the failure.
      return unchanged(payment)
  }
}

/**
 * Applies one provider answer to a payment (decisions §10, "Settlement" and "Live refunds"). `visit` is the
 * checkout visit Kassa recorded for `payer` (null when the customer never came through Kassa's checkout URL).
 * No answer changes nothing and asks to be read again; it is never a failure.
 */
export const apply = (payment: Payment, answer: ProviderAnswer, context: SettlementContext): Settlement => {
  switch (answer._tag) {
    case "NoAnswer":
      return unchanged(payment, true)
    case "Unclosable":
      // Only ever an answer to a close ({@link decideClose}); read alone it says the checkout is still open.
      return unchanged(payment)
    case "Checkout":
      return applyCheckout(payment, answer.state, context)
    case "Refund":
      return applyRefund(payment, answer.refund, context.now)
  }
}

/**
 * What a checkout reading asks operators to look at besides its state (decisions §11's table): money the payer's
 * bank took back, and an authorization awaiting a capture Kassa does not make. Neither changes the payment; the
 * caller records each once (an open discrepancy with the same kind and message is not recorded again).
 */
export const attentionOf = (
  payment: Payment,
  reading: { readonly chargedBack: number; readonly awaitingCapture: boolean }
): ReadonlyArray<Discrepancy> => [
  ...(reading.chargedBack > 0
    ? [
        {
          kind: "charged_back" as const,
          refund_id: null,
          message: `The payer's bank took back ${formatPlain(reading.chargedBack, payment.currency)} of the ${payment.status} payment (a chargeback or dispute)`
        }
      ]
    : []),
  ...(reading.awaitingCapture && payment.status === "pending"
    ? [
        {
          kind: "awaiting_capture" as const,
          refund_id: null,
          message: "The provider holds an authorization that needs a capture; Kassa does not capture payments yet"
        }
      ]
    : [])
]

/**
 * A close request's outcome: the settlement to store (possibly unchanged), and for cancel the error to answer
 * (`null` → 200 with the payment).
 */
export interface CloseDecision {
  readonly settlement: Settlement
  readonly error: PaymentNotCancellable | ProviderError | null
}

const notCancellable = (status: PaymentStatus, why: string) =>
  new PaymentNotCancellable({ message: `A ${status} payment cannot be cancelled; ${why}`, status })

/**
 * "Expiry and cancel ask Stripe first" (decisions §10), decided from the provider's answer to the expire call (or
 * the read that follows a refused one):
 * - expired at the provider → `cancelled` or `expired`, with the event;
 * - paid (or failed) at the provider → that outcome is applied; cancel answers 409 `payment_not_cancellable` with
 *   the new status;
 * - still open, completed but unpaid (a delayed method in flight), or no answer → the payment is unchanged; cancel
 *   answers 502 `provider_error` (409 `payment_not_cancellable` with `pending` for an unpaid completed checkout:
 *   the money may still arrive, so asking again cannot help), expiry asks again later.
 * A payment that is not pending is not Kassa's to close: cancel answers rule 1's error, expiry does nothing — except
 * one this very close already closed (its `expired` event was applied first), which is this close's success.
 */
export const decideClose = (
  payment: Payment,
  purpose: ClosePurpose,
  answer: CloseAnswer,
  context: SettlementContext
): CloseDecision => {
  const closedAs: PaymentStatus = purpose === "cancel" ? "cancelled" : "expired"
  if (
    payment.status === closedAs &&
    answer._tag === "Checkout" &&
    (answer.state._tag === "Expired" || answer.state._tag === "Cancelled")
  ) {
    // The provider's `expired` event, applied with this close recorded, got there first: this close succeeded.
    return { settlement: unchanged(payment), error: null }
  }
  if (payment.status !== "pending") {
    return {
      settlement: unchanged(payment),
      error: purpose === "cancel" ? notCancellable(payment.status, "only pending payments can") : null
    }
  }
  const noDecision = (): CloseDecision => ({
    settlement: unchanged(payment, purpose === "expire"),
    error:
      purpose === "cancel"
        ? new ProviderError({ message: "The payment provider did not close the payment; it is unchanged" })
        : null
  })
  if (answer._tag === "NoAnswer") return noDecision()
  if (answer._tag === "Unclosable") {
    // The provider keeps the checkout payable until its own expiry (decisions §11): a cancel is honoured in Kassa
    // alone (the caller keeps reading the provider; money taken later is a `paid_after_final` discrepancy), an
    // expiry waits for the provider's time.
    if (purpose === "expire") return { settlement: unchanged(payment, true), error: null }
    return Result.match(PaymentStateMachine.cancel(payment), {
      onFailure: (error) => ({ settlement: unchanged(payment), error }),
      onSuccess: (transition) => ({ settlement: fromTransition(transition), error: null })
    })
  }
  const state = answer.state
  switch (state._tag) {
    case "Cancelled":
    case "Expired": {
      if (purpose === "expire")
        return { settlement: settleOrStay(payment, "expired", { now: context.now }), error: null }
      return Result.match(PaymentStateMachine.cancel(payment), {
        onFailure: (error) => ({ settlement: unchanged(payment), error }),
        onSuccess: (transition) => ({ settlement: fromTransition(transition), error: null })
      })
    }
    case "Paid":
    case "Failed": {
      const settlement = applyCheckout(payment, state, context)
      const status = settlement.payment.status
      return {
        settlement,
        error: purpose === "cancel" ? notCancellable(status, "the payment provider had already decided it") : null
      }
    }
    case "Unpaid":
      return purpose === "cancel"
        ? {
            settlement: unchanged(payment),
            error: notCancellable("pending", "the customer completed the checkout and the money may still arrive")
          }
        : { settlement: unchanged(payment, true), error: null }
    case "Open":
      return noDecision()
  }
}

/**
 * A live create that never stored its provider's answer (the process died between the provider call and the commit,
 * or the answer was lost), decided by the background clean-up from what the provider has for the payment now
 * (decisions §10 and docs/decisions.md "Live create"): the clean-up first expires any open checkout it finds, so
 * - no checkout at the provider, or one open, expired or failed → the payment is `failed` with its event: nobody was
 *   ever sent to that checkout (Kassa never stored its address), and a create the provider did not confirm is a
 *   failed one, as when it does not answer at all;
 * - a checkout paid, or completed and unpaid (a delayed method) → adopted: applied as any answer ({@link apply}),
 *   since money has moved or may still arrive.
 * A payment no longer pending is left as it is (a merchant's retry finished opening it meanwhile).
 */
export const decideUnopened = (
  payment: Payment,
  found: CheckoutState | null,
  context: SettlementContext
): Settlement & { readonly adopt: boolean } => {
  if (found !== null && (found._tag === "Paid" || found._tag === "Unpaid")) {
    return { ...apply(payment, { _tag: "Checkout", state: found }, context), adopt: true }
  }
  return { ...settleOrStay(payment, "failed", { now: context.now }), adopt: false }
}
