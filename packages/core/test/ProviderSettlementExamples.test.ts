/**
 * How the provider's answers settle a payment, case by case (decisions §10, §11): a checkout's states, a refund's
 * states, cancel and expiry asking the provider first, a provider that reports cancelled or will not close (Mollie),
 * and the clean-up of a live create that never stored its provider's answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime } from "effect"
import * as PaymentStateMachine from "../src/payments/PaymentStateMachine.ts"
import { refundableAmount } from "../src/payments/RefundRules.ts"
import * as ProviderSettlement from "../src/providers/ProviderSettlement.ts"
import {
  applyAll,
  asyncFailed,
  cancelledAnswer,
  context,
  customer,
  expired,
  noAnswer,
  now,
  ok,
  open,
  paidAnswer,
  refundAnswer,
  unclosable,
  unpaid,
  visit
} from "./support/ProviderSettlementSupport.ts"
import { paidPayment, pendingPayment, refundId, t0 } from "./support/payments.ts"

/** A live payment with one pending refund Kassa asked for. */
const withPendingRefund = (amount: number, options: { paymentAmount?: number } = {}) => {
  const id = refundId()
  const payment = ok(
    PaymentStateMachine.requestRefund(paidPayment({ mode: "live", amount: options.paymentAmount ?? 10_000 }), {
      refundId: id,
      amount,
      reason: null,
      now: t0
    })
  ).payment
  return { id, payment }
}

describe("a checkout's state (decisions §10, Settlement)", () => {
  it("complete and paid → paid with payment.paid; payer from the provider's customer details and Kassa's visit", () => {
    const settlement = ProviderSettlement.apply(pendingPayment({ mode: "live" }), paidAnswer, context)
    assert.strictEqual(settlement.payment.status, "paid")
    assert.deepStrictEqual(settlement.events, ["payment.paid"])
    assert.deepStrictEqual(settlement.payment.payer, { ...customer, ...visit })
    assert.isTrue(DateTime.Equivalence(settlement.payment.paid_at ?? t0, now))
    assert.isNull(settlement.discrepancy)
  })

  it("paid without a recorded visit: the payer's ip and user_agent are empty (the schema has no null yet)", () => {
    const settlement = ProviderSettlement.apply(pendingPayment({ mode: "live" }), paidAnswer, { now, visit: null })
    assert.deepStrictEqual(settlement.payment.payer, { ...customer, ip: "", user_agent: "" })
  })

  it("complete but unpaid (a delayed method) stays pending with no event", () => {
    const payment = pendingPayment({ mode: "live" })
    const settlement = ProviderSettlement.apply(payment, unpaid, context)
    assert.deepStrictEqual(settlement.payment, payment)
    assert.deepStrictEqual(settlement.events, [])
  })

  it("an async payment failure → failed with payment.failed", () => {
    const settlement = ProviderSettlement.apply(pendingPayment({ mode: "live" }), asyncFailed, context)
    assert.strictEqual(settlement.payment.status, "failed")
    assert.deepStrictEqual(settlement.events, ["payment.failed"])
  })

  it("expired at the provider → expired with payment.expired", () => {
    const settlement = ProviderSettlement.apply(pendingPayment({ mode: "live" }), expired, context)
    assert.strictEqual(settlement.payment.status, "expired")
    assert.deepStrictEqual(settlement.events, ["payment.expired"])
  })

  it("an open checkout leaves a pending payment pending, even past its expires_at (the provider decides)", () => {
    const payment = pendingPayment({ mode: "live" })
    const settlement = ProviderSettlement.apply(payment, open, { now: DateTime.add(t0, { hours: 3 }), visit })
    assert.deepStrictEqual(settlement.payment, payment)
  })

  it("no answer is its own outcome: nothing changes, nothing is failed, the caller asks again", () => {
    for (const payment of [pendingPayment({ mode: "live" }), withPendingRefund(100).payment]) {
      const settlement = ProviderSettlement.apply(payment, noAnswer, context)
      assert.deepStrictEqual(settlement.payment, payment)
      assert.deepStrictEqual(settlement.events, [])
      assert.isTrue(settlement.askAgain)
    }
  })

  it("money taken for a payment Kassa had closed changes nothing and is flagged for the operator", () => {
    const cancelled = ok(PaymentStateMachine.cancel(pendingPayment({ mode: "live" }))).payment
    const settlement = ProviderSettlement.apply(cancelled, paidAnswer, context)
    assert.deepStrictEqual(settlement.payment, cancelled)
    assert.deepStrictEqual(settlement.events, [])
    assert.strictEqual(settlement.discrepancy?.kind, "paid_after_final")
  })

  it("a paid payment the provider reports expired stays paid and is flagged", () => {
    const paid = paidPayment({ mode: "live" })
    const settlement = ProviderSettlement.apply(paid, expired, context)
    assert.deepStrictEqual(settlement.payment, paid)
    assert.strictEqual(settlement.discrepancy?.kind, "unpaid_after_paid")
  })
})

