/**
 * The payment state machine as pure functions (specification, "States and transitions"; decisions §3, §6).
 * Each returns the new payment and the events it emits, or the contract's error. Callers persist the
 * payment and its events in one transaction.
 *
 * Callers first pass a loaded payment through {@link observe}: no reader ever sees `pending` after
 * `expires_at`, so a payment found past it is expired at that moment, with its event, whatever the
 * caller then asks.
 */
import { DateTime, Result, Schema } from "effect"
import type { PaymentId, RefundId } from "../domain/Ids.ts"
import type { Mode } from "../domain/Mode.ts"
import type { Method } from "../domain/Money.ts"
import type { Payer, Payment, PaymentStatus, Refund } from "../domain/Payment.ts"
import { type EventName, eventForStatus } from "../domain/WebhookEvent.ts"
import {
  PaymentNotCancellable,
  PaymentNotPending,
  type PaymentNotRefundable,
  type RefundAmountExceedsRefundable
} from "../errors/ApiError.ts"
import type { PaymentDraft } from "./CreatePayment.ts"
import { refundAmount, refundedAmount } from "./RefundRules.ts"

/** A payment after a change, and the events the change sends (in order). */
export interface Transition {
  readonly payment: Payment
  readonly events: ReadonlyArray<EventName>
}

const unchanged = (payment: Payment): Transition => ({ payment, events: [] })

/** Moves to `status`, emitting that status's event. */
const moveTo = (payment: Payment, status: PaymentStatus, changes: Partial<Payment> = {}): Transition => {
  const next: Payment = { ...payment, ...changes, status }
  const event = eventForStatus(status)
  return { payment: next, events: event === null ? [] : [event] }
}

/** How the provider (or the simulator) answered the create call. */
export type ProviderAnswer = "accepted" | "refused"

/**
 * Create: `pending` when the provider accepts (no event), `failed` with `payment.failed` when it refuses
 * or does not answer (the caller answers 502 `provider_error` with the payment's id).
 */
export const create = (input: {
  readonly id: PaymentId
  readonly mode: Mode
  readonly draft: PaymentDraft
  readonly checkoutUrl: string
  readonly ttlSeconds: number
  readonly now: DateTime.Utc
  readonly provider: ProviderAnswer
}): Transition => {
  const payment: Payment = {
    id: input.id,
    status: "pending",
    mode: input.mode,
    ...input.draft,
    refunded_amount: 0,
    payer: null,
    checkout_url: input.checkoutUrl,
    expires_at: DateTime.add(input.now, { seconds: input.ttlSeconds }),
    paid_at: null,
    created_at: input.now,
    refunds: []
  }
  return input.provider === "accepted" ? unchanged(payment) : moveTo(payment, "failed")
}

/** Whether a pending payment has reached its expiry time (a list's summary of a payment will do). */
export const isDue = (payment: Pick<Payment, "status" | "expires_at">, now: DateTime.Utc): boolean =>
  payment.status === "pending" && DateTime.isGreaterThanOrEqualTo(now, payment.expires_at)

/** Lazy expiry: a pending payment past `expires_at` becomes `expired` (with `payment.expired`) when seen. */
export const observe = (payment: Payment, now: DateTime.Utc): Transition =>
  isDue(payment, now) ? moveTo(payment, "expired") : unchanged(payment)

/**
 * The batch form of {@link observe} (the expiry sweeper, a list expiring the rows it shows): the transition of each
 * payment that is due, in the given order; the others are left out, unchanged.
 */
export const expireDue = (payments: ReadonlyArray<Payment>, now: DateTime.Utc): ReadonlyArray<Transition> =>
  payments.flatMap((payment) => {
    const transition = observe(payment, now)
    return transition.events.length === 0 ? [] : [transition]
  })

/** Rule 1: only a pending payment can be cancelled; a paid payment never is. */
export const cancel = (payment: Payment): Result.Result<Transition, PaymentNotCancellable> =>
  payment.status === "pending"
    ? Result.succeed(moveTo(payment, "cancelled"))
    : Result.fail(
        new PaymentNotCancellable({
          message: `A ${payment.status} payment cannot be cancelled; only pending payments can`,
          status: payment.status
        })
      )

