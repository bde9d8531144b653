import { assert, describe, it } from "@effect/vitest"
import { DateTime, Result } from "effect"
import * as fc from "fast-check"
import type { Payment, PaymentStatus } from "../src/domain/Payment.ts"
import { terminalStatuses } from "../src/domain/Payment.ts"
import { eventForStatus } from "../src/domain/WebhookEvent.ts"
import * as PaymentStateMachine from "../src/payments/PaymentStateMachine.ts"
import { refundableAmount } from "../src/payments/RefundRules.ts"
import { draft, paidPayment, paymentId, pendingPayment, refundId, t0 } from "./support/payments.ts"

const later = (minutes: number) => DateTime.add(t0, { minutes })
const ok = <A, E>(result: Result.Result<A, E>): A => {
  if (Result.isFailure(result)) throw new Error(`expected success, got ${JSON.stringify(result.failure)}`)
  return result.success
}
const err = <A, E>(result: Result.Result<A, E>): E => {
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return result.failure
}
const payer = { name: "Ada", email: "ada@example.com", phone: null, ip: "203.0.113.9", user_agent: "Browser/1" }

describe("create", () => {
  it("an accepted create is pending with no event, expiring after the lifetime", () => {
    const transition = PaymentStateMachine.create({
      id: paymentId(),
      mode: "test",
      draft,
      checkoutUrl: "http://localhost:4000/checkout/p",
      ttlSeconds: 900,
      now: t0,
      provider: "accepted"
    })
    assert.strictEqual(transition.payment.status, "pending")
    assert.deepStrictEqual(transition.events, [])
    assert.strictEqual(transition.payment.refunded_amount, 0)
    assert.isNull(transition.payment.payer)
    assert.isNull(transition.payment.paid_at)
    assert.deepStrictEqual(transition.payment.refunds, [])
    assert.strictEqual(DateTime.formatIso(transition.payment.expires_at), "2026-11-22T10:15:00.000Z")
  })

  it("a refused create is failed and sends payment.failed", () => {
    const transition = PaymentStateMachine.create({
      id: paymentId(),
      mode: "live",
      draft,
      checkoutUrl: "x",
      ttlSeconds: 3600,
      now: t0,
      provider: "refused"
    })
    assert.strictEqual(transition.payment.status, "failed")
    assert.deepStrictEqual(transition.events, ["payment.failed"])
  })
})

describe("cancel (rule 1)", () => {
  it("pending → cancelled with payment.cancelled", () => {
    const transition = ok(PaymentStateMachine.cancel(pendingPayment()))
    assert.strictEqual(transition.payment.status, "cancelled")
    assert.deepStrictEqual(transition.events, ["payment.cancelled"])
  })

  it.each(["paid", "failed", "cancelled", "expired"] as const)("a %s payment is not cancellable", (outcome) => {
    const base = pendingPayment()
    const payment =
      outcome === "cancelled"
        ? ok(PaymentStateMachine.cancel(base)).payment
        : ok(PaymentStateMachine.settle(base, outcome, { now: later(1) })).payment
    const error = err(PaymentStateMachine.cancel(payment))
    assert.strictEqual(error._tag, "PaymentNotCancellable")
    assert.strictEqual(error.status, outcome)
  })

  it("refunded and partially refunded payments are not cancellable", () => {
    const partial = ok(
      PaymentStateMachine.requestRefund(paidPayment(), { refundId: refundId(), amount: 1, reason: null, now: later(2) })
    )
    assert.strictEqual(err(PaymentStateMachine.cancel(partial.payment)).status, "partially_refunded")
    const whole = ok(
      PaymentStateMachine.requestRefund(paidPayment(), { refundId: refundId(), reason: null, now: later(2) })
    )
    assert.strictEqual(err(PaymentStateMachine.cancel(whole.payment)).status, "refunded")
  })
})

