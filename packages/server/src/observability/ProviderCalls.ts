/**
 * A call to a payment provider, observed from outside it (the providers themselves stay free of metrics code): a
 * span `PaymentProvider.<operation>` and `kassa_provider_calls_total` / `kassa_provider_call_duration_seconds` by
 * operation and outcome (the provider's answer, or `error`/`interrupted`). Used by the test-mode simulator
 * (payments/Simulator.ts).
 */
import { Effect, Exit } from "effect"
import * as Metrics from "./Metrics.ts"

/** Runs one provider call under its span and counts it. */
export const observe = <A, E, R>(
  operation: string,
  call: Effect.Effect<A, E, R>,
  outcomeOf: (value: A) => string
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    return call.pipe(
      Effect.onExit((exit) =>
        Metrics.recordProviderCall(
          operation,
          Exit.isSuccess(exit) ? outcomeOf(exit.value) : Exit.hasInterrupts(exit) ? "interrupted" : "error",
          Metrics.secondsSince(started)
        )
      ),
      Effect.withSpan(`PaymentProvider.${operation}`, { kind: "client" })
    )
  })
