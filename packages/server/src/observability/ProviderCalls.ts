/**
 * A call to a payment provider, observed from outside it (the providers themselves stay free of metrics code): a
 * span `PaymentProvider.<operation>` and `kassa_provider_calls_total` / `kassa_provider_call_duration_seconds` by
 * provider, operation and outcome (the provider's answer, or `error`/`interrupted`). Used by the test-mode simulator
 * (payments/Simulator.ts, provider `simulator`) and around every connector call (providers/ProviderConnectors.ts).
 */
import { Cause, Effect, Exit, Option } from "effect"
import * as Metrics from "./Metrics.ts"

/** A provider's refusal (`ProviderRefused`: it read the request and said no) counts as `refused`, else `error`. */
const refusedOrError = (cause: Cause.Cause<unknown>) =>
  Cause.findErrorOption(cause).pipe(
    Option.match({
      onNone: () => "error",
      onSome: (error) =>
        typeof error === "object" && error !== null && "_tag" in error && error._tag === "ProviderRefused"
          ? "refused"
          : "error"
    })
  )

/** Runs one provider call under its span (with `attributes` besides the provider's) and counts it. */
export const observe = <A, E, R>(
  provider: string,
  operation: string,
  call: Effect.Effect<A, E, R>,
  outcomeOf: (value: A) => string,
  attributes?: Readonly<Record<string, unknown>>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    const started = performance.now()
    const counted = call.pipe(
      Effect.onExit((exit) =>
        Metrics.recordProviderCall(
          provider,
          operation,
          Exit.isSuccess(exit)
            ? outcomeOf(exit.value)
            : Exit.hasInterrupts(exit)
              ? "interrupted"
              : refusedOrError(exit.cause),
          Metrics.secondsSince(started)
        )
      )
    )
    // With effect's tracer off (a lane's request whose trace the sampler dropped) the span would be a no-op one,
    // which still costs a create a change of its fiber's context and back: none is made.
    return fiber.cache.tracerEnabled
      ? counted.pipe(
          // No stack trace: it would only point here, and capturing one cost a create ~0.7 % (issue 23).
          Effect.withSpan(
            `PaymentProvider.${operation}`,
            { kind: "client", attributes: { ...attributes, "kassa.provider": provider } },
            { captureStackTrace: false }
          )
        )
      : counted
  })
