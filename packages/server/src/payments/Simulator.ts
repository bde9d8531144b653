/**
 * The built-in simulator that test payments are announced to before they are stored (decisions §6): it accepts,
 * or refuses when the request says `Kassa-Simulate: provider_error`. Live payments never come here: they go to the
 * provider the operator linked (live/LivePayments.ts). A service, so that tests can watch it
 * (test/support/RecordingProvider.ts); every call is observed like a provider call ({@link Simulator.observed}).
 */
import type { CreatePayment, Ids, PaymentStateMachine } from "@kassa/core"
import { Context, Effect, Layer } from "effect"
import * as ProviderCalls from "../observability/ProviderCalls.ts"

const testMode = { "kassa.mode": "test" } as const

/** What the simulator is told about a new test payment. */
export interface SimulatorRequest {
  readonly paymentId: Ids.PaymentId
  readonly mode: "test"
  readonly draft: CreatePayment.PaymentDraft
  /** `Kassa-Simulate` of the request. */
  readonly simulate: "provider_error" | undefined
}

export class Simulator extends Context.Service<
  Simulator,
  {
    /** Whether the simulated provider accepts the payment. */
    readonly open: (request: SimulatorRequest) => Effect.Effect<PaymentStateMachine.ProviderAnswer>
  }
>()("@kassa/server/payments/Simulator") {
  static readonly layer = Layer.succeed(
    Simulator,
    Simulator.of({
      open: (request) => Effect.succeed(request.simulate === "provider_error" ? "refused" : "accepted")
    })
  )

  /** The given simulator with every call observed (span `PaymentProvider.open`, the provider-call metrics). */
  static readonly observed = (simulator: Layer.Layer<Simulator>): Layer.Layer<Simulator> =>
    Layer.effect(
      Simulator,
      Effect.gen(function* () {
        const inner = yield* Simulator
        return Simulator.of({
          // The mode as a span attribute, not `Effect.annotateSpans`: that changes the fiber's context (and back) on
          // every create, traced or not.
          open: (request) =>
            ProviderCalls.observe("simulator", "open", inner.open(request), (answer) => answer, testMode)
        })
      })
    ).pipe(Layer.provide(simulator))
}
