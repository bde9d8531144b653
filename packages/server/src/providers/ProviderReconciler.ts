/**
 * Lost provider events (issue 12 §3, decisions §10 "Lost events"): an event is only a hint and can be lost, so a
 * pending live payment whose checkout was visited is read from the provider 60 s after the visit and every 5 minutes
 * after that until it is final (`ProviderSettlement.Schedule`; `next_read_at` on `provider_payments`).
 *
 * Every 30 s one round claims the due checkouts (`FOR UPDATE SKIP LOCKED`, each leased for a minute so that other
 * processes leave it alone while it is read), reads each from the provider outside any transaction, and applies the
 * answer like an event's (`Payments.applyCheckoutAnswer`, which sets the next read). A provider that does not answer
 * leaves the lease in place: the checkout is read again when it runs out. A failed round is logged; the next runs.
 *
 * The same round expires live payments past `expires_at` at the provider first ("Expiry and cancel ask Stripe
 * first"): the session is expired there and the answer applied (`Payments.applyExpiryAnswer`); no answer leaves the
 * payment pending and the expiry is tried again within a minute.
 */
import { Context, DateTime, Duration, Effect, Layer, Option, Schedule } from "effect"
import { Payments } from "../payments/Payments.ts"
import { LiveCheckouts } from "./LiveCheckouts.ts"
import { ProviderConnector } from "./ProviderConnector.ts"
import { ProviderLinks } from "./ProviderLinks.ts"

/** Time between two rounds: a due read waits at most this long past its time. */
export const interval: Duration.Duration = Duration.seconds(30)
/** How long a claimed checkout is kept from other processes: longer than one provider call (10 s timeout). */
export const lease: Duration.Duration = Duration.minutes(1)

export class ProviderReconciler extends Context.Service<
  ProviderReconciler,
  {
    /** One round, now: how many checkouts were read. */
    readonly reconcile: Effect.Effect<number>
  }
>()("@kassa/server/providers/ProviderReconciler") {
  /** The service and its background fiber, which lives as long as the layer. */
  static readonly layer = Layer.effect(
    ProviderReconciler,
    Effect.gen(function* () {
      const checkouts = yield* LiveCheckouts
      const links = yield* ProviderLinks
      const connector = yield* ProviderConnector
      const payments = yield* Payments

      const reconcile = Effect.gen(function* () {
        const due = yield* checkouts.claimDue({ now: yield* DateTime.now, limit: 100, lease })
        yield* Effect.forEach(
          due,
          (checkout) =>
            Effect.gen(function* () {
              const link = yield* links.find(checkout.linkId)
              if (Option.isNone(link) || checkout.sessionId === null) return
              const reading = yield* connector.read(links.access(link.value), checkout.sessionId).pipe(Effect.result)
              if (reading._tag === "Failure") {
                return yield* Effect.logWarning("The provider refused to read a checkout").pipe(
                  Effect.annotateLogs({ payment_id: checkout.paymentId, provider_message: reading.failure.message })
                )
              }
              if (reading.success._tag === "NoAnswer") return
              yield* payments.applyCheckoutAnswer({ paymentId: checkout.paymentId, reading: reading.success })
            }),
          { concurrency: 4, discard: true }
        )
        // Expiry asks the provider first (decisions §10): the session is expired there, and its answer decides.
        const expiring = yield* checkouts.claimExpiring({ now: yield* DateTime.now, limit: 100, lease })
        yield* Effect.forEach(
          expiring,
          (checkout) =>
            Effect.gen(function* () {
              const link = yield* links.find(checkout.linkId)
              if (Option.isNone(link) || checkout.sessionId === null) return
              const closed = yield* connector.close(links.access(link.value), checkout.sessionId).pipe(Effect.result)
              if (closed._tag === "Failure") {
                return yield* Effect.logWarning("The provider refused to expire a checkout").pipe(
                  Effect.annotateLogs({ payment_id: checkout.paymentId, provider_message: closed.failure.message })
                )
              }
              yield* payments.applyExpiryAnswer({ paymentId: checkout.paymentId, reading: closed.success })
            }),
          { concurrency: 4, discard: true }
        )
        // A create Stripe did not answer may still have made a session: the same request under the same
        // Idempotency-Key gets it (or makes it), and it is expired at once, so nobody can pay a failed payment.
        const failedCreates = yield* checkouts.claimCleanup({ now: yield* DateTime.now, limit: 100, lease })
        yield* Effect.forEach(
          failedCreates,
          ({ checkout, request }) =>
            Effect.gen(function* () {
              const link = yield* links.find(checkout.linkId)
              if (Option.isNone(link) || request === null) {
                return yield* checkouts.cleanedUp(checkout.paymentId, { _tag: "Nothing" }, yield* DateTime.now)
              }
              const access = links.access(link.value)
              const opened = yield* connector.open(access, request).pipe(Effect.result)
              if (opened._tag === "Failure") {
                // Refused (e.g. the window of expires_at has passed and no session was made then): nothing to close.
                return yield* checkouts.cleanedUp(
                  checkout.paymentId,
                  { _tag: "Refused", message: opened.failure.message },
                  yield* DateTime.now
                )
              }
              if (opened.success._tag === "NoAnswer") return
              const closed = yield* connector.close(access, opened.success.sessionId).pipe(Effect.result)
              if (closed._tag === "Success" && closed.success._tag === "NoAnswer") return
              yield* checkouts.cleanedUp(
                checkout.paymentId,
                { _tag: "Expired", sessionId: opened.success.sessionId },
                yield* DateTime.now
              )
            }),
          { concurrency: 4, discard: true }
        )
        return due.length + expiring.length + failedCreates.length
      }).pipe(Effect.withSpan("ProviderReconciler.reconcile"))

      yield* reconcile.pipe(
        Effect.catchCause((cause) => Effect.logError("Provider reconciliation failed", cause)),
        Effect.repeat(Schedule.spaced(interval)),
        Effect.forkScoped
      )

      return ProviderReconciler.of({ reconcile })
    })
  )
}
