/**
 * The live parts of a merchant's create and cancel (decisions §10, "Create with a live key", "Expiry and cancel ask
 * Stripe first"): the application's active provider link (cached), the payment opened at its provider, a create
 * resumed under its Idempotency-Key, and a cancel asked of the provider first.
 *
 * A live create commits the `pending` payment with its `opening` checkout row before the provider hears of it; the
 * provider is called with no transaction open, under the key stored on the row; its checkout is stored, or the payment
 * fails with its event in one transaction. Every write is conditional on the row still being `opening` and unclaimed
 * by the clean-up (`ProviderReconciler`), so a merchant's retry, the first attempt and the clean-up can meet here and
 * still end in one outcome.
 */
import {
  ApiError,
  type CreatePayment,
  type Ids,
  type Payment,
  PaymentStateMachine,
  ProviderSettlement
} from "@kassa/core"
import { Cache, Context, DateTime, Duration, Effect, Exit, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import { ServerConfig } from "../config/ServerConfig.ts"
import type { Claim } from "../ledger/IdempotencyStore.ts"
import { PaymentRepository, type Scope, type StoredPayment } from "../ledger/PaymentRepository.ts"
import { notFound, PaymentWrites } from "../ledger/PaymentWrites.ts"
import { type Connector, type OpenRequest, webhookPath } from "../providers/ProviderConnector.ts"
import { ProviderConnectors } from "../providers/ProviderConnectors.ts"
import { ProviderLinks, type StoredLink } from "../providers/ProviderLinks.ts"
import { type LiveCheckout, LiveCheckouts } from "./LiveCheckouts.ts"
import { closeAnswerOf, nextCheckoutRead, ProviderAnswers } from "./ProviderAnswers.ts"

/** How long after a create the provider did not answer its possible checkout is cleaned up (sent again, expired). */
export const cleanupDelay = Duration.minutes(1)

/** The payment's `expires_at` clamped to the provider's checkout window (`ProviderConnector.checkoutWindow`). */
export const providerExpiry = (
  expiresAt: DateTime.Utc,
  now: DateTime.Utc,
  window: { readonly min: Duration.Duration; readonly max: Duration.Duration }
): DateTime.Utc => {
  const earliest = DateTime.addDuration(now, window.min)
  const latest = DateTime.addDuration(now, window.max)
  return DateTime.min(DateTime.max(expiresAt, earliest), latest)
}

/** What a live create answers once its payment exists. */
export type OpenAnswer = Result.Result<Payment.Payment, ApiError.ProviderError | ApiError.IdempotencyRequestInProgress>

/** What a live create answers: a checked insert may also lose rule 5's race. */
export type CreateAnswer = Result.Result<
  Payment.Payment,
  ApiError.OrderReferenceAlreadyPaid | ApiError.ProviderError | ApiError.IdempotencyRequestInProgress
>

export type CancelRefusal = ApiError.NotFound | ApiError.PaymentNotCancellable | ApiError.ProviderError

export class LivePayments extends Context.Service<
  LivePayments,
  {
    /**
     * A live create after rule 5's check (`checked`) or with rule 5 left to the insert's unique index: `unlinked`
     * when the application has no active link, `taken` when an unchecked insert found the reference taken (the caller
     * checks it), else the answer — a checked insert that loses the reference's race answers its 409.
     */
    readonly create: (input: {
      readonly id: Ids.PaymentId
      readonly scope: Scope
      readonly draft: CreatePayment.PaymentDraft
      readonly ttlSeconds: number
      readonly claim: Claim | undefined
      readonly checked: boolean
    }) => Effect.Effect<"unlinked" | "taken" | CreateAnswer>
    /**
     * The answer to a live create that finds its payment already made under its Idempotency-Key (see {@link resume}
     * below); none when the payment has no checkout row (it was refused before one was made).
     */
    readonly resume: (stored: StoredPayment, claim: Claim) => Effect.Effect<Option.Option<OpenAnswer>>
    /**
     * Cancel of a live payment with an open provider checkout: under the row lock (NOWAIT) the payment is checked
     * and the cancel recorded on its checkout (so the provider's `expired` event, should it arrive first, ends it
     * `cancelled`); the provider is asked to close the checkout outside any transaction; its answer is applied under
     * the lock by `ProviderSettlement.decideClose`. None when the payment has no checkout open at a provider.
     */
    readonly cancel: (
      scope: Scope,
      id: Ids.PaymentId
    ) => Effect.Effect<Option.Option<Payment.Payment>, CancelRefusal | ApiError.PaymentBusy>
  }
>()("@kassa/server/live/LivePayments") {
  static readonly layer = Layer.effect(
    LivePayments,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* PaymentRepository
      const writes = yield* PaymentWrites
      const answers = yield* ProviderAnswers
      const links = yield* ProviderLinks
      const connectors = yield* ProviderConnectors
      const checkouts = yield* LiveCheckouts
      const { baseUrl } = yield* ServerConfig

      /** What the provider is asked for a live payment: derived from the stored payment alone, so every attempt
       * sends the same request under the same key (a retry, a takeover after a crash). `expires_at` is clamped from
       * the payment's creation, not from the attempt. */
      const openRequestOf = (
        payment: Payment.Payment,
        idempotencyKey: string,
        link: StoredLink,
        connector: Connector
      ): OpenRequest => ({
        paymentId: payment.id,
        amount: payment.amount,
        currency: payment.currency,
        method: payment.method,
        // An empty description is no name: a provider refuses an empty one (issue 21 §10), the reference stands in.
        name:
          payment.description === null || payment.description.trim() === ""
            ? payment.order_reference
            : payment.description,
        locale: payment.locale,
        customerEmail: payment.customer.email,
        returnUrl: `${baseUrl}/checkout/${payment.id}/return`,
        webhookUrl: `${baseUrl}${webhookPath(link.provider, link.id)}`,
        expiresAt: providerExpiry(payment.expires_at, payment.created_at, connector.checkoutWindow),
        idempotencyKey
      })

      const notOpenedError = (id: Ids.PaymentId, said: "NoAnswer" | "Refused" | "NotOpened") =>
        new ApiError.ProviderError({
          message:
            said === "NoAnswer"
              ? "The payment provider did not answer; the payment is stored as failed. Create a new one to retry."
              : said === "Refused"
                ? "The payment provider refused the payment; it is stored as failed. Create a new one to retry."
                : "The payment provider did not open a checkout; the payment is stored as failed. Create a new one to retry.",
          payment_id: id
        })

      const cleaningUp = () =>
        new ApiError.IdempotencyRequestInProgress({
          message: "The payment's checkout is being cleaned up at the provider; retry in a second."
        })

      /** What a live create answers for its payment as it is now (another writer may have finished it). */
      const answerStored = Effect.fnUntraced(function* (id: Ids.PaymentId) {
        const stored = yield* writes.reload(id)
        const checkout = yield* checkouts.find(id)
        if (Option.isNone(checkout) || checkout.value.state === "open") {
          return Result.succeed(stored.payment) as OpenAnswer
        }
        if (checkout.value.state === "not_opened") return Result.fail(notOpenedError(id, "NotOpened")) as OpenAnswer
        return Result.fail(cleaningUp()) as OpenAnswer
      })

      /**
       * Active links by application, for live creates (issue 12's bench: one read less per create). Never trusted on
       * its own: the create's insert writes only while the cached link is still active (`insertOpening` →
       * `unlinked`), so a link retired or replaced, by this process or another, is read again at its next create.
       * effect's Cache, bounded (the oldest entries go first); "no link" is not kept, so a link made later is found.
       */
      const activeLinks = yield* Cache.makeWith((applicationId: Ids.ApplicationId) => links.active(applicationId), {
        capacity: 1024,
        timeToLive: (exit) => (Exit.isSuccess(exit) && Option.isSome(exit.value) ? Duration.infinity : Duration.zero)
      })
      const activeLink = (applicationId: Ids.ApplicationId, fresh: boolean) =>
        fresh
          ? Effect.andThen(Cache.invalidate(activeLinks, applicationId), Cache.get(activeLinks, applicationId))
          : Cache.get(activeLinks, applicationId)

      /**
       * Opens a live payment's checkout at its provider: the payment is `pending` with its checkout row `opening`,
       * both committed, and no transaction is open (see the module comment).
       */
      const openAtProvider = Effect.fnUntraced(
        function* (payment: Payment.Payment, checkout: LiveCheckout, known?: StoredLink) {
          const { id } = payment
          // The first attempt has its link in hand; a resumed one reads it (a retired link still opens its payments).
          const link = known === undefined ? yield* links.find(checkout.linkId) : Option.some(known)
          if (Option.isNone(link)) return yield* Effect.die(new Error(`provider link ${checkout.linkId} vanished`))
          const connector = connectors.of(link.value.provider)
          const openRequest = openRequestOf(payment, checkout.idempotencyKey, link.value, connector)
          const opened = yield* connector.open(links.access(link.value), openRequest).pipe(Effect.result)
          const after = yield* DateTime.now
          if (Result.isSuccess(opened) && opened.success._tag === "Opened") {
            const made = opened.success
            const stored = yield* checkouts.opened({
              paymentId: id,
              checkoutId: made.checkoutId,
              providerPaymentId: made.providerPaymentId,
              url: made.url,
              expiresAt: made.expiresAt,
              now: after
            })
            return stored ? (Result.succeed(payment) as OpenAnswer) : yield* answerStored(id)
          }
          // Refused (4xx), failed or no answer in 10 s: the payment is failed, with its event, in one transaction.
          const said = Result.isSuccess(opened)
            ? opened.success
            : {
                _tag: "Refused" as const,
                status: opened.failure.status,
                code: opened.failure.code,
                message: opened.failure.message
              }
          const failedHere = yield* sql.withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, undefined, "wait")
              const current = yield* checkouts.find(id)
              if (
                Option.isNone(locked) ||
                Option.isNone(current) ||
                current.value.state !== "opening" ||
                current.value.closing !== null
              ) {
                return false
              }
              const failed = PaymentStateMachine.settle(locked.value.payment, "failed", { now: after })
              if (Result.isSuccess(failed))
                yield* writes.apply(locked.value, failed.success, after, { settledVia: "provider_refused" })
              // The provider may have made a checkout it could not tell us about: the exact request is kept so that the
              // reconciler can send it again under the same Idempotency-Key and expire what it gets (decisions §10).
              yield* checkouts.notOpened(
                id,
                said,
                after,
                said._tag === "NoAnswer"
                  ? { request: openRequest, at: DateTime.addDuration(after, cleanupDelay) }
                  : null
              )
              return true
            })
          )
          if (!failedHere) return yield* answerStored(id)
          yield* Effect.logWarning("Live payment failed: the provider did not open a checkout").pipe(
            Effect.annotateLogs({
              payment_id: id,
              provider_answer: said._tag,
              // Which "no answer" (timeout, unavailable, rate_limited) or which refusal (the HTTP status).
              provider_detail: said._tag === "NoAnswer" ? said.reason : said._tag === "Refused" ? said.status : null
            })
          )
          return Result.fail(notOpenedError(id, said._tag === "NoAnswer" ? "NoAnswer" : "Refused")) as OpenAnswer
        },
        Effect.catchTags({ PaymentBusy: Effect.die, SqlError: Effect.die })
      )

      /**
       * A create that finds its payment already made under its Idempotency-Key (the first attempt's own continuation
       * after its commit, or a retry after the first attempt died): an open checkout → the payment; a checkout the
       * provider did not open → 502 `provider_error`; one still `opening` is opened now, with the same request under
       * the same key, so the provider answers with the checkout it may already have made — outside the key's
       * transaction (`Claim.commitFirst`); one the clean-up has claimed → 409 in progress (never stored).
       */
      const resume = Effect.fnUntraced(function* (stored: StoredPayment, claim: Claim) {
        const found = yield* checkouts.find(stored.payment.id)
        if (Option.isNone(found)) return Option.none<OpenAnswer>()
        const checkout = found.value
        switch (checkout.state) {
          case "open":
            return Option.some(Result.succeed(stored.payment) as OpenAnswer)
          case "not_opened":
            // Found later (a retry after a crash): what the provider said is not known here, only the outcome.
            return Option.some(Result.fail(notOpenedError(stored.payment.id, "NotOpened")) as OpenAnswer)
          case "opening": {
            if (checkout.closing !== null) return Option.some(Result.fail(cleaningUp()) as OpenAnswer)
            if (claim.commitFirst !== null) {
              yield* claim.commitFirst
              return Option.some(Result.succeed(stored.payment) as OpenAnswer)
            }
            return Option.some(yield* openAtProvider(stored.payment, checkout))
          }
        }
      })

      /**
       * One attempt with one link: the `pending` payment and its `opening` checkout row commit together before the
       * provider hears of it. With an Idempotency-Key they commit with the key's record (still without an answer) —
       * `Claim.commitFirst` — and the key's work runs again after that commit, outside its transaction, finding this
       * payment ({@link resume}). The provider's Idempotency-Key is derived from the payment id, so every attempt for
       * this payment sends one key.
       */
      const openWith = Effect.fnUntraced(function* (
        link: StoredLink,
        input: Parameters<LivePayments["Service"]["create"]>[0]
      ) {
        const { id, scope, draft } = input
        const now = yield* DateTime.now
        const transition = PaymentStateMachine.create({
          id,
          mode: "live",
          draft,
          checkoutUrl: `${baseUrl}/checkout/${id}`,
          ttlSeconds: input.ttlSeconds,
          now,
          provider: "accepted"
        })
        // Scoped to application and mode, so two merchants' (or one merchant's test and live) keys never meet.
        const idempotencyKey = `kassa:${scope.applicationId}:live:payment:${id}`
        // One statement (payment and checkout row, while the link is still active): atomic without BEGIN/COMMIT.
        const written = yield* repo.insertOpening(
          transition.payment,
          { applicationId: scope.applicationId, idempotencyKey: input.claim?.key ?? null },
          now,
          { linkId: link.id, idempotencyKey }
        )
        if (written === "unlinked") return "unlinked" as const
        if (written === "taken") {
          if (!input.checked) return "taken" as const
          return Result.fail(yield* writes.lostReference(scope, draft.order_reference))
        }
        if (input.claim?.commitFirst != null) {
          // The provider is called by the key's work run again after this commit (resume).
          yield* input.claim.commitFirst
          return Result.succeed<Payment.Payment>(transition.payment)
        }
        const checkout: LiveCheckout = {
          paymentId: id,
          linkId: link.id,
          state: "opening",
          idempotencyKey,
          checkoutId: null,
          checkoutUrl: null,
          visit: null,
          visitedAt: null,
          nextReadAt: null,
          closing: null,
          createdAt: now
        }
        return (yield* openAtProvider(transition.payment, checkout, link)) as CreateAnswer
      })

      const create = Effect.fnUntraced(function* (input: Parameters<LivePayments["Service"]["create"]>[0]) {
        // A link retired or replaced since it was cached is found by the insert (`unlinked`): read it again.
        for (let attempt = 0; attempt < 3; attempt++) {
          const link = yield* activeLink(input.scope.applicationId, attempt > 0 || input.checked)
          if (Option.isNone(link)) return "unlinked" as const
          const opened = yield* openWith(link.value, input)
          if (opened !== "unlinked") return opened
          yield* Cache.invalidate(activeLinks, input.scope.applicationId)
        }
        return "unlinked" as const
      })

      const cancelAtProvider = Effect.fnUntraced(
        function* (scope: Scope, id: Ids.PaymentId, link: StoredLink, checkoutId: string) {
          const checked = yield* sql.withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, scope, "nowait")
              if (Option.isNone(locked)) return Result.fail(notFound()) as Result.Result<void, CancelRefusal>
              const now = yield* DateTime.now
              const seen = yield* writes.observe(locked.value, now)
              const allowed = PaymentStateMachine.cancel(seen.payment)
              if (Result.isFailure(allowed)) return Result.fail(allowed.failure) as Result.Result<void, CancelRefusal>
              yield* checkouts.setClosing(id, "cancel", now)
              return Result.succeed(undefined) as Result.Result<void, CancelRefusal>
            })
          )
          yield* Effect.fromResult(checked)
          const closed = yield* connectors.of(link.provider).close(links.access(link), checkoutId).pipe(Effect.result)
          // A refusal (4xx) closes nothing either: like no answer, the payment stays as it is and cancel gets 502.
          const reading = Result.isSuccess(closed) && closed.success._tag === "Checkout" ? closed.success : null
          const answer: ProviderSettlement.CloseAnswer = Result.isSuccess(closed)
            ? closeAnswerOf(closed.success)
            : { _tag: "NoAnswer", reason: "unavailable" }
          const decided = yield* sql.withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, scope, "wait")
              const checkout = yield* checkouts.find(id)
              if (Option.isNone(locked) || Option.isNone(checkout)) {
                return Result.fail(notFound()) as Result.Result<Payment.Payment, CancelRefusal>
              }
              const now = yield* DateTime.now
              const decision = ProviderSettlement.decideClose(locked.value.payment, "cancel", answer, {
                now,
                visit: checkout.value.visit,
                closing: "cancel"
              })
              // Only the API cancels a live payment (the dashboard cancels test payments alone).
              const after = yield* answers.applySettlement(locked.value, decision.settlement, now, {
                settledVia: "api_cancel"
              })
              if (reading !== null) {
                yield* checkouts.recordRead(
                  id,
                  reading,
                  reading.providerPaymentId,
                  after.status === "pending" ? checkout.value.nextReadAt : null,
                  now
                )
              } else if (Result.isSuccess(closed) && closed.success._tag === "Unclosable") {
                // Cancelled in Kassa alone (decisions §11): the provider's checkout stays payable until its own
                // expiry, so it is read until it is final; money taken there is flagged `paid_after_final`.
                yield* checkouts.recordRead(
                  id,
                  closed.success,
                  null,
                  nextCheckoutRead(after.status, { _tag: "Open" }, checkout.value, now),
                  now
                )
              }
              if (decision.error === null) return Result.succeed(after) as Result.Result<Payment.Payment, CancelRefusal>
              return Result.fail(
                decision.error._tag === "ProviderError"
                  ? new ApiError.ProviderError({ message: decision.error.message, payment_id: id })
                  : decision.error
              ) as Result.Result<Payment.Payment, CancelRefusal>
            })
          )
          return yield* Effect.fromResult(decided)
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      const cancel = Effect.fnUntraced(function* (scope: Scope, id: Ids.PaymentId) {
        const checkout = yield* checkouts.find(id)
        if (Option.isNone(checkout) || checkout.value.checkoutId === null) return Option.none<Payment.Payment>()
        const link = yield* links.find(checkout.value.linkId)
        if (Option.isNone(link)) return Option.none<Payment.Payment>()
        return Option.some(yield* cancelAtProvider(scope, id, link.value, checkout.value.checkoutId))
      })

      return LivePayments.of({ create, resume, cancel })
    })
  )
}
