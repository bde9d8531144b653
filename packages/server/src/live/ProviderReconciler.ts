/**
 * Lost provider events (issue 12 §3, decisions §10 "Lost events"): an event is only a hint and can be lost, so a
 * pending live payment whose checkout was visited is read from the provider 60 s after the visit and every 5 minutes
 * after that until it is final (`ProviderSettlement.Schedule`; `next_read_at` on `provider_payments`).
 *
 * Every 30 s one round claims the due checkouts (`FOR UPDATE SKIP LOCKED`, each leased for a minute so that other
 * processes leave it alone while it is read), reads each from the provider outside any transaction, and applies the
 * answer like an event's (`ProviderAnswers.applyCheckoutAnswer`, which sets the next read). A provider that does not answer
 * leaves the lease in place: the checkout is read again when it runs out. A failed round is logged; the next runs.
 *
 * The same round expires live payments past `expires_at` at the provider first ("Expiry and cancel ask Stripe
 * first"): the checkout is closed there and the answer applied (`ProviderAnswers.applyExpiryAnswer`); no answer leaves the
 * payment pending and the expiry is tried again within a minute.
 *
 * And it cleans up creates: one the provider did not answer (its exact request sent again under the same key, the
 * checkout it returns closed), and one whose process died between the provider call and the commit (a checkout still
 * `opening` after {@link openingStaleAfter}: found by a read, expired if open, the payment failed — or adopted when
 * money moved — by `ProviderAnswers.resolveUnopened`).
 */
import { Context, DateTime, Duration, Effect, Layer, Option, Schedule } from "effect"
import type { FoundCheckout } from "../providers/ProviderConnector.ts"
import { ProviderConnectors } from "../providers/ProviderConnectors.ts"
import { ProviderLinks } from "../providers/ProviderLinks.ts"
import { type LiveCheckout, LiveCheckouts } from "./LiveCheckouts.ts"
import { ProviderAnswers } from "./ProviderAnswers.ts"

/** Time between two rounds: a due read waits at most this long past its time. */
export const interval: Duration.Duration = Duration.seconds(30)
/** How long a claimed checkout is kept from other processes: longer than one provider call (10 s timeout). */
export const lease: Duration.Duration = Duration.minutes(1)
/**
 * When a checkout still `opening` is taken for a create that died between its provider call and its commit: past the
 * call's 10 s and the 60 s after which a merchant's retry may finish it itself (decisions §4), with a margin.
 */
export const openingStaleAfter: Duration.Duration = Duration.minutes(2)
/** The provider's and Kassa's clocks: a checkout's creation time may differ from the row's by this much. */
const clockMargin = Duration.minutes(1)

/**
 * Where a stuck create's checkout is looked for, in the order it is looked for, stopping at the first part that has
 * it. The provider lists a window's checkouts newest first and the connector reads a bounded number of them (Stripe:
 * 10 pages of 100, https://docs.stripe.com/api/checkout/sessions/list, https://docs.stripe.com/api/pagination), so
 * one window from the payment's creation to now misses the checkout once the account made more checkouts than that
 * since — a busy account, or a row claimed late (the reconciler stopped, or re-claimed for as long as the provider
 * did not answer). A checkout for the row is made by the create's own call or by a retry before the clean-up claims
 * the row (the first round past {@link openingStaleAfter}; a retry then gets 409): the first part is that time, and
 * only the checkouts made since count against the second.
 */
const openingSearchWindows = (
  createdAt: DateTime.Utc,
  now: DateTime.Utc
): ReadonlyArray<{ readonly from: DateTime.Utc; readonly to: DateTime.Utc }> => {
  const from = DateTime.subtractDuration(createdAt, clockMargin)
  const claimedBy = DateTime.addDuration(
    createdAt,
    Duration.sum(Duration.sum(openingStaleAfter, interval), clockMargin)
  )
  const to = DateTime.addDuration(now, clockMargin)
  return DateTime.isLessThan(claimedBy, to)
    ? [
        { from, to: claimedBy },
        { from: claimedBy, to }
      ]
    : [{ from, to }]
}

export class ProviderReconciler extends Context.Service<
  ProviderReconciler,
  {
    /** One round, now: how many checkouts were read. */
    readonly reconcile: Effect.Effect<number>
  }