describe("settle (simulator and checkout)", () => {
  it("paid records paid_at and the payer, and sends payment.paid", () => {
    const transition = ok(PaymentStateMachine.settle(pendingPayment(), "paid", { now: later(5), payer }))
    assert.strictEqual(transition.payment.status, "paid")
    assert.deepStrictEqual(transition.events, ["payment.paid"])
    assert.isTrue(DateTime.Equivalence(transition.payment.paid_at ?? t0, later(5)))
    assert.deepStrictEqual(transition.payment.payer, payer)
  })

  it("failed records the payer but no paid_at, and sends payment.failed", () => {
    const transition = ok(PaymentStateMachine.settle(pendingPayment(), "failed", { now: later(5), payer }))
    assert.strictEqual(transition.payment.status, "failed")
    assert.deepStrictEqual(transition.events, ["payment.failed"])
    assert.isNull(transition.payment.paid_at)
    assert.deepStrictEqual(transition.payment.payer, payer)
  })

  it("expired sends payment.expired and records no payer", () => {
    const transition = ok(PaymentStateMachine.settle(pendingPayment(), "expired", { now: later(5), payer }))
    assert.strictEqual(transition.payment.status, "expired")
    assert.deepStrictEqual(transition.events, ["payment.expired"])
    assert.isNull(transition.payment.payer)
  })

  it("the checkout's chosen method is recorded on pay and fail, not on expiry", () => {
    assert.strictEqual(
      ok(PaymentStateMachine.settle(pendingPayment(), "paid", { now: later(5), payer, method: "ideal" })).payment
        .method,
      "ideal"
    )
    assert.strictEqual(
      ok(PaymentStateMachine.settle(pendingPayment(), "failed", { now: later(5), payer, method: "ideal" })).payment
        .method,
      "ideal"
    )
    assert.strictEqual(
      ok(PaymentStateMachine.settle(pendingPayment(), "expired", { now: later(5), method: "ideal" })).payment.method,
      "card"
    )
  })

  it("the API's simulate (no payer) leaves payer null", () => {
    const transition = ok(PaymentStateMachine.settle(pendingPayment(), "paid", { now: later(5) }))
    assert.isNull(transition.payment.payer)
  })

  it.each(["paid", "failed", "expired"] as const)(
    "a payment that is not pending gets payment_not_pending (%s)",
    (outcome) => {
      const paid = paidPayment()
      const error = err(PaymentStateMachine.settle(paid, outcome, { now: later(5) }))
      assert.strictEqual(error._tag, "PaymentNotPending")
      assert.strictEqual(error.status, "paid")
    }
  )
})

describe("lazy expiry (observe)", () => {
  it("a pending payment before expires_at is unchanged", () => {
    const payment = pendingPayment()
    const seen = PaymentStateMachine.observe(payment, DateTime.add(t0, { seconds: 3599 }))
    assert.strictEqual(seen.payment, payment)
    assert.deepStrictEqual(seen.events, [])
  })

  it("at expires_at exactly the payment is expired, with its event", () => {
    const seen = PaymentStateMachine.observe(pendingPayment(), DateTime.add(t0, { seconds: 3600 }))
    assert.strictEqual(seen.payment.status, "expired")
    assert.deepStrictEqual(seen.events, ["payment.expired"])
  })

  it("a paid payment past expires_at stays paid", () => {
    const seen = PaymentStateMachine.observe(paidPayment(), DateTime.add(t0, { hours: 5 }))
    assert.strictEqual(seen.payment.status, "paid")
    assert.deepStrictEqual(seen.events, [])
  })
})

