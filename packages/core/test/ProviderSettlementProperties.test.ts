/**
 * Properties of settling the provider's answers (fast-check): any order and repetition of answers ends in the same
 * payment, money stays within the amount, a final payment is never un-finalised, a cancel succeeds only with a
 * cancelled payment, and the race "customer pays while the merchant cancels (or expiry runs)" has one outcome.
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Result } from "effect"
import * as fc from "fast-check"
import type { RefundId } from "../src/domain/Ids.ts"
import * as PaymentStateMachine from "../src/payments/PaymentStateMachine.ts"
import { refundableAmount, refundedAmount } from "../src/payments/RefundRules.ts"
import type { ProviderAnswer, ProviderRefundStatus } from "../src/providers/ProviderSettlement.ts"
import * as ProviderSettlement from "../src/providers/ProviderSettlement.ts"
import {
  applyAll,
  asyncFailed,
  cancelledAnswer,
  context,
  expired,
  noAnswer,
  ok,
  open,
  paidAnswer,
  refundAnswer,
  unclosable,
  unpaid
} from "./support/ProviderSettlementSupport.ts"
import { paidPayment, pendingPayment, refundId, t0 } from "./support/payments.ts"

/** A checkout's life at the provider: each state it passes through, in order. */
const checkoutHistory: fc.Arbitrary<ReadonlyArray<ProviderAnswer>> = fc.constantFrom(
  [open],
  [open, paidAnswer],
  [open, unpaid, paidAnswer],
  [open, unpaid, asyncFailed],
  [open, expired]
)

/** A refund's life at the provider. */
const refundHistory = fc.constantFrom<ReadonlyArray<ProviderRefundStatus>>(
  ["pending"],
  ["pending", "succeeded"],
  ["succeeded"],
  ["pending", "failed"],
  ["pending", "canceled"],
  ["pending", "succeeded", "failed"]
)

/** The answers Kassa may see of a history: any of its snapshots, any number of times, in any order, the last at least once. */
const seen = (history: ReadonlyArray<ProviderAnswer>): fc.Arbitrary<ReadonlyArray<ProviderAnswer>> =>
  fc
    .array(fc.constantFrom(...history, noAnswer), { maxLength: 8 })
    .chain((extra) =>
      fc.shuffledSubarray([...extra, history[history.length - 1] as ProviderAnswer], { minLength: extra.length + 1 })
    )

