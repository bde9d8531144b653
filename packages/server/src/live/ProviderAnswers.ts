/**
 * A provider's answers applied to live payments (decisions §10, "Settlement", "Expiry and cancel ask Stripe first"):
 * under the payment's row lock (waiting: lock holders are short), the core's `ProviderSettlement` decides, and the
 * payment, its events and deliveries, a discrepancy and what the provider said commit in one transaction.
 *
 * {@link ProviderAnswers.applySettlement} is the one place a settlement is written — for checkouts here, for refunds
 * by `LiveRefunds`, for a cancel by `LivePayments` — and the one writer of discrepancies.
 */
import { type Ids, type Payment, ProviderSettlement, type SettlementSource } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PaymentRepository, type StoredPayment } from "../ledger/PaymentRepository.ts"
import { PaymentWrites } from "../ledger/PaymentWrites.ts"
import * as Metrics from "../observability/Metrics.ts"
import type { CheckoutReading, FoundCheckout, NoAnswer, Unclosable } from "../providers/ProviderConnector.ts"
import { type LiveCheckout, LiveCheckouts } from "./LiveCheckouts.ts"

/** A connector's answer to a close, in the core's words. */
export const closeAnswerOf = (answer: CheckoutReading | Unclosable | NoAnswer): ProviderSettlement.CloseAnswer =>
  answer._tag === "Checkout"
    ? { _tag: "Checkout", state: answer.state }
    : answer._tag === "Unclosable"
      ? { _tag: "Unclosable", expires_at: answer.expiresAt }
      : answer

/**
 * When to read a checkout again: while the payment is pending, and while the provider's checkout is not final even
 * though Kassa's payment is (a cancel the provider could not carry out, decisions §11: the customer may still pay
 * there, which operators must see); never for a checkout nobody visited (see `Schedule.nextPaymentRead`).
 */
export const nextCheckoutRead = (
  status: Payment.PaymentStatus,
  state: ProviderSettlement.CheckoutState | null,
  checkout: Pick<LiveCheckout, "visitedAt">,
  now: DateTime.Utc
): DateTime.Utc | null =>
  status === "pending" || state?._tag === "Open" || state?._tag === "Unpaid"
    ? ProviderSettlement.Schedule.nextPaymentRead({ visitedAt: checkout.visitedAt, lastReadAt: now })
    : null

/** What led to a read of a checkout: a provider's event, Kassa's schedule, an operator's "Read now". */
export type CheckoutReadCause = Extract<
  SettlementSource.SettlementSource,
  "provider_event" | "provider_read" | "operator_read"
>

export class ProviderAnswers extends Context.Service<
  ProviderAnswers,
  {
    /**
     * A settlement of a locked payment, inside the caller's transaction: the payment written (with its events) only
     * when the settlement changed it, its discrepancy recorded; the payment as it stands after. A discrepancy names
     * its refund only when that refund is on the payment (one the provider made that Kassa could not record has no
     * row to point at); `detail` is added to its message. `settledVia`: what asked, should this settle the payment.
     */
    readonly applySettlement: (
      stored: StoredPayment,
      settlement: ProviderSettlement.Settlement,
      now: DateTime.Utc,
      origin?: { readonly settledVia?: SettlementSource.SettlementSource; readonly detail?: string }
    ) => Effect.Effect<Payment.Payment>
    /**
     * What the provider says now about a live payment's checkout (read again after an event or on schedule); none
     * when Kassa has no such live payment. An event that led to the read is recorded as seen by its route, after
     * this (http/ProviderWebhookRoutes.ts: a replay is answered from that record without a read). `via`: what led
     * to the read (recorded should it settle the payment).
     */
    readonly applyCheckoutAnswer: (input: {
      readonly paymentId: Ids.PaymentId
      readonly reading: CheckoutReading
      readonly via: CheckoutReadCause
    }) => Effect.Effect<{ readonly payment: Option.Option<Payment.Payment> }>
    /**
     * Expiry of a live payment asked of its provider: the answer to the expire call, decided by
     * `ProviderSettlement.decideClose` (expired → `expired`; paid → `paid`; no answer → unchanged, asked again within
     * a minute).
     */
    readonly applyExpiryAnswer: (input: {
      readonly paymentId: Ids.PaymentId
      readonly reading: CheckoutReading | Unclosable | NoAnswer
    }) => Effect.Effect<Option.Option<Payment.Payment>>
    /**
     * The clean-up of a live create that died between its provider call and its commit (its checkout row claimed
     * `opening` by `LiveCheckouts.claimStuck`), from what the provider has for it, open checkouts already expired
     * there: `ProviderSettlement.decideUnopened` — failed with its event and delivery, or the checkout adopted (paid,
     * or completed unpaid) — with the row's state in the same transaction. A row no longer `opening` under this
     * clean-up's claim (a retry opened it meanwhile) is left as it is.
     */
    readonly resolveUnopened: (input: {
      readonly paymentId: Ids.PaymentId
      readonly found: FoundCheckout | null
    }) => Effect.Effect<Option.Option<Payment.Payment>>
  }
