/**
 * The hosted checkout's use of a payment, by payment id alone (the page is public; decisions §7): the payment as
 * fetch returns it, with lazy expiry applied, its application's name and the methods it offers; and, for test
 * payments, the customer's Pay / Fail / Let it expire. A live payment is decided by its provider (live/), so choosing
 * an outcome for one is `not_found`.
 */
import { type ApiError, CheckoutBranding, type Ids, type Payment, PaymentStateMachine } from "@kassa/core"
import { Context, Effect, Layer, Option, Result } from "effect"
import { ApplicationRepository } from "../applications/ApplicationRepository.ts"
import { PaymentRepository } from "../ledger/PaymentRepository.ts"
import { notFound, PaymentWrites } from "../ledger/PaymentWrites.ts"
import * as Metrics from "../observability/Metrics.ts"

/**
 * What the hosted checkout shows: the payment as fetch returns it, the name of its application (the shop the customer
 * pays; `null` if the application is gone), the methods it offers and its branding (checked by the core).
 */
export interface CheckoutView {
  readonly payment: Payment.Payment
  readonly applicationName: string | null
  readonly methods: ReadonlyArray<string>
  readonly branding: CheckoutBranding.Branding
}

export class HostedCheckout extends Context.Service<
  HostedCheckout,
  {
    readonly view: (id: Ids.PaymentId) => Effect.Effect<CheckoutView, ApiError.NotFound>
    /**
     * The customer's choice on a test payment's page. Pay and Fail record the payer and the method chosen (one of
     * the application's; another is ignored).
     */
    readonly choose: (
      id: Ids.PaymentId,
      outcome: PaymentStateMachine.Outcome,
      payer: Payment.Payer | null,
      method?: string
    ) => Effect.Effect<Payment.Payment, ApiError.NotFound | ApiError.PaymentNotPending | ApiError.PaymentBusy>
  }
>()("@kassa/server/payments/HostedCheckout") {
  static readonly layer = Layer.effect(
    HostedCheckout,
    Effect.gen(function* () {
      const repo = yield* PaymentRepository
      const writes = yield* PaymentWrites
      const applications = yield* ApplicationRepository

      const applicationOf = (id: Ids.PaymentId) =>
        repo
          .find(id)
          .pipe(
            Effect.flatMap((stored) =>
              Option.isNone(stored) ? Effect.succeed(Option.none()) : applications.find(stored.value.applicationId)
            )
          )

      const offeredMethods = (id: Ids.PaymentId) =>
        applicationOf(id).pipe(
          Effect.map((application) => Option.match(application, { onNone: () => [], onSome: (app) => app.methods }))
        )

      const view = Effect.fn("HostedCheckout.view")(function* (id: Ids.PaymentId) {
        const payment = yield* writes.readOrNotFound(id)
        const application = yield* applicationOf(id)
        return {
          payment,
          applicationName: Option.match(application, { onNone: () => null, onSome: (app) => app.name }),
          methods: Option.match(application, { onNone: () => [], onSome: (app) => app.methods }),
          branding: Option.match(application, {
            onNone: () => CheckoutBranding.none,
            onSome: CheckoutBranding.fromSettings
          })
        } satisfies CheckoutView
      })

      const choose = Effect.fn("HostedCheckout.choose")(function* (
        id: Ids.PaymentId,
        outcome: PaymentStateMachine.Outcome,
        payer: Payment.Payer | null,
        method?: string
      ) {
        const offered = method === undefined ? [] : yield* offeredMethods(id)
        const chosen = method !== undefined && offered.includes(method) ? method : undefined
        return yield* writes.mutate(
          id,
          undefined,
          (
            payment,
            now
          ): Result.Result<PaymentStateMachine.Transition, ApiError.PaymentNotPending | ApiError.NotFound> =>
            payment.mode === "live"
              ? Result.fail(notFound())
              : PaymentStateMachine.settle(payment, outcome, { now, payer, method: chosen }),
          { settledVia: "checkout" }
        )
      })

      return HostedCheckout.of({
        view,
        // Counted after the commit, by mode and outcome only.
        choose: (id, outcome, payer, method) =>
          choose(id, outcome, payer, method).pipe(
            Effect.tap((payment) => Metrics.recordPaymentSettled(payment.mode, payment.status))
          )
      })
    })
  )
}
