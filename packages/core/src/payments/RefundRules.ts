/**
 * Refund rules (specification rules 2–4, decisions §1 and §3). The refundable amount is
 * `amount − succeeded − pending`, so a pending live refund already reserves its share and two refunds can
 * never together exceed the payment.
 */
import { Result } from "effect"
import type { Mode } from "../domain/Mode.ts"
import type { Payment, Refund } from "../domain/Payment.ts"
import { PaymentNotRefundable, RefundAmountExceedsRefundable, RefundsProcessedManually } from "../errors/ApiError.ts"

const sumOf = (refunds: ReadonlyArray<Refund>, status: Refund["status"]): number =>
  refunds.reduce((total, refund) => (refund.status === status ? total + refund.amount : total), 0)

/** `refunded_amount`: the sum of succeeded refunds. */
export const refundedAmount = (refunds: ReadonlyArray<Refund>): number => sumOf(refunds, "succeeded")

/** What may still be refunded: the amount less succeeded and pending refunds. */
export const refundableAmount = (payment: Pick<Payment, "amount" | "refunds">): number =>
  payment.amount - sumOf(payment.refunds, "succeeded") - sumOf(payment.refunds, "pending")

/** Only paid or partially refunded payments can be refunded (rule 2). */
export const isRefundable = (payment: Pick<Payment, "status">): boolean =>
  payment.status === "paid" || payment.status === "partially_refunded"

/**
 * The amount of a new refund: the requested amount, or by default everything refundable. Checks rule 2,
 * then rule 3 — the order of decisions §1 after the mode check.
 */
export const refundAmount = (
  payment: Pick<Payment, "amount" | "refunds" | "status">,
  requested: number | undefined
): Result.Result<number, PaymentNotRefundable | RefundAmountExceedsRefundable> => {
  if (!isRefundable(payment)) {
    return Result.fail(
      new PaymentNotRefundable({
        message: `A ${payment.status} payment cannot be refunded; only paid or partially_refunded payments can`,
        status: payment.status
      })
    )
  }
  const refundable = refundableAmount(payment)
  const amount = requested ?? refundable
  // A default of 0 (everything already refunded or reserved by pending refunds) is refused like any excess.
  if (amount > refundable || amount < 1) {
    return Result.fail(
      new RefundAmountExceedsRefundable({
        message: `The refund exceeds the refundable amount of ${refundable}`,
        refundable_amount: refundable
      })
    )
  }
  return Result.succeed(amount)
}

/**
 * The API's refund check in the order of decisions §1 (after 404): a live key gets
 * `refunds_processed_manually` (live refunds are requested in the dashboard), then rules 2 and 3.
 */
export const checkApiRefund = (
  payment: Pick<Payment, "amount" | "refunds" | "status">,
  keyMode: Mode,
  requested: number | undefined,
  docsUrl: string
): Result.Result<number, RefundsProcessedManually | PaymentNotRefundable | RefundAmountExceedsRefundable> =>
  keyMode === "live"
    ? Result.fail(
        new RefundsProcessedManually({
          message: "Live refunds are requested from the application dashboard and confirmed by the provider",
          docs_url: docsUrl
        })
      )
    : refundAmount(payment, requested)