describe("refunds", () => {
  it("a test partial refund succeeds at once: partially_refunded, payment.partially_refunded", () => {
    const transition = ok(
      PaymentStateMachine.requestRefund(paidPayment(), {
        refundId: refundId(),
        amount: 2500,
        reason: "damaged",
        now: later(3)
      })
    )
    assert.strictEqual(transition.payment.status, "partially_refunded")
    assert.strictEqual(transition.payment.refunded_amount, 2500)
    assert.deepStrictEqual(transition.events, ["payment.partially_refunded"])
    const refund = transition.payment.refunds.at(-1)
    assert.strictEqual(refund?.status, "succeeded")
    assert.strictEqual(refund?.reason, "damaged")
    assert.isTrue(DateTime.Equivalence(refund?.confirmed_at ?? t0, later(3)))
  })

  it("payment.partially_refunded is sent again for every further partial refund, then payment.refunded", () => {
    let payment = paidPayment({ amount: 3000 })
    const events: Array<string> = []
    for (const amount of [1000, 1000, 1000]) {
      const transition = ok(
        PaymentStateMachine.requestRefund(payment, { refundId: refundId(), amount, reason: null, now: later(4) })
      )
      payment = transition.payment
      events.push(...transition.events)
    }
    assert.deepStrictEqual(events, ["payment.partially_refunded", "payment.partially_refunded", "payment.refunded"])
    assert.strictEqual(payment.status, "refunded")
    assert.strictEqual(payment.refunded_amount, 3000)
    assert.deepStrictEqual(
      payment.refunds.map((refund) => refund.amount),
      [1000, 1000, 1000]
    )
  })

  it("the default amount is everything refundable: refunded, payment.refunded", () => {
    const transition = ok(
      PaymentStateMachine.requestRefund(paidPayment(), { refundId: refundId(), reason: null, now: later(3) })
    )
    assert.strictEqual(transition.payment.status, "refunded")
    assert.strictEqual(transition.payment.refunded_amount, 10_000)
    assert.deepStrictEqual(transition.events, ["payment.refunded"])
  })

  it("a live refund request is pending, sends no event and leaves the status (rule 4)", () => {
    const transition = ok(
      PaymentStateMachine.requestRefund(paidPayment({ mode: "live" }), {
        refundId: refundId(),
        amount: 400,
        reason: null,
        now: later(3)
      })
    )
    assert.strictEqual(transition.payment.status, "paid")
    assert.strictEqual(transition.payment.refunded_amount, 0)
    assert.deepStrictEqual(transition.events, [])
    assert.strictEqual(transition.payment.refunds[0]?.status, "pending")
    assert.isNull(transition.payment.refunds[0]?.confirmed_at)
    assert.strictEqual(refundableAmount(transition.payment), 9600)
  })

  it("confirming a live refund moves the status and sends the event; a failed one releases the amount", () => {
    const live = paidPayment({ mode: "live" })
    const first = refundId()
    const second = refundId()
    const requested = ok(
      PaymentStateMachine.requestRefund(live, { refundId: first, amount: 400, reason: null, now: later(3) })
    )
    const both = ok(
      PaymentStateMachine.requestRefund(requested.payment, {
        refundId: second,
        amount: 9600,
        reason: null,
        now: later(3)
      })
    )
    assert.strictEqual(refundableAmount(both.payment), 0)

    const confirmed = ok(PaymentStateMachine.resolveRefund(both.payment, first, "succeeded", later(60)))
    assert.strictEqual(confirmed.payment.status, "partially_refunded")
    assert.strictEqual(confirmed.payment.refunded_amount, 400)
    assert.deepStrictEqual(confirmed.events, ["payment.partially_refunded"])

    const failed = ok(PaymentStateMachine.resolveRefund(confirmed.payment, second, "failed", later(61)))
    assert.deepStrictEqual(failed.events, [])
    assert.strictEqual(failed.payment.status, "partially_refunded")
    assert.strictEqual(refundableAmount(failed.payment), 9600)

    assert.strictEqual(
      err(PaymentStateMachine.resolveRefund(failed.payment, second, "succeeded", later(62)))._tag,
      "RefundNotPending"
    )
  })

  it.each(["pending", "failed", "cancelled", "expired"] as const)(
    "a %s payment is not refundable (rule 2)",
    (status) => {
      const base = pendingPayment()
      const payment: Payment =
        status === "pending"
          ? base
          : status === "cancelled"
            ? ok(PaymentStateMachine.cancel(base)).payment
            : ok(PaymentStateMachine.settle(base, status, { now: later(1) })).payment
      const error = err(
        PaymentStateMachine.requestRefund(payment, { refundId: refundId(), amount: 100, reason: null, now: later(2) })
      )
      assert.strictEqual(error._tag, "PaymentNotRefundable")
      assert.strictEqual(error._tag === "PaymentNotRefundable" ? error.status : null, status)
    }
  )

  it("a refunded payment is not refundable", () => {
    const refunded = ok(
      PaymentStateMachine.requestRefund(paidPayment(), { refundId: refundId(), reason: null, now: later(2) })
    )
    const error = err(
      PaymentStateMachine.requestRefund(refunded.payment, {
        refundId: refundId(),
        amount: 1,
        reason: null,
        now: later(3)
      })
    )
    assert.strictEqual(error._tag, "PaymentNotRefundable")
  })

  it("more than the refundable amount gives refund_amount_exceeds_refundable with refundable_amount (rule 3)", () => {
    const partial = ok(
      PaymentStateMachine.requestRefund(paidPayment(), {
        refundId: refundId(),
        amount: 7000,
        reason: null,
        now: later(2)
      })
    )
    const error = err(
      PaymentStateMachine.requestRefund(partial.payment, {
        refundId: refundId(),
        amount: 3001,
        reason: null,
        now: later(3)
      })
    )
    assert.strictEqual(error._tag, "RefundAmountExceedsRefundable")
    assert.strictEqual(error._tag === "RefundAmountExceedsRefundable" ? error.refundable_amount : null, 3000)
  })
})