/** Outcomes of a checkout or of the test simulator. */
export type Outcome = "paid" | "failed" | "expired"

/**
 * The simulator and the hosted checkout decide a pending payment: paid (with `paid_at`), failed, or
 * expired. Pay and Fail from the checkout record the payer and the method the payer chose (the checkout
 * offers a choice when the application has several); the API's simulate has neither.
 */
export const settle = (
  payment: Payment,
  outcome: Outcome,
  options: { readonly now: DateTime.Utc; readonly payer?: Payer | null; readonly method?: Method | undefined }
): Result.Result<Transition, PaymentNotPending> => {
  if (payment.status !== "pending") {
    return Result.fail(
      new PaymentNotPending({ message: `The payment is ${payment.status}, not pending`, status: payment.status })
    )
  }
  if (outcome === "expired") return Result.succeed(moveTo(payment, "expired"))
  return Result.succeed(
    moveTo(payment, outcome, {
      payer: options.payer ?? payment.payer,
      method: options.method ?? payment.method,
      ...(outcome === "paid" ? { paid_at: options.now } : {})
    })
  )
}

/** The status that agrees with the refunds: whole amount refunded → `refunded`, some → `partially_refunded`. */
const statusAfterRefunds = (payment: Payment, refunds: ReadonlyArray<Refund>): PaymentStatus => {
  const refunded = refundedAmount(refunds)
  if (refunded === 0) return payment.status
  return refunded >= payment.amount ? "refunded" : "partially_refunded"
}

/** Applies succeeded refunds to the status; each confirmed refund sends its event, partial ones again each time. */
const withRefunds = (payment: Payment, refunds: ReadonlyArray<Refund>): Transition =>
  moveTo(payment, statusAfterRefunds(payment, refunds), { refunds, refunded_amount: refundedAmount(refunds) })

/**
 * A refund request (rules 2–4). Test refunds succeed at once and send their event in the same moment;
 * live refunds are `pending` until the provider confirms them and send nothing now (rule 4).
 * The mode check of the API (`refunds_processed_manually`) is `RefundRules.checkApiRefund`.
 */
export const requestRefund = (
  payment: Payment,
  request: {
    readonly refundId: RefundId
    readonly amount?: number | undefined
    readonly reason: string | null
    readonly now: DateTime.Utc
  }
): Result.Result<Transition, PaymentNotRefundable | RefundAmountExceedsRefundable> =>
  refundAmount(payment, request.amount).pipe(
    Result.map((amount): Transition => {
      const immediate = payment.mode === "test"
      const refund: Refund = {
        id: request.refundId,
        amount,
        status: immediate ? "succeeded" : "pending",
        reason: request.reason,
        created_at: request.now,
        confirmed_at: immediate ? request.now : null
      }
      const refunds = [...payment.refunds, refund]
      return immediate ? withRefunds(payment, refunds) : unchanged({ ...payment, refunds })
    })
  )

/** Why a refund confirmation does not apply. */
export class RefundNotPending extends Schema.TaggedError<RefundNotPending>()("RefundNotPending", {
  refund_id: Schema.String
}) {}

/**
 * The provider's answer to a pending (live) refund: `succeeded` moves the payment to partially_refunded
 * or refunded and sends the event; `failed` releases the reserved amount and sends nothing.
 */
export const resolveRefund = (
  payment: Payment,
  refundId: RefundId,
  result: "succeeded" | "failed",
  now: DateTime.Utc
): Result.Result<Transition, RefundNotPending> => {
  const target = payment.refunds.find((refund) => refund.id === refundId)
  if (target === undefined || target.status !== "pending")
    return Result.fail(new RefundNotPending({ refund_id: refundId }))
  const refunds = payment.refunds.map((refund) =>
    refund.id === refundId ? { ...refund, status: result, confirmed_at: now } : refund
  )
  return result === "succeeded"
    ? Result.succeed(withRefunds(payment, refunds))
    : Result.succeed(unchanged({ ...payment, refunds }))
}
