/**
 * Wakes the dispatcher when work is added, so a first attempt leaves within milliseconds of its commit instead of
 * at the next poll.
 *
 * - In process: the event outbox calls {@link DeliveryWakeup.wake} after the status change commits (the only way on
 *   the embedded database, whose single connection must never be held by a listener).
 * - On PostgreSQL, every server process also LISTENs on {@link channel}: a statement trigger on `deliveries`
 *   (migration 0002) NOTIFYs it, and PostgreSQL delivers that at commit, to every process. The listener reconnects
 *   after a lost connection and wakes once, for whatever was committed meanwhile.
 *
 * Wake-ups coalesce: any number before the dispatcher looks count as one.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Option, Queue } from "effect"
import { ServerConfig } from "../config/ServerConfig.ts"

/** The NOTIFY channel of migration 0002's trigger. */
export const channel = "kassa_deliveries"

export class DeliveryWakeup extends Context.Service<
  DeliveryWakeup,
  {
    /** Signals that deliveries may be due now. */
    readonly wake: Effect.Effect<void>
    /** Waits for a signal, at most `timeout`; true when one came. */
    readonly wait: (timeout: Duration.Input) => Effect.Effect<boolean>
  }
>()("@kassa/server/webhooks/DeliveryWakeup") {
  static readonly layer = Layer.effect(
    DeliveryWakeup,
    Effect.gen(function* () {
      const signals = yield* Queue.sliding<true>(1)
      const wake = Queue.offer(signals, true).pipe(Effect.asVoid)
      const wait = (timeout: Duration.Input) =>
        Queue.take(signals).pipe(Effect.timeoutOption(timeout), Effect.map(Option.isSome))

      const config = yield* ServerConfig
      if (Option.isSome(config.databaseUrl)) {
        const pg = yield* PgClient.PgClient
        const listen = Effect.gen(function* () {
          const notifications = yield* pg.listen(channel)
          yield* wake
          yield* Queue.take(notifications).pipe(Effect.andThen(wake), Effect.forever)
        }).pipe(Effect.scoped)
        yield* listen.pipe(
          Effect.catchCause((cause) => Effect.logWarning("Webhook wake-up listener lost; reconnecting", cause)),
          Effect.andThen(Effect.sleep(Duration.seconds(1))),
          Effect.forever,
          Effect.forkScoped
        )
      }

      return DeliveryWakeup.of({ wake, wait })
    })
  )
}
