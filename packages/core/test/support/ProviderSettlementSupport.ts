/**
 * Shared by ProviderSettlementExamples.test.ts and ProviderSettlementProperties.test.ts: the moment and visit answers
 * are applied with, every checkout answer a provider can give, a refund answer, and applying answers in turn.
 */
import { DateTime, Result } from "effect"
import type { RefundId } from "../../src/domain/Ids.ts"
import type { Payment } from "../../src/domain/Payment.ts"
import type { CheckoutState, ProviderAnswer, ProviderRefundStatus } from "../../src/providers/ProviderSettlement.ts"
import * as ProviderSettlement from "../../src/providers/ProviderSettlement.ts"
import { t0 } from "./payments.ts"

export const now = DateTime.add(t0, { minutes: 5 })
export const visit = { ip: "203.0.113.9", user_agent: "Browser/1" }
export const context = { now, visit }
export const customer = { name: "Ada Lovelace", email: "ada@example.com", phone: null }

const checkout = (state: CheckoutState): ProviderSettlement.CloseAnswer => ({ _tag: "Checkout", state })
export const open = checkout({ _tag: "Open" })
export const paidAnswer = checkout({ _tag: "Paid", customer })
export const unpaid = checkout({ _tag: "Unpaid" })
export const asyncFailed = checkout({ _tag: "Failed" })
export const expired = checkout({ _tag: "Expired" })
export const cancelledAnswer = checkout({ _tag: "Cancelled" })
export const unclosable: ProviderSettlement.CloseAnswer = {
  _tag: "Unclosable",
  expires_at: DateTime.add(t0, { minutes: 15 })
}
export const noAnswer: ProviderSettlement.CloseAnswer = { _tag: "NoAnswer", reason: "timeout" }
export const refundAnswer = (
  id: RefundId,
  amount: number,
  status: ProviderRefundStatus,
  createdAt = t0
): ProviderAnswer => ({
  _tag: "Refund",
  refund: { refund_id: id, provider_refund_id: `re_${id}`, amount, status, created_at: createdAt }
})

export const ok = <A, E>(result: Result.Result<A, E>): A => {
  if (Result.isFailure(result)) throw new Error(`expected success, got ${JSON.stringify(result.failure)}`)
  return result.success
}

export const applyAll = (payment: Payment, answers: ReadonlyArray<ProviderAnswer>): Payment =>
  answers.reduce((current, answer) => ProviderSettlement.apply(current, answer, context).payment, payment)
