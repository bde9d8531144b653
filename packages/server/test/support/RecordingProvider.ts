/**
 * A payment provider boundary that records every request it is asked, for tests about when (and whether) the
 * provider hears of a payment. It answers as the production boundary does, except that a live payment of an
 * application with a linked provider account is accepted — what a real provider does with a valid payment.
 */
import { Effect, Layer } from "effect"
import { PaymentProvider, type ProviderRequest } from "../../src/payments/PaymentProvider.ts"

export interface RecordingProvider {
  readonly requests: Array<ProviderRequest>
  readonly layer: Layer.Layer<PaymentProvider>
}

export const recordingProvider = (): RecordingProvider => {
  const requests: Array<ProviderRequest> = []
  const layer = Layer.effect(
    PaymentProvider,
    Effect.gen(function* () {
      const production = yield* PaymentProvider
      return PaymentProvider.of({
        open: (request) =>
          Effect.sync(() => requests.push(request)).pipe(
            Effect.andThen(
              request.mode === "live" && request.providerAccount !== null
                ? Effect.succeed("accepted" as const)
                : production.open(request)
            )
          )
      })
    })
  ).pipe(Layer.provide(PaymentProvider.layer))
  return { requests, layer }
}