>()("@kassa/server/live/ProviderAnswers") {
  static readonly layer = Layer.effect(
    ProviderAnswers,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* PaymentRepository
      const writes = yield* PaymentWrites
      const checkouts = yield* LiveCheckouts

      const applySettlement = (
        stored: StoredPayment,
        settlement: ProviderSettlement.Settlement,
        now: DateTime.Utc,
        origin: { readonly settledVia?: SettlementSource.SettlementSource; readonly detail?: string } = {}
      ) =>
        Effect.gen(function* () {
          const { detail } = origin
          // The core answers an answer that moves nothing with the payment it was given.
          const after =
            settlement.payment === stored.payment
              ? stored.payment
              : (yield* writes.apply(stored, settlement, now, { settledVia: origin.settledVia })).payment
          const { discrepancy } = settlement
          if (discrepancy !== null) {
            const onPayment = after.refunds.some((refund) => refund.id === discrepancy.refund_id)
            yield* checkouts.recordDiscrepancy(
              stored.payment.id,
              {
                ...discrepancy,
                refund_id: onPayment ? discrepancy.refund_id : null,
                message: detail === undefined ? discrepancy.message : `${discrepancy.message} (${detail})`
              },
              now
            )
          }
          return after
        })

      /** The payment locked with its checkout row, inside the caller's transaction; none when either is missing. */
      const lockWithCheckout = (paymentId: Ids.PaymentId) =>
        Effect.gen(function* () {
          const locked = yield* repo.lock(paymentId, undefined, "wait")
          const checkout = yield* checkouts.find(paymentId)
          return Option.isNone(locked) || Option.isNone(checkout)
            ? Option.none()
            : Option.some({ stored: locked.value, checkout: checkout.value })
        })

      // Counted after the commit, by mode and outcome only (Metrics: no id, key or amount in a label), when the
      // answer changed the payment's status.
      const countIfSettled = (outcome: {
        readonly payment: Option.Option<Payment.Payment>
        readonly before: Payment.PaymentStatus | null
      }) =>
        Option.isSome(outcome.payment) && outcome.before !== outcome.payment.value.status
          ? Metrics.recordPaymentSettled(outcome.payment.value.mode, outcome.payment.value.status)
          : Effect.void

      const applyCheckoutAnswer = Effect.fn("ProviderAnswers.applyCheckoutAnswer")(
        function* (input: {
          readonly paymentId: Ids.PaymentId
          readonly reading: CheckoutReading
          readonly via: CheckoutReadCause
        }) {
          const outcome = yield* sql.withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              const found = yield* lockWithCheckout(input.paymentId)
              if (Option.isNone(found)) return { payment: Option.none<Payment.Payment>(), before: null }
              const { stored, checkout } = found.value
              const settlement = ProviderSettlement.apply(
                stored.payment,
                { _tag: "Checkout", state: input.reading.state },
                { now, visit: checkout.visit, closing: checkout.closing }
              )
              const after = yield* applySettlement(stored, settlement, now, { settledVia: input.via })
              // What the provider reports besides the state (a chargeback, an authorization): listed once.
              for (const flag of ProviderSettlement.attentionOf(after, input.reading)) {
                yield* checkouts.recordDiscrepancy(input.paymentId, flag, now)
              }
              // Lost events (decisions §10): read again until both sides are final.
              const nextReadAt = nextCheckoutRead(after.status, input.reading.state, checkout, now)
              yield* checkouts.recordRead(
                input.paymentId,
                input.reading,
                input.reading.providerPaymentId,
                nextReadAt,
                now
              )
              return { payment: Option.some(after), before: stored.payment.status }
            })
          )
          yield* countIfSettled(outcome)
          return { payment: outcome.payment }
        },
        Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
      )

      const applyExpiryAnswer = Effect.fn("ProviderAnswers.applyExpiryAnswer")(
        function* (input: {
          readonly paymentId: Ids.PaymentId
          readonly reading: CheckoutReading | Unclosable | NoAnswer
        }) {
          const outcome = yield* sql.withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              const found = yield* lockWithCheckout(input.paymentId)
              if (Option.isNone(found)) return { payment: Option.none<Payment.Payment>(), before: null }
              const { stored, checkout } = found.value
              const { settlement } = ProviderSettlement.decideClose(
                stored.payment,
                "expire",
                closeAnswerOf(input.reading),
                { now, visit: checkout.visit, closing: "expire" }
              )
              const after = yield* applySettlement(stored, settlement, now, { settledVia: "provider_expiry" })
              // No answer: again within a minute. A provider that keeps the checkout payable until its own expiry
              // (decisions §11): asked again at that time, when it has expired it (or been paid).
              const retry = ProviderSettlement.Schedule.nextExpiryAttempt(now)
              const nextReadAt =
                after.status !== "pending"
                  ? null
                  : input.reading._tag === "Unclosable"
                    ? DateTime.max(input.reading.expiresAt, retry)
                    : retry
              yield* checkouts.recordRead(
                input.paymentId,
                input.reading,
                "providerPaymentId" in input.reading ? input.reading.providerPaymentId : null,
                nextReadAt,
                now
              )
              return { payment: Option.some(after), before: stored.payment.status }
            })
          )
          yield* countIfSettled(outcome)
          return outcome.payment
        },
        Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
      )

      const resolveUnopened = Effect.fn("ProviderAnswers.resolveUnopened")(
        function* (input: { readonly paymentId: Ids.PaymentId; readonly found: FoundCheckout | null }) {
          const outcome = yield* sql.withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              const locked = yield* lockWithCheckout(input.paymentId)
              if (
                Option.isNone(locked) ||
                locked.value.checkout.state !== "opening" ||
                locked.value.checkout.closing !== "expire"
              ) {
                return { payment: Option.none<Payment.Payment>(), before: null }
              }
              const { stored } = locked.value
              const { found } = input
              const decision = ProviderSettlement.decideUnopened(stored.payment, found?.reading.state ?? null, {
                now,
                visit: null,
                closing: "expire"
              })
              const after = yield* applySettlement(stored, decision, now, { settledVia: "provider_read" })
              if (decision.adopt && found !== null) {
                yield* checkouts.adopt({ paymentId: input.paymentId, checkoutId: found.checkoutId, now })
                yield* checkouts.recordRead(
                  input.paymentId,
                  found.reading,
                  found.reading.providerPaymentId,
                  after.status === "pending"
                    ? // Completed unpaid (a delayed method): read again like a visited checkout until it settles.
                      ProviderSettlement.Schedule.nextPaymentRead({ visitedAt: now, lastReadAt: now })
                    : null,
                  now
                )
              } else {
                yield* checkouts.notOpened(
                  input.paymentId,
                  { _tag: "Unopened", checkoutId: found?.checkoutId ?? null, state: found?.reading.state._tag ?? null },
                  now,
                  null
                )
              }
              return { payment: Option.some(after), before: stored.payment.status }
            })
          )
          yield* countIfSettled(outcome)
          return outcome.payment
        },
        Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
      )

      return ProviderAnswers.of({ applySettlement, applyCheckoutAnswer, applyExpiryAnswer, resolveUnopened })
    })
  )
}