>()("@kassa/server/live/ProviderReconciler") {
  /** The service and its background fiber, which lives as long as the layer. */
  static readonly layer = Layer.effect(
    ProviderReconciler,
    Effect.gen(function* () {
      const checkouts = yield* LiveCheckouts
      const links = yield* ProviderLinks
      const connectors = yield* ProviderConnectors
      const answers = yield* ProviderAnswers

      const refusedLog = (message: string, paymentId: string, providerMessage: string) =>
        Effect.logWarning(message).pipe(
          Effect.annotateLogs({ payment_id: paymentId, provider_message: providerMessage })
        )

      /** One stuck `opening` checkout; a provider that does not answer leaves it leased, to be claimed again. */
      const cleanUpOpening = Effect.fnUntraced(function* (checkout: LiveCheckout) {
        const link = yield* links.find(checkout.linkId)
        if (Option.isNone(link)) return
        const access = links.access(link.value)
        const connector = connectors.of(link.value.provider)
        let candidates: ReadonlyArray<FoundCheckout> = []
        for (const window of openingSearchWindows(checkout.createdAt, yield* DateTime.now)) {
          const listed = yield* connector.findCheckouts(access, checkout.paymentId, window).pipe(Effect.result)
          if (listed._tag === "Failure") {
            return yield* refusedLog(
              "The provider refused to list checkouts",
              checkout.paymentId,
              listed.failure.message
            )
          }
          if (listed.success._tag === "NoAnswer") return
          candidates = listed.success.checkouts
          if (candidates.length > 0) break
        }
        const readings: Array<FoundCheckout> = []
        for (const found of candidates) {
          if (found.reading.state._tag !== "Open") {
            readings.push(found)
            continue
          }
          // Nobody was ever sent to it (its address was never stored), but nobody must be able to pay it either.
          const closed = yield* connector.close(access, found.checkoutId).pipe(Effect.result)
          if (closed._tag === "Failure") {
            return yield* refusedLog(
              "The provider refused to expire a checkout",
              checkout.paymentId,
              closed.failure.message
            )
          }
          if (closed.success._tag === "NoAnswer") return
          // A provider that keeps it payable until its own expiry (Mollie): still open, and nobody has its address.
          readings.push(
            closed.success._tag === "Unclosable" ? found : { checkoutId: found.checkoutId, reading: closed.success }
          )
        }
        // Money that moved decides; otherwise there is nothing to adopt.
        const decisive =
          readings.find((found) => found.reading.state._tag === "Paid") ??
          readings.find((found) => found.reading.state._tag === "Unpaid") ??
          readings[0] ??
          null
        yield* answers.resolveUnopened({ paymentId: checkout.paymentId, found: decisive })
      })

      const reconcile = Effect.gen(function* () {
        const due = yield* checkouts.claimDue({ now: yield* DateTime.now, limit: 100, lease })
        yield* Effect.forEach(
          due,
          (checkout) =>
            Effect.gen(function* () {
              const link = yield* links.find(checkout.linkId)
              if (Option.isNone(link) || checkout.checkoutId === null) return
              const reading = yield* connectors
                .of(link.value.provider)
                .read(links.access(link.value), checkout.checkoutId)
                .pipe(Effect.result)
              if (reading._tag === "Failure") {
                return yield* Effect.logWarning("The provider refused to read a checkout").pipe(
                  Effect.annotateLogs({ payment_id: checkout.paymentId, provider_message: reading.failure.message })
                )
              }
              if (reading.success._tag === "NoAnswer") return
              yield* answers.applyCheckoutAnswer({
                paymentId: checkout.paymentId,
                reading: reading.success,
                via: "provider_read"
              })
            }),
          { concurrency: 4, discard: true }
        )
        // Expiry asks the provider first (decisions §10): the checkout is closed there, and its answer decides.
        const expiring = yield* checkouts.claimExpiring({ now: yield* DateTime.now, limit: 100, lease })
        yield* Effect.forEach(
          expiring,
          (checkout) =>
            Effect.gen(function* () {
              const link = yield* links.find(checkout.linkId)
              if (Option.isNone(link) || checkout.checkoutId === null) return
              const closed = yield* connectors
                .of(link.value.provider)
                .close(links.access(link.value), checkout.checkoutId)
                .pipe(Effect.result)
              if (closed._tag === "Failure") {
                return yield* Effect.logWarning("The provider refused to expire a checkout").pipe(
                  Effect.annotateLogs({ payment_id: checkout.paymentId, provider_message: closed.failure.message })
                )
              }
              yield* answers.applyExpiryAnswer({ paymentId: checkout.paymentId, reading: closed.success })
            }),
          { concurrency: 4, discard: true }
        )
        // A create the provider did not answer may still have made a checkout: the same request under the same
        // Idempotency-Key gets it (or makes it), and it is closed at once, so nobody can pay a failed payment.
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
              const connector = connectors.of(link.value.provider)
              const opened = yield* connector.open(access, request).pipe(Effect.result)
              if (opened._tag === "Failure") {
                // Refused (e.g. the window of expires_at has passed and no checkout was made then): nothing to close.
                return yield* checkouts.cleanedUp(
                  checkout.paymentId,
                  { _tag: "Refused", message: opened.failure.message },
                  yield* DateTime.now
                )
              }
              if (opened.success._tag === "NoAnswer") return
              const closed = yield* connector.close(access, opened.success.checkoutId).pipe(Effect.result)
              if (closed._tag === "Success" && closed.success._tag === "NoAnswer") return
              // Closed, or left to expire at the provider (Unclosable: nobody has its address).
              const outcome =
                closed._tag === "Success" && closed.success._tag === "Unclosable" ? "Unclosable" : "Expired"
              yield* checkouts.cleanedUp(
                checkout.paymentId,
                { _tag: outcome, checkoutId: opened.success.checkoutId },
                yield* DateTime.now
              )
            }),
          { concurrency: 4, discard: true }
        )
        // A create that died between its provider call and its commit (or a retry's that did): whatever the provider
        // made for it is found by a read, expired if open, and the payment failed (or the checkout adopted when money
        // moved) in one transaction, with its event and delivery (ProviderSettlement.decideUnopened).
        const stuck = yield* checkouts.claimStuck({
          now: yield* DateTime.now,
          staleAfter: openingStaleAfter,
          limit: 100,
          lease
        })
        yield* Effect.forEach(stuck, cleanUpOpening, { concurrency: 4, discard: true })
        return due.length + expiring.length + failedCreates.length + stuck.length
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