describe("a refund's state (decisions §10, Live refunds)", () => {
  it("succeeded → the refund succeeds and the payment is partially_refunded with its event", () => {
    const { id, payment } = withPendingRefund(2_500)
    const settlement = ProviderSettlement.apply(payment, refundAnswer(id, 2_500, "succeeded"), context)
    assert.strictEqual(settlement.payment.status, "partially_refunded")
    assert.strictEqual(settlement.payment.refunded_amount, 2_500)
    assert.deepStrictEqual(settlement.events, ["payment.partially_refunded"])
  })

  it("succeeded for the whole amount → refunded with payment.refunded", () => {
    const { id, payment } = withPendingRefund(10_000)
    const settlement = ProviderSettlement.apply(payment, refundAnswer(id, 10_000, "succeeded"), context)
    assert.strictEqual(settlement.payment.status, "refunded")
    assert.deepStrictEqual(settlement.events, ["payment.refunded"])
  })

  it.each(["failed", "canceled"] as const)("%s → the refund fails, its amount is released, no event", (status) => {
    const { id, payment } = withPendingRefund(2_500)
    assert.strictEqual(refundableAmount(payment), 7_500)
    const settlement = ProviderSettlement.apply(payment, refundAnswer(id, 2_500, status), context)
    assert.strictEqual(settlement.payment.refunds[0]?.status, "failed")
    assert.strictEqual(settlement.payment.status, "paid")
    assert.strictEqual(refundableAmount(settlement.payment), 10_000)
    assert.deepStrictEqual(settlement.events, [])
    assert.isNull(settlement.discrepancy)
  })

  it("pending → nothing changes", () => {
    const { id, payment } = withPendingRefund(2_500)
    assert.deepStrictEqual(
      ProviderSettlement.apply(payment, refundAnswer(id, 2_500, "pending"), context).payment,
      payment
    )
  })

  it("failed after it had succeeded → failed, amount and status computed again, no event, a discrepancy", () => {
    const { id, payment } = withPendingRefund(10_000)
    const refunded = ProviderSettlement.apply(payment, refundAnswer(id, 10_000, "succeeded"), context).payment
    assert.strictEqual(refunded.status, "refunded")
    const settlement = ProviderSettlement.apply(refunded, refundAnswer(id, 10_000, "failed"), context)
    assert.strictEqual(settlement.payment.status, "paid")
    assert.strictEqual(settlement.payment.refunded_amount, 0)
    assert.strictEqual(settlement.payment.refunds[0]?.status, "failed")
    assert.deepStrictEqual(settlement.events, [])
    assert.deepStrictEqual(settlement.discrepancy?.kind, "refund_failed_after_success")
    assert.strictEqual(settlement.discrepancy?.refund_id, id)
  })

  it("failed after success with another refund still standing → partially_refunded", () => {
    const first = withPendingRefund(3_000)
    const second = refundId()
    const both = ok(
      PaymentStateMachine.requestRefund(first.payment, { refundId: second, amount: 2_000, reason: null, now: t0 })
    ).payment
    const done = applyAll(both, [refundAnswer(first.id, 3_000, "succeeded"), refundAnswer(second, 2_000, "succeeded")])
    const settlement = ProviderSettlement.apply(done, refundAnswer(first.id, 3_000, "failed"), context)
    assert.strictEqual(settlement.payment.status, "partially_refunded")
    assert.strictEqual(settlement.payment.refunded_amount, 2_000)
  })

  it("a refund made at the provider is recorded as succeeded with reason 'refunded at provider' and its event", () => {
    const paid = paidPayment({ mode: "live" })
    const id = refundId()
    const settlement = ProviderSettlement.apply(paid, refundAnswer(id, 4_000, "succeeded"), context)
    assert.strictEqual(settlement.payment.status, "partially_refunded")
    assert.strictEqual(settlement.payment.refunded_amount, 4_000)
    assert.deepStrictEqual(settlement.events, ["payment.partially_refunded"])
    const entry = settlement.payment.refunds[0]
    assert.strictEqual(entry?.id, id)
    assert.strictEqual(entry?.reason, "refunded at provider")
    assert.strictEqual(entry?.status, "succeeded")
    // Seen again: the same refund, recorded once.
    const again = ProviderSettlement.apply(settlement.payment, refundAnswer(id, 4_000, "succeeded"), context)
    assert.deepStrictEqual(again.payment, settlement.payment)
    assert.deepStrictEqual(again.events, [])
  })

  it("a refund at the provider beyond what Kassa holds refundable is not recorded but flagged", () => {
    const { payment } = withPendingRefund(8_000)
    const settlement = ProviderSettlement.apply(payment, refundAnswer(refundId(), 4_000, "succeeded"), context)
    assert.deepStrictEqual(settlement.payment, payment)
    assert.strictEqual(settlement.discrepancy?.kind, "refund_not_recordable")
  })

  it("a refund answer for a payment Kassa still has pending asks to read the checkout first", () => {
    const payment = pendingPayment({ mode: "live" })
    const settlement = ProviderSettlement.apply(payment, refundAnswer(refundId(), 100, "succeeded"), context)
    assert.deepStrictEqual(settlement.payment, payment)
    assert.isTrue(settlement.askAgain)
  })
})

