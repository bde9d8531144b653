/**
 * The expiry sweeper (decisions §3): readers expire only what they show, and this fiber expires the rest within 30 s.
 * Every 10 s it expires due payments set-based, in batches of 500 (`FOR UPDATE SKIP LOCKED`, so several server
 * processes share the work and never wait on each other or on a request; per batch one UPDATE and two INSERTs for
 * the events and deliveries, in one transaction). A failed round is logged and the next one runs as usual.
 * Idempotency keys past their 24 hours are Retention's (retention/Retention.ts, in batches): one deleter per table.
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { PaymentWrites } from "../ledger/PaymentWrites.ts"

/** Time between two rounds; as every read expires what it shows, no payment is seen pending past `expires_at`. */
export const interval: Duration.Duration = Duration.seconds(10)

export interface SweepResult {
  readonly expired: number
}

export class ExpirySweeper extends Context.Service<
  ExpirySweeper,
  {
    /** One round, now. */
    readonly sweep: Effect.Effect<SweepResult>
  }
>()("@kassa/server/payments/ExpirySweeper") {
  /** The service and its background fiber, which lives as long as the layer. */
  static readonly layer = Layer.effect(
    ExpirySweeper,
    Effect.gen(function* () {
      const writes = yield* PaymentWrites

      const sweep = Effect.map(writes.expireDue(), (expired) => ({ expired })).pipe(
        Effect.withSpan("ExpirySweeper.sweep")
      )

      yield* sweep.pipe(
        Effect.tap(({ expired }) => (expired > 0 ? Effect.logInfo(`Expired ${expired} payment(s)`) : Effect.void)),
        Effect.catchCause((cause) => Effect.logError("Expiry sweep failed", cause)),
        Effect.repeat(Schedule.spaced(interval)),
        Effect.forkScoped
      )

      return ExpirySweeper.of({ sweep })
    })
  )
}
