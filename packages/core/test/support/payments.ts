import { DateTime } from "effect"
import type { ApplicationSettings } from "../../src/domain/Application.ts"
import { PaymentId, RefundId } from "../../src/domain/Ids.ts"
import type { Mode } from "../../src/domain/Mode.ts"
import type { Payment } from "../../src/domain/Payment.ts"
import type { PaymentDraft } from "../../src/payments/CreatePayment.ts"
import * as PaymentStateMachine from "../../src/payments/PaymentStateMachine.ts"

export const settings: ApplicationSettings = {
  methods: ["card"],
  currencies: ["EUR", "USD"],
  locale: "en",
  min_amount: 100,
  max_amount: 10_000_000,
  return_url_host: "shop.example",
  payment_ttl_seconds: 3600
}

export const t0 = DateTime.makeUnsafe("2026-11-22T10:00:00.000Z")

export const draft: PaymentDraft = {
  amount: 10_000,
  currency: "EUR",
  method: "card",
  order_reference: "order-1",
  description: null,
  customer: { name: null, email: null, phone: null },
  locale: "en",
  return_url: null,
  metadata: {}
}

let counter = 0
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`
export const paymentId = () => PaymentId.make(uuid(++counter))
export const refundId = () => RefundId.make(uuid(++counter))

/** A pending payment created at {@link t0}. */
export const pendingPayment = (options: { mode?: Mode; amount?: number } = {}): Payment =>
  PaymentStateMachine.create({
    id: paymentId(),
    mode: options.mode ?? "test",
    draft: { ...draft, amount: options.amount ?? draft.amount },
    checkoutUrl: "http://localhost:4000/checkout/x",
    ttlSeconds: 3600,
    now: t0,
    provider: "accepted"
  }).payment

/** A paid payment (paid one minute after creation). */
export const paidPayment = (options: { mode?: Mode; amount?: number } = {}): Payment => {
  const result = PaymentStateMachine.settle(pendingPayment(options), "paid", { now: DateTime.add(t0, { minutes: 1 }) })
  if (result._tag === "Failure") throw new Error("a pending payment can always be paid")
  return result.success.payment
}