describe("expiry and cancel ask the provider first (decisions §10)", () => {
  const pending = () => pendingPayment({ mode: "live" })

  it("cancel, expired at the provider → cancelled with payment.cancelled", () => {
    const decision = ProviderSettlement.decideClose(pending(), "cancel", expired, context)
    assert.isNull(decision.error)
    assert.strictEqual(decision.settlement.payment.status, "cancelled")
    assert.deepStrictEqual(decision.settlement.events, ["payment.cancelled"])
  })

  it("cancel, already paid at the provider → paid (with payment.paid) and 409 payment_not_cancellable, status paid", () => {
    const decision = ProviderSettlement.decideClose(pending(), "cancel", paidAnswer, context)
    assert.strictEqual(decision.settlement.payment.status, "paid")
    assert.deepStrictEqual(decision.settlement.events, ["payment.paid"])
    assert.strictEqual(decision.error?._tag, "PaymentNotCancellable")
    assert.strictEqual(decision.error?._tag === "PaymentNotCancellable" ? decision.error.status : null, "paid")
  })

  it("cancel, no answer → 502 provider_error and the payment unchanged", () => {
    const payment = pending()
    const decision = ProviderSettlement.decideClose(
      payment,
      "cancel",
      { _tag: "NoAnswer", reason: "unavailable" },
      context
    )
    assert.strictEqual(decision.error?._tag, "ProviderError")
    assert.deepStrictEqual(decision.settlement.payment, payment)
    assert.deepStrictEqual(decision.settlement.events, [])
  })

  it("cancel, completed but unpaid → 409 with status pending, the payment unchanged", () => {
    const payment = pending()
    const decision = ProviderSettlement.decideClose(payment, "cancel", unpaid, context)
    assert.strictEqual(decision.error?._tag === "PaymentNotCancellable" ? decision.error.status : null, "pending")
    assert.deepStrictEqual(decision.settlement.payment, payment)
  })

  it("the provider's expired event applied while a cancel is recorded → cancelled, and the cancel then succeeds", () => {
    const payment = pending()
    const early = ProviderSettlement.apply(payment, expired, { ...context, closing: "cancel" })
    assert.strictEqual(early.payment.status, "cancelled")
    assert.deepStrictEqual(early.events, ["payment.cancelled"])
    const decision = ProviderSettlement.decideClose(early.payment, "cancel", expired, context)
    assert.isNull(decision.error)
    assert.deepStrictEqual(decision.settlement.events, [])
  })

  it("without a recorded cancel the same event is Stripe's own expiry → expired", () => {
    const settlement = ProviderSettlement.apply(pending(), expired, { ...context, closing: "expire" })
    assert.strictEqual(settlement.payment.status, "expired")
  })

  it("cancel of a payment that is not pending answers rule 1's error without a change", () => {
    const paid = paidPayment({ mode: "live" })
    const decision = ProviderSettlement.decideClose(paid, "cancel", expired, context)
    assert.strictEqual(decision.error?._tag, "PaymentNotCancellable")
    assert.deepStrictEqual(decision.settlement.payment, paid)
  })

  it("expiry, expired at the provider → expired with payment.expired", () => {
    const decision = ProviderSettlement.decideClose(pending(), "expire", expired, context)
    assert.isNull(decision.error)
    assert.strictEqual(decision.settlement.payment.status, "expired")
    assert.deepStrictEqual(decision.settlement.events, ["payment.expired"])
  })

  it("expiry, already paid → paid, no error", () => {
    const decision = ProviderSettlement.decideClose(pending(), "expire", paidAnswer, context)
    assert.isNull(decision.error)
    assert.strictEqual(decision.settlement.payment.status, "paid")
    assert.deepStrictEqual(decision.settlement.events, ["payment.paid"])
  })

  it.each([
    ["no answer", noAnswer],
    ["completed but unpaid", unpaid],
    ["still open", open]
  ] as const)("expiry, %s → stays pending and asks again", (_, answer) => {
    const payment = pending()
    const decision = ProviderSettlement.decideClose(payment, "expire", answer, context)
    assert.isNull(decision.error)
    assert.deepStrictEqual(decision.settlement.payment, payment)
    assert.isTrue(decision.settlement.askAgain)
  })
})

