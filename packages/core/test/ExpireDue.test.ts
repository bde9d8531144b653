import { assert, describe, it } from "@effect/vitest"
import { DateTime } from "effect"
import * as fc from "fast-check"
import { type Payment, PaymentStatus } from "../src/domain/Payment.ts"
import * as PaymentStateMachine from "../src/payments/PaymentStateMachine.ts"
import { pendingPayment, t0 } from "./support/payments.ts"

// A payment of any status whose expiry lies some minutes around t0 + 1 h (the fixtures' lifetime).
const anyPayment = fc
  .record({ status: fc.constantFrom(...PaymentStatus.literals), offset: fc.integer({ min: -90, max: 90 }) })
  .map(
    ({ status, offset }): Payment => ({
      ...pendingPayment(),
      status,
      expires_at: DateTime.add(t0, { minutes: 60 + offset })
    })
  )

describe("expireDue (the batch form of lazy expiry)", () => {
  it("expires exactly the due pending payments, in order, each as observe would, with one payment.expired", () => {
    fc.assert(
      fc.property(fc.array(anyPayment, { maxLength: 30 }), fc.integer({ min: 0, max: 180 }), (payments, minutes) => {
        const now = DateTime.add(t0, { minutes })
        const batch = PaymentStateMachine.expireDue(payments, now)
        const due = payments.filter((payment) => PaymentStateMachine.isDue(payment, now))
        assert.deepStrictEqual(
          batch.map((transition) => transition.payment.id),
          due.map((payment) => payment.id)
        )
        for (const [index, transition] of batch.entries()) {
          const single = PaymentStateMachine.observe(due[index] as Payment, now)
          assert.deepStrictEqual(transition, single)
          assert.strictEqual(transition.payment.status, "expired")
          assert.deepStrictEqual(transition.events, ["payment.expired"])
        }
      })
    )
  })

  it("leaves a payment at its expiry's last millisecond alone and expires it at the expiry", () => {
    const payment = pendingPayment()
    assert.deepStrictEqual(
      PaymentStateMachine.expireDue([payment], DateTime.add(payment.expires_at, { milliseconds: -1 })),
      []
    )
    assert.strictEqual(PaymentStateMachine.expireDue([payment], payment.expires_at).length, 1)
  })
})
