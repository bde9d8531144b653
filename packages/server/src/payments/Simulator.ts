/**
 * The payment provider boundary: where a new payment is announced before it is stored as `pending`. Test payments
 * go to the built-in simulator; live payments go to the provider account the operator linked to the application
 * (decisions §6). The provider integration is its own piece of work, so for now every live create is refused —
 * without a linked account that is the contract's answer (502 `provider_error`), and with one there is nothing yet
 * to call. Swapping this layer is all the integration needs to touch.
 */
import type { CreatePayment, Ids, Mode, PaymentStateMachine } from "@kassa/core"
import { Context, Effect, Layer } from "effect"

/** What the provider is told about a new payment. */
export interface ProviderRequest {
  readonly paymentId: Ids.PaymentId
  readonly mode: Mode.Mode
  readonly draft: CreatePayment.PaymentDraft
  /** The operator-linked provider account of the application; `null` when none is linked. */
  readonly providerAccount: string | null
  /** `Kassa-Simulate` of the request; honoured for test payments only. */
  readonly simulate: "provider_error" | undefined
  /**
   * Derived from the request's Idempotency-Key: a real provider call sends it as the provider-side idempotency key,
   * so a retry after a crash (when nothing was committed here) finds the provider's first answer.
   */
  readonly providerIdempotencyKey: string | null
}

export class PaymentProvider extends Context.Service<
  PaymentProvider,
  {
    /** Whether the provider accepts the payment (`refused` also covers "did not answer"). */
    readonly open: (request: ProviderRequest) => Effect.Effect<PaymentStateMachine.ProviderAnswer>
  }
>()("@kassa/server/payments/PaymentProvider") {
  /** The simulator for test payments; live payments are refused until the provider integration exists. */
  static readonly layer = Layer.succeed(
    PaymentProvider,
    PaymentProvider.of({
      open: (request) => {
        if (request.mode === "test") {
          return Effect.succeed(request.simulate === "provider_error" ? "refused" : "accepted")
        }
        return request.providerAccount === null
          ? Effect.succeed("refused")
          : Effect.logWarning("Live payment refused: the provider integration is not built yet").pipe(
              Effect.annotateLogs({ payment_id: request.paymentId }),
              Effect.as("refused" as const)
            )
      }
    })
  )
}