describe("a provider that says cancelled, or will not close (decisions §11, Mollie)", () => {
  it("cancelled at the provider (the customer) → cancelled with payment.cancelled", () => {
    const settlement = ProviderSettlement.apply(pendingPayment({ mode: "live" }), cancelledAnswer, context)
    assert.strictEqual(settlement.payment.status, "cancelled")
    assert.deepStrictEqual(settlement.events, ["payment.cancelled"])
  })

  it("cancelled at the provider after Kassa's expiry asked for it → expired with payment.expired", () => {
    const settlement = ProviderSettlement.apply(pendingPayment({ mode: "live" }), cancelledAnswer, {
      ...context,
      closing: "expire"
    })
    assert.strictEqual(settlement.payment.status, "expired")
    assert.deepStrictEqual(settlement.events, ["payment.expired"])
  })

  it("a paid payment the provider reports cancelled stays paid and is flagged", () => {
    const settlement = ProviderSettlement.apply(paidPayment({ mode: "live" }), cancelledAnswer, context)
    assert.strictEqual(settlement.payment.status, "paid")
    assert.strictEqual(settlement.discrepancy?.kind, "unpaid_after_paid")
  })

  it("cancel the provider cannot carry out is honoured in Kassa: cancelled with its event, no error", () => {
    const decision = ProviderSettlement.decideClose(pendingPayment({ mode: "live" }), "cancel", unclosable, context)
    assert.isNull(decision.error)
    assert.strictEqual(decision.settlement.payment.status, "cancelled")
    assert.deepStrictEqual(decision.settlement.events, ["payment.cancelled"])
  })

  it("paid at the provider after such a cancel: stays cancelled, flagged 'paid after final' for a person to refund", () => {
    const cancelled = ProviderSettlement.decideClose(pendingPayment({ mode: "live" }), "cancel", unclosable, context)
    const later = ProviderSettlement.apply(cancelled.settlement.payment, paidAnswer, context)
    assert.strictEqual(later.payment.status, "cancelled")
    assert.deepStrictEqual(later.events, [])
    assert.strictEqual(later.discrepancy?.kind, "paid_after_final")
  })

  it("expiry the provider cannot carry out leaves the payment pending and asks again (at the provider's expiry)", () => {
    const payment = pendingPayment({ mode: "live" })
    const decision = ProviderSettlement.decideClose(payment, "expire", unclosable, context)
    assert.isNull(decision.error)
    assert.deepStrictEqual(decision.settlement.payment, payment)
    assert.isTrue(decision.settlement.askAgain)
  })

  it("an unclosable answer read alone changes nothing", () => {
    const payment = pendingPayment({ mode: "live" })
    assert.deepStrictEqual(ProviderSettlement.apply(payment, unclosable, context).payment, payment)
  })

  it("chargebacks and authorizations awaiting capture are listed for operators; the payment does not change", () => {
    const paid = paidPayment({ mode: "live", amount: 2_500 })
    const [chargeback, ...rest] = ProviderSettlement.attentionOf(paid, { chargedBack: 2_500, awaitingCapture: false })
    assert.strictEqual(chargeback?.kind, "charged_back")
    assert.include(chargeback?.message ?? "", "25.00")
    assert.deepStrictEqual(rest, [])
    const pending = pendingPayment({ mode: "live" })
    const held = ProviderSettlement.attentionOf(pending, { chargedBack: 0, awaitingCapture: true })
    assert.deepStrictEqual(
      held.map((entry) => entry.kind),
      ["awaiting_capture"]
    )
    assert.deepStrictEqual(ProviderSettlement.attentionOf(paid, { chargedBack: 0, awaitingCapture: false }), [])
  })
})