describe("properties", () => {
  it("any order and any repetition of a checkout's answers ends in the same payment", () => {
    fc.assert(
      fc.property(
        checkoutHistory.chain((history) => fc.tuple(fc.constant(history), seen(history), seen(history))),
        ([history, first, second]) => {
          const start = pendingPayment({ mode: "live" })
          const canonical = applyAll(start, history)
          assert.deepStrictEqual(applyAll(start, first), canonical)
          assert.deepStrictEqual(applyAll(start, second), canonical)
        }
      )
    )
  })

  /** A paid live payment, refunds Kassa asked for (pending) and refunds made at the provider, all fitting the amount. */
  const refundScenario = fc
    .record({
      amount: fc.integer({ min: 1, max: 100_000 }),
      refunds: fc.array(
        fc.record({
          share: fc.integer({ min: 1, max: 1_000 }),
          known: fc.boolean(),
          history: refundHistory,
          minute: fc.nat(30)
        }),
        { maxLength: 5 }
      )
    })
    .map(({ amount, refunds }) => {
      // Scale the shares so that all refunds together never exceed the amount, as the provider guarantees.
      const total = refunds.reduce((sum, refund) => sum + refund.share, 0)
      let start = paidPayment({ mode: "live", amount })
      const histories: Array<ReadonlyArray<ProviderAnswer>> = []
      for (const refund of refunds) {
        const share = Math.floor((refund.share * amount) / Math.max(total, amount))
        if (share < 1) continue
        const id = refundId()
        if (refund.known) {
          start = ok(
            PaymentStateMachine.requestRefund(start, { refundId: id, amount: share, reason: null, now: t0 })
          ).payment
        }
        const createdAt = DateTime.add(t0, { minutes: refund.minute })
        histories.push(refund.history.map((status) => refundAnswer(id, share, status, createdAt)))
      }
      return { start, histories }
    })
    .chain(({ start, histories }) =>
      fc.tuple(
        fc.constant(start),
        fc.constant(histories),
        // Interleavings of every refund's answers, each with stale checkout reads and no-answers mixed in.
        fc
          .tuple(...histories.map((history) => seen([open, paidAnswer, ...history])))
          .chain((parts) => fc.shuffledSubarray(parts.flat(), { minLength: parts.flat().length }))
      )
    )

  it("any order and any repetition of refund answers ends in the same payment", () => {
    fc.assert(
      fc.property(refundScenario, ([start, histories, answers]) => {
        const canonical = applyAll(start, histories.flat())
        assert.deepStrictEqual(applyAll(start, answers), canonical)
      })
    )
  })

  const anyAnswer = (ids: ReadonlyArray<RefundId>): fc.Arbitrary<ProviderAnswer> =>
    fc.oneof(
      fc.constantFrom(open, paidAnswer, unpaid, asyncFailed, expired, noAnswer),
      fc
        .record({
          id: ids.length > 0 ? fc.oneof(fc.constantFrom(...ids), fc.constant(null)) : fc.constant(null),
          amount: fc.integer({ min: 1, max: 200_000 }),
          status: fc.constantFrom<ProviderRefundStatus>("pending", "succeeded", "failed", "canceled")
        })
        .map(({ id, amount, status }) => refundAnswer(id ?? refundId(), amount, status))
    )

  /** Any payment Kassa could hold (all statuses, live refunds pending), and any answers, even contradictory ones. */
  const anything = fc
    .record({
      amount: fc.integer({ min: 1, max: 100_000 }),
      start: fc.constantFrom("pending", "paid", "failed", "cancelled", "expired"),
      requests: fc.array(fc.integer({ min: 1, max: 100_000 }), { maxLength: 4 })
    })
    .map(({ amount, start, requests }) => {
      let payment = pendingPayment({ mode: "live", amount })
      if (start === "cancelled") payment = ok(PaymentStateMachine.cancel(payment)).payment
      else if (start !== "pending") payment = ok(PaymentStateMachine.settle(payment, start, { now: t0 })).payment
      for (const requested of requests) {
        const result = PaymentStateMachine.requestRefund(payment, {
          refundId: refundId(),
          amount: requested,
          reason: null,
          now: t0
        })
        if (Result.isSuccess(result)) payment = result.success.payment
      }
      return payment
    })
    .chain((payment) =>
      fc.tuple(fc.constant(payment), fc.array(anyAnswer(payment.refunds.map((r) => r.id)), { maxLength: 12 }))
    )

  it("money never goes negative or beyond the amount, whatever the provider says", () => {
    fc.assert(
      fc.property(anything, ([start, answers]) => {
        let payment = start
        for (const answer of answers) {
          payment = ProviderSettlement.apply(payment, answer, context).payment
          assert.isAtLeast(payment.refunded_amount, 0)
          assert.isAtMost(payment.refunded_amount, payment.amount)
          assert.strictEqual(payment.refunded_amount, refundedAmount(payment.refunds))
          assert.isAtLeast(refundableAmount(payment), 0)
          if (payment.refunded_amount === payment.amount) assert.strictEqual(payment.status, "refunded")
          else if (payment.refunded_amount > 0) assert.strictEqual(payment.status, "partially_refunded")
        }
      })
    )
  })

  it("a final payment is never un-finalised; a refunded one leaves refunded only through a flagged refund failure", () => {
    const closed = new Set(["failed", "cancelled", "expired"])
    const paidFamily = new Set(["paid", "partially_refunded", "refunded"])
    fc.assert(
      fc.property(anything, ([start, answers]) => {
        let payment = start
        for (const answer of answers) {
          const settlement = ProviderSettlement.apply(payment, answer, context)
          if (closed.has(payment.status)) assert.deepStrictEqual(settlement.payment, payment)
          if (paidFamily.has(payment.status)) assert.isTrue(paidFamily.has(settlement.payment.status))
          if (payment.status === "refunded" && settlement.payment.status !== "refunded") {
            assert.strictEqual(settlement.discrepancy?.kind, "refund_failed_after_success")
          }
          payment = settlement.payment
        }
      })
    )
  })

  it("a cancel succeeds only with a cancelled payment, and never answers an error for a payment it cancelled", () => {
    fc.assert(
      fc.property(
        anything,
        fc.constantFrom<ProviderSettlement.CloseAnswer>(
          open,
          paidAnswer,
          unpaid,
          asyncFailed,
          expired,
          cancelledAnswer,
          unclosable,
          { _tag: "NoAnswer", reason: "timeout" }
        ),
        ([payment], answer) => {
          const decision = ProviderSettlement.decideClose(payment, "cancel", answer, context)
          const cancelledNow = decision.settlement.payment.status === "cancelled" && payment.status !== "cancelled"
          if (cancelledNow) assert.isNull(decision.error)
          // Success only when the payment is cancelled (now, or by this close's own expired event applied first).
          if (decision.error === null) assert.strictEqual(decision.settlement.payment.status, "cancelled")
        }
      )
    )
  })
})

describe("the race 'customer pays while the merchant cancels (or expiry runs)'", () => {
  it("ends in exactly one outcome, the provider's, with exactly one event, whatever order Kassa hears things in", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<ProviderSettlement.ClosePurpose>("cancel", "expire"),
        // Which side reached the provider first: the expire call, or the customer's payment.
        fc.constantFrom("expired first", "paid first"),
        // When the close answer is applied among the webhook answers Kassa also receives.
        fc.nat(4),
        fc.array(fc.constantFrom(open, paidAnswer, expired), { maxLength: 4 }),
        (purpose, winner, position, noise) => {
          const truth = winner === "expired first" ? expired : paidAnswer
          // Webhook answers are snapshots of the provider's one history: open, then the winner; never the loser.
          const webhooks = noise.map((answer) => (answer === open ? open : truth))
          let payment = pendingPayment({ mode: "live" })
          const events: Array<string> = []
          const steps = [...webhooks]
          steps.splice(Math.min(position, steps.length), 0, "close" as never)
          let answered: string | null = null
          for (const step of steps as Array<ProviderAnswer | "close">) {
            let settlement: ProviderSettlement.Settlement
            if (step === "close") {
              const decision = ProviderSettlement.decideClose(
                payment,
                purpose,
                truth as ProviderSettlement.CloseAnswer,
                context
              )
              settlement = decision.settlement
              answered = decision.error === null ? "ok" : decision.error._tag
            } else settlement = ProviderSettlement.apply(payment, step, { ...context, closing: purpose })
            events.push(...settlement.events)
            payment = settlement.payment
          }
          const closed = purpose === "cancel" ? "cancelled" : "expired"
          assert.strictEqual(payment.status, winner === "expired first" ? closed : "paid")
          assert.deepStrictEqual(events, [`payment.${payment.status}`])
          // What the caller answers: the close succeeded when the provider expired first; a cancel that lost is a 409.
          const expectedAnswer = winner === "expired first" || purpose === "expire" ? "ok" : "PaymentNotCancellable"
          assert.strictEqual(answered, expectedAnswer)
        }
      )
    )
  })
})