// Invariants over arbitrary sequences of operations: whatever merchants, customers and the provider do,
// money and status stay consistent.
type Op =
  | { readonly kind: "cancel" }
  | { readonly kind: "settle"; readonly outcome: "paid" | "failed" | "expired" }
  | { readonly kind: "refund"; readonly amount: number | undefined }
  | { readonly kind: "resolve"; readonly index: number; readonly result: "succeeded" | "failed" }
  | { readonly kind: "observe"; readonly minutes: number }

const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ kind: "cancel" as const }),
  fc.constantFrom("paid", "failed", "expired").map((outcome) => ({ kind: "settle" as const, outcome })),
  fc
    .option(fc.integer({ min: 1, max: 12_000 }), { nil: undefined })
    .map((amount) => ({ kind: "refund" as const, amount })),
  fc.record({
    kind: fc.constant("resolve" as const),
    index: fc.nat(5),
    result: fc.constantFrom("succeeded", "failed") as fc.Arbitrary<"succeeded" | "failed">
  }),
  fc.integer({ min: 0, max: 120 }).map((minutes) => ({ kind: "observe" as const, minutes }))
)

const apply = (payment: Payment, op: Op, step: number): PaymentStateMachine.Transition | null => {
  const now = later(step)
  switch (op.kind) {
    case "cancel":
      return Result.getOrNull(PaymentStateMachine.cancel(payment))
    case "settle":
      return Result.getOrNull(PaymentStateMachine.settle(payment, op.outcome, { now }))
    case "refund":
      return Result.getOrNull(
        PaymentStateMachine.requestRefund(payment, { refundId: refundId(), amount: op.amount, reason: null, now })
      )
    case "resolve": {
      const refund = payment.refunds[op.index]
      return refund === undefined
        ? null
        : Result.getOrNull(PaymentStateMachine.resolveRefund(payment, refund.id, op.result, now))
    }
    case "observe":
      return PaymentStateMachine.observe(payment, DateTime.add(t0, { minutes: op.minutes }))
  }
}

describe("invariants (property)", () => {
  it("refunded_amount ≤ amount, status agrees with the refunds, terminal states stay terminal", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("test", "live") as fc.Arbitrary<"test" | "live">,
        fc.integer({ min: 1, max: 10_000 }),
        fc.array(opArbitrary, { maxLength: 25 }),
        (mode, amount, ops) => {
          let payment = pendingPayment({ mode, amount })
          ops.forEach((op, step) => {
            const before: PaymentStatus = payment.status
            const transition = apply(payment, op, step)
            if (transition === null) return
            const after = transition.payment
            // Money: never more refunded than paid, and refunded_amount is the sum of succeeded refunds.
            assert.isAtMost(after.refunded_amount, after.amount)
            assert.isAtLeast(refundableAmount(after), 0)
            assert.strictEqual(
              after.refunded_amount,
              after.refunds.filter((r) => r.status === "succeeded").reduce((sum, r) => sum + r.amount, 0)
            )
            // Status agrees with the refunds.
            if (after.refunded_amount === after.amount) assert.strictEqual(after.status, "refunded")
            else if (after.refunded_amount > 0) assert.strictEqual(after.status, "partially_refunded")
            else assert.notInclude(["refunded", "partially_refunded"], after.status)
            // Terminal states stay terminal; a paid payment is never cancelled.
            if (terminalStatuses.has(before)) assert.strictEqual(after.status, before)
            if (before === "paid") assert.notStrictEqual(after.status, "cancelled")
            // Each change sends exactly the event of its new status, and no change sends none.
            if (after.status !== before)
              assert.deepStrictEqual<ReadonlyArray<unknown>>(transition.events, [eventForStatus(after.status)])
            else if (after.status === "partially_refunded" && after.refunded_amount > payment.refunded_amount)
              assert.deepStrictEqual(transition.events, ["payment.partially_refunded"])
            else assert.deepStrictEqual(transition.events, [])
            // Live refund requests never send events; test refunds never stay pending.
            if (mode === "test") assert.isFalse(after.refunds.some((r) => r.status === "pending"))
            payment = after
          })
        }
      ),
      { numRuns: 500 }
    )
  })
})