describe("a live create that never stored its provider's answer (the clean-up, decisions §10)", () => {
  const unopened = { now, visit: null, closing: "expire" as const }

  it("no checkout at the provider, or one expired (by the clean-up), open or failed → failed with payment.failed", () => {
    for (const found of [null, { _tag: "Expired" }, { _tag: "Open" }, { _tag: "Failed" }] as const) {
      const decided = ProviderSettlement.decideUnopened(pendingPayment({ mode: "live" }), found, unopened)
      assert.strictEqual(decided.payment.status, "failed")
      assert.deepStrictEqual(decided.events, ["payment.failed"])
      assert.isFalse(decided.adopt)
    }
  })

  it("a checkout paid meanwhile is adopted: paid with payment.paid, the payer from the provider", () => {
    const decided = ProviderSettlement.decideUnopened(
      pendingPayment({ mode: "live" }),
      { _tag: "Paid", customer },
      unopened
    )
    assert.strictEqual(decided.payment.status, "paid")
    assert.deepStrictEqual(decided.events, ["payment.paid"])
    assert.deepStrictEqual(decided.payment.payer, { ...customer, ip: "", user_agent: "" })
    assert.isTrue(decided.adopt)
  })

  it("completed but unpaid (a delayed method) is adopted and stays pending: the money may still arrive", () => {
    const decided = ProviderSettlement.decideUnopened(pendingPayment({ mode: "live" }), { _tag: "Unpaid" }, unopened)
    assert.strictEqual(decided.payment.status, "pending")
    assert.deepStrictEqual(decided.events, [])
    assert.isTrue(decided.adopt)
  })

  it("a payment no longer pending is left as it is", () => {
    const paid = paidPayment({ mode: "live" })
    const decided = ProviderSettlement.decideUnopened(paid, null, unopened)
    assert.strictEqual(decided.payment, paid)
    assert.deepStrictEqual(decided.events, [])
  })
})
