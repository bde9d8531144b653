import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as PaymentStateMachine from "../src/payments/PaymentStateMachine.ts"
import * as RefundRules from "../src/payments/RefundRules.ts"
import { paidPayment, pendingPayment, refundId, t0 } from "./support/payments.ts"

const docsUrl = "http://localhost:4000/docs/refunds"
const failureTag = <A, E extends { _tag: string }>(result: Result.Result<A, E>) =>
  Result.isFailure(result) ? result.failure._tag : "success"

describe("check order of the API refund (decisions §1)", () => {
  it("a live key gets refunds_processed_manually with docs_url, before any other check", () => {
    for (const payment of [paidPayment({ mode: "live" }), pendingPayment({ mode: "live" })]) {
      const result = RefundRules.checkApiRefund(payment, "live", 10 ** 9, docsUrl)
      assert.strictEqual(failureTag(result), "RefundsProcessedManually")
      if (Result.isFailure(result) && result.failure._tag === "RefundsProcessedManually") {
        assert.strictEqual(result.failure.docs_url, docsUrl)
      }
    }
  })
  it("then payment_not_refundable with the status, before the amount check", () => {
    const result = RefundRules.checkApiRefund(pendingPayment(), "test", 10 ** 9, docsUrl)
    assert.strictEqual(failureTag(result), "PaymentNotRefundable")
  })
  it("then refund_amount_exceeds_refundable", () => {
    assert.strictEqual(
      failureTag(RefundRules.checkApiRefund(paidPayment(), "test", 10_001, docsUrl)),
      "RefundAmountExceedsRefundable"
    )
  })
  it("a test key may refund up to the refundable amount; the default is all of it", () => {
    assert.deepStrictEqual(RefundRules.checkApiRefund(paidPayment(), "test", 10_000, docsUrl), Result.succeed(10_000))
    assert.deepStrictEqual(
      RefundRules.checkApiRefund(paidPayment(), "test", undefined, docsUrl),
      Result.succeed(10_000)
    )
  })
})

describe("refundable amount", () => {
  it("is amount − succeeded − pending", () => {
    const live = paidPayment({ mode: "live", amount: 1000 })
    const pending = Result.getOrThrow(
      PaymentStateMachine.requestRefund(live, { refundId: refundId(), amount: 300, reason: null, now: t0 })
    )
    assert.strictEqual(RefundRules.refundableAmount(pending.payment), 700)
    const id = pending.payment.refunds[0]?.id
    if (id === undefined) throw new Error("refund expected")
    const confirmed = Result.getOrThrow(PaymentStateMachine.resolveRefund(pending.payment, id, "succeeded", t0))
    assert.strictEqual(RefundRules.refundableAmount(confirmed.payment), 700)
    assert.strictEqual(RefundRules.refundedAmount(confirmed.payment.refunds), 300)
  })

  it("nothing left to refund: the default amount is refused with refundable_amount 0", () => {
    const live = paidPayment({ mode: "live", amount: 1000 })
    const reserved = Result.getOrThrow(
      PaymentStateMachine.requestRefund(live, { refundId: refundId(), reason: null, now: t0 })
    )
    const result = RefundRules.refundAmount(reserved.payment, undefined)
    assert.strictEqual(failureTag(result), "RefundAmountExceedsRefundable")
    if (Result.isFailure(result) && result.failure._tag === "RefundAmountExceedsRefundable") {
      assert.strictEqual(result.failure.refundable_amount, 0)
    }
  })

  it("any sequence of refund requests never reserves more than the amount (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.array(fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined })),
        (amount, requests) => {
          let payment = paidPayment({ mode: "live", amount })
          for (const requested of requests) {
            const result = PaymentStateMachine.requestRefund(payment, {
              refundId: refundId(),
              amount: requested,
              reason: null,
              now: t0
            })
            if (Result.isSuccess(result)) payment = result.success.payment
          }
          const reserved = payment.refunds.reduce((sum, refund) => sum + refund.amount, 0)
          assert.isAtMost(reserved, amount)
          assert.strictEqual(RefundRules.refundableAmount(payment), amount - reserved)
        }
      )
    )
  })
})
