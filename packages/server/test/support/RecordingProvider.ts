/**
 * A test-mode simulator that records every request it is asked, for tests about when (and whether) a payment is
 * announced before it is stored. It answers as the production simulator does. (Live payments go to the provider
 * the application is linked to — the fake Stripe, which records its own requests.)
 */
import { Effect, Layer } from "effect"
import { Simulator, type SimulatorRequest } from "../../src/payments/Simulator.ts"

export interface RecordingProvider {
  readonly requests: Array<SimulatorRequest>
  readonly layer: Layer.Layer<Simulator>
}

export const recordingProvider = (): RecordingProvider => {
  const requests: Array<SimulatorRequest> = []
  const layer = Layer.effect(
    Simulator,
    Effect.gen(function* () {
      const production = yield* Simulator
      return Simulator.of({
        open: (request) => Effect.sync(() => requests.push(request)).pipe(Effect.andThen(production.open(request)))
      })
    })
  ).pipe(Layer.provide(Simulator.layer))
  return { requests, layer }
}
