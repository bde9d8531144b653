/**
 * The payments service: every merchant operation on a payment, plus what the hosted checkout and the expiry
 * sweeper need. The imperative shell around @kassa/core: load (and lock) the payment, let the state machine
 * decide, then write the payment, its event and its delivery in one transaction.
 *
 * - Writers take the payment's row lock with NOWAIT: a payment another request is changing answers 409
 *   `payment_busy` at once, and two refunds can never both see the same refundable amount.
 * - Lazy expiry: every reader and writer passes the payment through `PaymentStateMachine.observe` first, so a
 *   pending payment past `expires_at` is expired (and its event written, committed) before anything is answered. A
 *   list expires only the rows it shows (`expireShown`); the sweeper expires the rest set-based (`expireDue`).
 * - A business refusal after a lazy expiry still commits the expiry: the transaction returns the refusal as a
 *   `Result` and it is raised only after the commit.
 */
import {
  ApiError,
  CreatePayment,
  Ids,
  Payment,
  PaymentStateMachine,
  ProviderSettlement,
  RefundRules,
  RequestValidation
} from "@kassa/core"
import { Cache, Context, DateTime, Duration, Effect, Exit, Layer, Option, Result } from "effect"
import { SecureRandom } from "effect/crypto"
import { SqlClient } from "effect/sql"
import { ApplicationRepository, type StoredApplication } from "../applications/ApplicationRepository.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import { type LiveCheckout, LiveCheckouts } from "../providers/LiveCheckouts.ts"
import {
  type CheckoutReading,
  type OpenRequest,
  ProviderConnector,
  type ProviderLinkId
} from "../providers/ProviderConnector.ts"
import { ProviderLinks, type StoredLink } from "../providers/ProviderLinks.ts"
import { EventOutbox } from "./EventOutbox.ts"
import type { Claim } from "./IdempotencyStore.ts"
import { PaymentProvider } from "./PaymentProvider.ts"
import {
  type ListQuery,
  PaymentRepository,
  type RefundOrigin,
  type Scope,
  type StoredPayment
} from "./PaymentRepository.ts"

export interface CreateRequest {
  readonly scope: Scope
  /** The request body (already shape-checked by the API); `CreatePayment.decide` applies every create rule. */
  readonly body: unknown
  /** `Kassa-Simulate`: with a test key, `provider_error` makes the simulator refuse. */
  readonly simulate?: "provider_error" | undefined
  /** Set when the request carries an Idempotency-Key (see IdempotencyStore). */
  readonly idempotency?: Claim | undefined
  /** The application as this request's authentication read it; read again when absent. */
  readonly application?: StoredApplication | undefined
}

export type CreateError =
  | CreatePayment.CreateRejection
  | ApiError.OrderReferenceAlreadyPaid
  | ApiError.ProviderError
  // A live payment's create resumed under its Idempotency-Key while the clean-up holds its checkout (never stored).
  | ApiError.IdempotencyRequestInProgress

export interface RefundRequest {
  readonly amount?: number | undefined
  readonly reason?: string | null | undefined
}

export type RefundError =
  | ApiError.NotFound
  | ApiError.RefundsProcessedManually
  | ApiError.PaymentNotRefundable
  | ApiError.RefundAmountExceedsRefundable
  | ApiError.PaymentBusy

/** What a live refund request from the dashboard can be refused with: a refund's refusals, as it is the live path. */
export type RefundRequestError = Exclude<RefundError, ApiError.RefundsProcessedManually>

export interface PaymentPage {
  readonly data: ReadonlyArray<Payment.Payment>
  readonly has_more: boolean
}

/** What the hosted checkout shows: the payment as fetch returns it, and the methods its application offers. */
export interface CheckoutView {
  readonly payment: Payment.Payment
  readonly methods: ReadonlyArray<string>
}

/** Stripe's checkout window is 30 minutes to 24 hours from creation; a minute's margin covers the call's transit. */
const providerWindow = { min: Duration.minutes(31), max: Duration.subtract(Duration.hours(24), Duration.minutes(1)) }

/** How long after a create the provider did not answer its possible session is cleaned up (sent again, expired). */
export const cleanupDelay = Duration.minutes(1)

/** The payment's `expires_at` clamped to the provider's window (decisions §10). */
export const providerExpiry = (expiresAt: DateTime.Utc, now: DateTime.Utc): DateTime.Utc => {
  const earliest = DateTime.addDuration(now, providerWindow.min)
  const latest = DateTime.addDuration(now, providerWindow.max)
  return DateTime.min(DateTime.max(expiresAt, earliest), latest)
}

export class Payments extends Context.Service<
  Payments,
  {
    /** Creates a payment: `pending`, or `failed` with 502 `provider_error` when the provider refuses. */
    readonly create: (request: CreateRequest) => Effect.Effect<Payment.Payment, CreateError>
    readonly retrieve: (scope: Scope, id: Ids.PaymentId) => Effect.Effect<Payment.Payment, ApiError.NotFound>
    /** Newest first; `starting_after` naming no visible payment is `validation_failed`. */
    readonly list: (scope: Scope, query: ListQuery) => Effect.Effect<PaymentPage, ApiError.ValidationFailed>
    readonly cancel: (
      scope: Scope,
      id: Ids.PaymentId
    ) => Effect.Effect<
      Payment.Payment,
      ApiError.NotFound | ApiError.PaymentNotCancellable | ApiError.PaymentBusy | ApiError.ProviderError
    >
    /** Test keys refund at once; live keys get `refunds_processed_manually` (after the 404 check). */
    readonly refund: (
      scope: Scope,
      id: Ids.PaymentId,
      request: RefundRequest,
      idempotency?: Claim
    ) => Effect.Effect<Payment.Payment, RefundError>
    /**
     * A live refund requested from the application dashboard (specification rule 4): under the payment's row lock
     * (NOWAIT, like every writer), checked by `RefundRules.refundAmount` — pending requests already reserve their
     * amount — and stored as a `pending` refund with who asked for it. No event and no status change: only the
     * provider's confirmation does that. Answers the payment as fetch returns it afterwards.
     */
    readonly requestRefund: (
      applicationId: Ids.ApplicationId,
      id: Ids.PaymentId,
      amount: number,
      reason: string | null,
      requestedBy: string | null
    ) => Effect.Effect<Payment.Payment, RefundRequestError>
    /** The test simulator: test keys only (a live key gets `not_found`). */
    readonly simulate: (
      scope: Scope,
      id: Ids.PaymentId,
      outcome: PaymentStateMachine.Outcome
    ) => Effect.Effect<Payment.Payment, ApiError.NotFound | ApiError.PaymentNotPending | ApiError.PaymentBusy>
    /**
     * The hosted checkout's view of a payment, by id alone (the page is public): as fetch would return it, with
     * lazy expiry applied.
     */
    readonly checkout: (id: Ids.PaymentId) => Effect.Effect<CheckoutView, ApiError.NotFound>
    /**
     * The hosted checkout's Pay / Fail / Let it expire, by payment id alone. Pay and Fail record the payer and the
     * method chosen (one of the application's; another is ignored). Only test payments are settled here (a live
     * payment is decided by its provider): a live one is `not_found`.
     */
    readonly settle: (
      id: Ids.PaymentId,
      outcome: PaymentStateMachine.Outcome,
      payer: Payment.Payer | null,
      method?: string
    ) => Effect.Effect<Payment.Payment, ApiError.NotFound | ApiError.PaymentNotPending | ApiError.PaymentBusy>
    /**
     * What the provider says now about a live payment's checkout (read again after an event, decisions §10), applied
     * under the payment's row lock (waiting: lock holders are short): the payment, its events and deliveries, a
     * discrepancy and the read commit in one transaction. With `event`, the event is recorded as seen in the same
     * transaction, and one seen before changes nothing (`duplicate`).
     */
    readonly applyCheckoutAnswer: (input: {
      readonly paymentId: Ids.PaymentId
      readonly reading: CheckoutReading
      readonly event?: { readonly linkId: ProviderLinkId; readonly id: string; readonly type: string } | undefined
    }) => Effect.Effect<{ readonly payment: Option.Option<Payment.Payment>; readonly duplicate: boolean }>
    /**
     * Expiry of a live payment asked of its provider (decisions §10): the answer to the expire call, applied under
     * the row lock by `ProviderSettlement.decideClose` (expired → `expired`; paid → `paid`; no answer → unchanged,
     * asked again within a minute).
     */
    readonly applyExpiryAnswer: (input: {
      readonly paymentId: Ids.PaymentId
      readonly reading: CheckoutReading | ProviderSettlement.CloseAnswer
    }) => Effect.Effect<Option.Option<Payment.Payment>>
    /**
     * The clean-up of a live create that died between its provider call and its commit (its checkout row claimed
     * `opening` by `LiveCheckouts.claimStuck`), from what the provider has for it, open checkouts already expired
     * there: `ProviderSettlement.decideUnopened` under the row lock — failed with its event and delivery, or the
     * checkout adopted (paid, or completed unpaid) — with the row's state in the same transaction. A row no longer
     * `opening` under this clean-up's claim (a retry opened it meanwhile) is left as it is.
     */
    readonly settleUnopened: (input: {
      readonly paymentId: Ids.PaymentId
      readonly found: { readonly sessionId: string; readonly reading: CheckoutReading } | null
    }) => Effect.Effect<Option.Option<Payment.Payment>>
    /**
     * The sweeper's work: expires every pending payment past `expires_at`, set-based, in batches of `batchSize`
     * (500), each batch one transaction with its events and deliveries; returns how many. Rows other transactions
     * hold are skipped (`SKIP LOCKED`) and left to them or to the next round.
     */
    readonly expireDue: (options?: { readonly batchSize?: number | undefined }) => Effect.Effect<number>
    /**
     * A reader's lazy expiry of the payments it is about to show: those of `ids` still pending past their expiry are
     * expired now (one transaction, with their events); answers the payments as fetch now returns them.
     */
    readonly expireShown: (ids: ReadonlyArray<Ids.PaymentId>) => Effect.Effect<ReadonlyArray<Payment.Payment>>
  }
>()("@kassa/server/payments/Payments") {
  static readonly layer = Layer.effect(
    Payments,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* PaymentRepository
      const outbox = yield* EventOutbox
      const provider = yield* PaymentProvider
      const applications = yield* ApplicationRepository
      const links = yield* ProviderLinks
      const connector = yield* ProviderConnector
      const checkouts = yield* LiveCheckouts
      const random = yield* SecureRandom.SecureRandom
      const { baseUrl } = yield* ServerConfig
      const docsUrl = `${baseUrl}/docs/refunds`

      const notFound = () => new ApiError.NotFound({ message: "No payment with this id." })

      const reload = (id: Ids.PaymentId) =>
        repo.find(id).pipe(
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.die(new Error(`payment ${id} vanished inside its own transaction`)),
              onSome: Effect.succeed
            })
          )
        )

      /**
       * Writes a transition of a locked payment with its events. The events carry the payment as fetch returns it
       * afterwards (read back, so `data` and a later fetch are the same bytes).
       */
      const apply = (
        stored: StoredPayment,
        transition: PaymentStateMachine.Transition,
        now: DateTime.Utc,
        origin: RefundOrigin = {}
      ) =>
        Effect.gen(function* () {
          yield* repo.save(stored.payment, transition.payment, now, origin)
          const after = yield* reload(stored.payment.id)
          if (transition.events.length > 0) {
            yield* outbox.record(stored.applicationId, after.payment, transition.events, now)
          }
          return after
        })

      /**
       * A provider's answer settled on a locked payment: written (with its events) only when it changes the status or
       * has events, its discrepancy recorded; the payment as it stands after.
       */
      const settleLocked = (stored: StoredPayment, settlement: ProviderSettlement.Settlement, now: DateTime.Utc) =>
        Effect.gen(function* () {
          const after =
            settlement.events.length > 0 || settlement.payment.status !== stored.payment.status
              ? (yield* apply(stored, settlement, now)).payment
              : stored.payment
          if (settlement.discrepancy !== null) {
            yield* checkouts.recordDiscrepancy(stored.payment.id, settlement.discrepancy, now)
          }
          return after
        })

      /**
       * Lazy expiry of a locked payment. A live payment with a provider checkout is never expired here: its provider
       * decides, because money may already have moved (decisions §10, "Expiry and cancel ask Stripe first").
       */
      const observe = (stored: StoredPayment, now: DateTime.Utc) =>
        stored.payment.mode === "live" && PaymentStateMachine.isDue(stored.payment, now)
          ? Effect.flatMap(checkouts.find(stored.payment.id), (checkout) =>
              Option.isSome(checkout) ? Effect.succeed(stored) : observeDue(stored, now)
            )
          : observeDue(stored, now)

      const observeDue = (stored: StoredPayment, now: DateTime.Utc) => {
        const transition = PaymentStateMachine.observe(stored.payment, now)
        // Counted inside the transaction that expires it: only a failed commit (a database error) would overcount.
        return transition.events.length === 0
          ? Effect.succeed(stored)
          : apply(stored, transition, now).pipe(
              Effect.tap(() => Metrics.recordPaymentSettled(transition.payment.mode, transition.payment.status))
            )
      }

      /**
       * The read path: no lock unless the payment is due, then a (waiting) lock to expire it before answering.
       * Waiting is safe: lock holders are short single-row transactions.
       */
      const read = (id: Ids.PaymentId, scope?: Scope) =>
        Effect.gen(function* () {
          const found = yield* repo.find(id, scope)
          if (Option.isNone(found)) return Option.none<Payment.Payment>()
          if (!PaymentStateMachine.isDue(found.value.payment, yield* DateTime.now)) {
            return Option.some(found.value.payment)
          }
          return yield* sql.withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, scope, "wait")
              if (Option.isNone(locked)) return Option.none<Payment.Payment>()
              const seen = yield* observe(locked.value, yield* DateTime.now)
              return Option.some(seen.payment)
            })
          )
        }).pipe(Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die }))

      const readOrNotFound = (id: Ids.PaymentId, scope?: Scope) =>
        read(id, scope).pipe(
          Effect.flatMap(
            Option.match({ onNone: () => Effect.fail(notFound()), onSome: (payment) => Effect.succeed(payment) })
          )
        )

      /**
       * The write path: lock NOWAIT (busy → `payment_busy`, rolled back), lazy expiry, then `change` decides. A
       * refusal is returned, not raised, inside the transaction so that the expiry still commits.
       */
      const mutate = <E>(
        id: Ids.PaymentId,
        scope: Scope | undefined,
        change: (payment: Payment.Payment, now: DateTime.Utc) => Result.Result<PaymentStateMachine.Transition, E>,
        origin: RefundOrigin = {}
      ) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, scope, "nowait")
              if (Option.isNone(locked)) return Result.fail<E | ApiError.NotFound>(notFound())
              const now = yield* DateTime.now
              const seen = yield* observe(locked.value, now)
              const decided = change(seen.payment, now)
              if (Result.isFailure(decided)) return Result.fail<E | ApiError.NotFound>(decided.failure)
              const after = yield* apply(seen, decided.success, now, origin)
              return Result.succeed(after.payment)
            })
          )
          .pipe(Effect.catchTag("SqlError", Effect.die), Effect.flatMap(Effect.fromResult))

      /** What a create answers for a stored payment: a payment created `failed` was refused by the provider. */
      const createAnswer = (
        stored: StoredPayment,
        refused: boolean
      ): Result.Result<Payment.Payment, ApiError.ProviderError> =>
        refused
          ? Result.fail(
              new ApiError.ProviderError({
                message: "The payment provider refused the payment; it is stored as failed. Create a new one to retry.",
                payment_id: stored.payment.id
              })
            )
          : Result.succeed(stored.payment)

      /** What the provider is asked for a live payment: derived from the stored payment alone, so every attempt sends
       * the same request under the same key (a retry, a takeover after a crash). `expires_at` is clamped from the
       * payment's creation, not from the attempt. */
      const openRequestOf = (payment: Payment.Payment, idempotencyKey: string): OpenRequest => ({
        paymentId: payment.id,
        amount: payment.amount,
        currency: payment.currency,
        method: payment.method,
        name: payment.description ?? payment.order_reference,
        locale: payment.locale,
        customerEmail: payment.customer.email,
        returnUrl: `${baseUrl}/checkout/${payment.id}/return`,
        expiresAt: providerExpiry(payment.expires_at, payment.created_at),
        idempotencyKey
      })

      type OpenAnswer = Result.Result<Payment.Payment, ApiError.ProviderError | ApiError.IdempotencyRequestInProgress>

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
        const stored = yield* reload(id)
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
       * Opens a live payment's checkout at its provider (decisions §10, "Create with a live key"): the payment is
       * `pending` with its checkout row `opening`, both committed, and no transaction is open. The provider is called
       * under the key stored on the row; its session is stored, or the payment fails with its event in one
       * transaction. Every write is conditional on the row still being `opening` and unclaimed by the clean-up, so a
       * merchant's retry, the first attempt and the clean-up can meet here and still end in one outcome.
       */
      const openAtProvider = Effect.fnUntraced(
        function* (payment: Payment.Payment, checkout: LiveCheckout, known?: StoredLink) {
          const { id } = payment
          // The first attempt has its link in hand; a resumed one reads it (a retired link still opens its payments).
          const link = known === undefined ? yield* links.find(checkout.linkId) : Option.some(known)
          if (Option.isNone(link)) return yield* Effect.die(new Error(`provider link ${checkout.linkId} vanished`))
          const openRequest = openRequestOf(payment, checkout.idempotencyKey)
          const opened = yield* connector.open(links.access(link.value), openRequest).pipe(Effect.result)
          const after = yield* DateTime.now
          if (Result.isSuccess(opened) && opened.success._tag === "Opened") {
            const session = opened.success
            const stored = yield* checkouts.opened({
              paymentId: id,
              sessionId: session.sessionId,
              url: session.url,
              expiresAt: session.expiresAt,
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
              if (Result.isSuccess(failed)) yield* apply(locked.value, failed.success, after)
              // Stripe may have made a session it could not tell us about: the exact request is kept so that the
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
            Effect.annotateLogs({ payment_id: id, provider_answer: said._tag })
          )
          return Result.fail(notOpenedError(id, said._tag === "NoAnswer" ? "NoAnswer" : "Refused")) as OpenAnswer
        },
        Effect.catchTag("PaymentBusy", Effect.die)
      )

      /**
       * The answer to a live create that finds its payment already made under its Idempotency-Key (the first attempt's
       * own continuation after its commit, or a retry after the first attempt died): an open checkout → the payment;
       * a checkout the provider did not open → 502 `provider_error`; one still `opening` is opened now, with the same
       * request under the same key, so the provider answers with the session it may already have made — outside the
       * key's transaction (`Claim.commitFirst`); one the clean-up has claimed → 409 in progress (never stored).
       */
      const resumeLive = Effect.fnUntraced(function* (stored: StoredPayment, checkout: LiveCheckout, claim: Claim) {
        switch (checkout.state) {
          case "open":
            return Result.succeed(stored.payment) as OpenAnswer
          case "not_opened":
            // Found later (a retry after a crash): what the provider said is not known here, only the outcome.
            return Result.fail(notOpenedError(stored.payment.id, "NotOpened")) as OpenAnswer
          case "opening": {
            if (checkout.closing !== null) return Result.fail(cleaningUp()) as OpenAnswer
            if (claim.commitFirst !== null) {
              yield* claim.commitFirst
              return Result.succeed(stored.payment) as OpenAnswer
            }
            return yield* openAtProvider(stored.payment, checkout)
          }
        }
      })

      /**
       * A live create with a linked provider account (decisions §10, "Create with a live key"), after rule 5 passed:
       * the `pending` payment and its `opening` checkout row commit together before the provider hears of it. With an
       * Idempotency-Key they commit with the key's record (still without an answer) — `Claim.commitFirst` — and the
       * key's work runs again after that commit, outside its transaction, finding this payment (`resumeLive`). The
       * provider's Idempotency-Key is derived from the payment id, so every attempt for this payment sends one key.
       */
      const openLive = Effect.fnUntraced(function* (input: {
        readonly link: StoredLink
        readonly id: Ids.PaymentId
        readonly scope: Scope
        readonly draft: CreatePayment.PaymentDraft
        readonly ttlSeconds: number
        readonly claim: Claim | undefined
        /** Rule 5 was read before: a reference found taken now lost a race (409), else the caller reads it (`taken`). */
        readonly checked: boolean
      }) {
        const { link, id, scope, draft } = input
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
          // A concurrent create committed this order reference after our check; the unique index caught it.
          const winner = yield* repo.findBlocking(scope, draft.order_reference)
          const refusal = CreatePayment.checkOrderReference(
            Option.match(winner, { onNone: () => null, onSome: (winnerId) => ({ id: winnerId }) })
          )
          if (Result.isFailure(refusal)) return Result.fail(refusal.failure)
          return yield* Effect.die(new Error("order reference conflict without a blocking payment"))
        }
        if (input.claim?.commitFirst != null) {
          // The provider is called by the key's work run again after this commit (resumeLive).
          yield* input.claim.commitFirst
          return Result.succeed<Payment.Payment>(transition.payment)
        }
        const checkout: LiveCheckout = {
          paymentId: id,
          linkId: link.id,
          state: "opening",
          idempotencyKey,
          sessionId: null,
          checkoutUrl: null,
          visit: null,
          visitedAt: null,
          nextReadAt: null,
          closing: null,
          createdAt: now
        }
        return yield* openAtProvider(transition.payment, checkout, link)
      })

      const create = Effect.fnUntraced(
        function* (request: CreateRequest) {
          const { scope } = request
          const application =
            request.application?.id === scope.applicationId
              ? request.application
              : yield* applications.find(scope.applicationId).pipe(
                  Effect.flatMap(
                    Option.match({
                      onNone: () => Effect.die(new Error("the authenticated application does not exist")),
                      onSome: Effect.succeed
                    })
                  )
                )
          const draft = yield* Effect.fromResult(CreatePayment.decide(request.body, application))
          const key = request.idempotency?.key ?? null

          // No transaction around the whole create: rule 5's check is a plain read (the unique index is the arbiter
          // when creates race), and a `pending` payment is one INSERT, atomic on its own. Only a payment created with
          // events (refused → `failed`) needs one, to commit the payment, its event and its delivery together. With an
          // Idempotency-Key all of this already runs inside the key's transaction (IdempotencyStore).
          type Answer = Result.Result<
            Payment.Payment,
            ApiError.OrderReferenceAlreadyPaid | ApiError.ProviderError | ApiError.IdempotencyRequestInProgress
          >
          const outcome: Answer = yield* Effect.gen(function* () {
            if (request.idempotency?.takeover === true) {
              // The request that held this key died; if it got as far as the payment, that payment is the answer.
              const existing = yield* repo.findByIdempotencyKey(
                scope,
                request.idempotency.key,
                request.idempotency.since
              )
              if (Option.isSome(existing)) {
                const stored = existing.value
                if (stored.payment.mode === "live") {
                  const checkout = yield* checkouts.find(stored.payment.id)
                  if (Option.isSome(checkout)) {
                    return (yield* resumeLive(stored, checkout.value, request.idempotency)) as Answer
                  }
                }
                // A payment created `failed` never changes again, so its row was never updated after the insert.
                const refused =
                  stored.payment.status === "failed" &&
                  DateTime.Equivalence(stored.updatedAt, stored.payment.created_at)
                return createAnswer(stored, refused) as Answer
              }
            }
            const id = Ids.PaymentId.make(yield* random.uuidV4())
            const open = provider.open({
              paymentId: id,
              mode: scope.mode,
              draft,
              providerAccount: application.provider_account,
              simulate: request.simulate,
              providerIdempotencyKey: key === null ? null : `kassa:${scope.applicationId}:${scope.mode}:${key}`
            })
            const stage = Effect.fnUntraced(function* (provider: PaymentStateMachine.ProviderAnswer) {
              const now = yield* DateTime.now
              const transition = PaymentStateMachine.create({
                id,
                mode: scope.mode,
                draft,
                checkoutUrl: `${baseUrl}/checkout/${id}`,
                ttlSeconds: application.payment_ttl_seconds,
                now,
                provider
              })
              return { now, transition, refused: provider === "refused" }
            })
            const insert = (transition: PaymentStateMachine.Transition, now: DateTime.Utc) =>
              repo.insert(transition.payment, { applicationId: scope.applicationId, idempotencyKey: key }, now)

            // Test payments: the simulator has no side effects, so it is asked first and rule 5 can be left to the
            // unique index — an accepted payment without events is inserted straight away (authenticate + INSERT,
            // two statements), and only a conflict takes the checked path below. Live payments are checked before
            // the provider hears of them.
            const simulated = scope.mode === "test" ? yield* open : undefined
            if (simulated === "accepted") {
              const { now, transition } = yield* stage(simulated)
              if (transition.events.length === 0 && Result.isSuccess(yield* Effect.result(insert(transition, now)))) {
                return Result.succeed(transition.payment) as Answer
              }
            }

            // Live payments with a linked account: rule 5 is left to the insert's unique index first, like a test
            // create (no read before it, the link from the cache, checked by the insert itself); only a reference
            // found taken goes through the read below, which also expires a pending holder past its expiry.
            const openLinked = Effect.fnUntraced(function* (checked: boolean) {
              // A link retired or replaced since it was cached is found by the insert (`unlinked`): read it again.
              for (let attempt = 0; attempt < 3; attempt++) {
                const link = yield* activeLink(scope.applicationId, attempt > 0 || checked)
                if (Option.isNone(link)) return "unlinked" as const
                const opened = yield* openLive({
                  link: link.value,
                  id,
                  scope,
                  draft,
                  ttlSeconds: application.payment_ttl_seconds,
                  claim: request.idempotency,
                  checked
                })
                if (opened !== "unlinked") return opened
                yield* Cache.invalidate(activeLinks, scope.applicationId)
              }
              return "unlinked" as const
            })
            if (scope.mode === "live") {
              const opened = yield* openLinked(false)
              if (opened !== "unlinked" && opened !== "taken") return opened as Answer
            }

            // Rule 5, read like any read: a pending holder past its expiry is expired now and frees the reference.
            const blocking = yield* repo.findBlocking(scope, draft.order_reference)
            const holder = Option.isNone(blocking) ? Option.none() : yield* read(blocking.value, scope)
            const free = CreatePayment.checkOrderReference(
              Option.getOrNull(
                Option.filter(holder, (payment) => Payment.orderReferenceBlockingStatuses.includes(payment.status))
              )
            )
            if (Result.isFailure(free)) return Result.fail(free.failure) as Answer

            if (scope.mode === "live") {
              // Live-enabled means an active provider link (decisions §10); without one, the boundary refuses.
              const opened = yield* openLinked(true)
              if (opened !== "unlinked") return opened as Answer
            }
            const { now, transition, refused } = yield* stage(simulated ?? (yield* open))
            const write = Effect.gen(function* () {
              const inserted = yield* Effect.result(insert(transition, now))
              if (Result.isFailure(inserted)) {
                // A concurrent create committed this order reference after our check; the unique index caught it.
                const winner = yield* repo.findBlocking(scope, draft.order_reference)
                const refusal = CreatePayment.checkOrderReference(
                  Option.match(winner, { onNone: () => null, onSome: (winnerId) => ({ id: winnerId }) })
                )
                if (Result.isFailure(refusal)) return Result.fail(refusal.failure) as Answer
                return yield* Effect.die(new Error("order reference conflict without a blocking payment"))
              }
              if (transition.events.length === 0) {
                // Nothing to send: the inserted payment is the answer, without reading it back.
                return Result.succeed(transition.payment) as Answer
              }
              // An event's data must be the payment exactly as fetch returns it (jsonb normalizes metadata).
              const stored = yield* reload(id)
              yield* outbox.record(scope.applicationId, stored.payment, transition.events, now)
              return createAnswer(stored, refused) as Answer
            })
            return yield* transition.events.length === 0 ? write : sql.withTransaction(write)
          })
          return yield* Effect.fromResult(outcome)
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      const retrieve = (scope: Scope, id: Ids.PaymentId) => readOrNotFound(id, scope)

      /**
       * Expires locked due payments as one set: `PaymentStateMachine.expireDue` decides, one UPDATE writes the
       * statuses, two INSERTs their events and deliveries — the same rows the per-payment path writes. The events
       * carry the payment as fetch returns it afterwards: only the status differs from the row just locked.
       */
      const expireLocked = (locked: ReadonlyArray<StoredPayment>, now: DateTime.Utc) =>
        Effect.gen(function* () {
          const transitions = PaymentStateMachine.expireDue(
            locked.map((stored) => stored.payment),
            now
          )
          if (transitions.length === 0) return []
          const changed = new Set<string>(
            yield* repo.saveStatuses(
              transitions.map((transition) => transition.payment),
              now
            )
          )
          const owners = new Map(locked.map((stored) => [stored.payment.id as string, stored.applicationId]))
          yield* outbox.recordMany(
            transitions.flatMap((transition) => {
              const applicationId = owners.get(transition.payment.id)
              return applicationId === undefined || !changed.has(transition.payment.id)
                ? []
                : [{ applicationId, payment: transition.payment, events: transition.events }]
            }),
            now
          )
          // The modes of the payments expired, for the settled-payments metric once this commits.
          return transitions.flatMap((transition) =>
            changed.has(transition.payment.id) ? [transition.payment.mode] : []
          )
        })

      const countExpired = (modes: ReadonlyArray<Payment.Payment["mode"]>) =>
        Effect.forEach(modes, (mode) => Metrics.recordPaymentSettled(mode, "expired"), { discard: true })

      const expireDue = Effect.fn("Payments.expireDue")(
        function* (options: { readonly batchSize?: number | undefined }) {
          const limit = options.batchSize ?? 500
          let total = 0
          while (true) {
            const now = yield* DateTime.now
            const { count, expired } = yield* sql.withTransaction(
              Effect.gen(function* () {
                const locked = yield* repo.lockDue({ now, limit })
                return { count: locked.length, expired: yield* expireLocked(locked, now) }
              })
            )
            yield* countExpired(expired)
            total += count
            if (count < limit) return total
          }
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      const expireShown = Effect.fn("Payments.expireShown")(
        function* (ids: ReadonlyArray<Ids.PaymentId>) {
          if (ids.length === 0) return []
          const now = yield* DateTime.now
          const expired = yield* sql.withTransaction(
            Effect.gen(function* () {
              return yield* expireLocked(yield* repo.lockDueAmong(ids, now), now)
            })
          )
          yield* countExpired(expired)
          // Read again: a row another transaction changed meanwhile (paid, expired) is shown as it now is.
          return (yield* repo.findMany(ids)).map((stored) => stored.payment)
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      const list = Effect.fn("Payments.list")(function* (scope: Scope, query: ListQuery) {
        // Nothing is expired up front: the page is read (a `status=expired` filter also finds the due rows still
        // pending), then only the rows it shows that are due are expired, before answering.
        const page = yield* repo.list(scope, query).pipe(
          Effect.catchTag("CursorNotFound", () =>
            Effect.fail(
              RequestValidation.validationFailed({
                starting_after: ["is not the id of a payment of this application in this mode"]
              })
            )
          )
        )
        const now = yield* DateTime.now
        const due = page.payments.filter(({ payment }) => PaymentStateMachine.isDue(payment, now))
        const fresh = new Map(
          (yield* expireShown(due.map(({ payment }) => payment.id))).map((payment) => [payment.id as string, payment])
        )
        const data = page.payments.map(({ payment }) => fresh.get(payment.id) ?? payment)
        return {
          // A pending row found past its expiry is expired now, so a `pending` page leaves it out.
          data: query.status === undefined ? data : data.filter((payment) => payment.status === query.status),
          has_more: page.hasMore
        }
      })

      /**
       * Cancel of a live payment with an open provider checkout (decisions §10, "Expiry and cancel ask Stripe first"):
       * under the row lock (NOWAIT) the payment is checked and the cancel recorded on its checkout (so the provider's
       * `expired` event, should it arrive first, ends it `cancelled`); the provider is asked to expire the session
       * outside any transaction; its answer is applied under the lock by `ProviderSettlement.decideClose`.
       */
      type CancelRefusal = ApiError.NotFound | ApiError.PaymentNotCancellable | ApiError.ProviderError
      const cancelLive = Effect.fnUntraced(
        function* (scope: Scope, id: Ids.PaymentId, link: StoredLink, sessionId: string) {
          const checked = yield* sql.withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, scope, "nowait")
              if (Option.isNone(locked)) return Result.fail(notFound()) as Result.Result<void, CancelRefusal>
              const now = yield* DateTime.now
              const seen = yield* observe(locked.value, now)
              const allowed = PaymentStateMachine.cancel(seen.payment)
              if (Result.isFailure(allowed)) return Result.fail(allowed.failure) as Result.Result<void, CancelRefusal>
              yield* checkouts.setClosing(id, "cancel", now)
              return Result.succeed(undefined) as Result.Result<void, CancelRefusal>
            })
          )
          yield* Effect.fromResult(checked)
          const closed = yield* connector.close(links.access(link), sessionId).pipe(Effect.result)
          // A refusal (4xx) closes nothing either: like no answer, the payment stays as it is and cancel gets 502.
          const reading = Result.isSuccess(closed) && closed.success._tag === "Checkout" ? closed.success : null
          const answer: ProviderSettlement.CloseAnswer =
            reading ?? (Result.isSuccess(closed) ? closed.success : { _tag: "NoAnswer", reason: "unavailable" })
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
              const { settlement } = decision
              const after = yield* settleLocked(locked.value, settlement, now)
              if (reading !== null) {
                yield* checkouts.recordRead(
                  id,
                  reading,
                  reading.paymentIntentId,
                  after.status === "pending" ? checkout.value.nextReadAt : null,
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

      const cancel = Effect.fn("Payments.cancel")(function* (scope: Scope, id: Ids.PaymentId) {
        if (scope.mode === "live") {
          const checkout = yield* checkouts.find(id)
          if (Option.isSome(checkout) && checkout.value.sessionId !== null) {
            const link = yield* links.find(checkout.value.linkId)
            if (Option.isSome(link)) return yield* cancelLive(scope, id, link.value, checkout.value.sessionId)
          }
        }
        return yield* mutate(id, scope, (payment) => PaymentStateMachine.cancel(payment))
      })

      const refund = Effect.fn("Payments.refund")(function* (
        scope: Scope,
        id: Ids.PaymentId,
        request: RefundRequest,
        idempotency?: Claim
      ) {
        if (idempotency?.takeover === true) {
          const done = yield* repo.findRefundByIdempotencyKey(scope, idempotency.key, idempotency.since)
          if (Option.isSome(done)) return yield* readOrNotFound(done.value, scope)
        }
        if (scope.mode === "live") {
          // 404 first; then live refunds are the dashboard's (decisions §1 check order).
          yield* readOrNotFound(id, scope)
          return yield* new ApiError.RefundsProcessedManually({
            message: "Live refunds are requested from the application dashboard; see docs_url.",
            docs_url: docsUrl
          })
        }
        const refundId = Ids.RefundId.make(yield* random.uuidV4())
        return yield* mutate(
          id,
          scope,
          (payment, now) =>
            RefundRules.checkApiRefund(payment, scope.mode, request.amount, docsUrl).pipe(
              Result.flatMap((amount) =>
                PaymentStateMachine.requestRefund(payment, { refundId, amount, reason: request.reason ?? null, now })
              )
            ),
          { idempotencyKey: idempotency?.key ?? null }
        )
      })

      // The same write path as every change: the state machine keeps a live refund `pending`, with no event.
      const requestRefund = Effect.fn("Payments.requestRefund")(function* (
        applicationId: Ids.ApplicationId,
        id: Ids.PaymentId,
        amount: number,
        reason: string | null,
        requestedBy: string | null
      ) {
        const refundId = Ids.RefundId.make(yield* random.uuidV4())
        return yield* mutate(
          id,
          { applicationId, mode: "live" },
          (payment, now) => PaymentStateMachine.requestRefund(payment, { refundId, amount, reason, now }),
          { requestedBy }
        )
      })

      const simulate = Effect.fn("Payments.simulate")(
        (scope: Scope, id: Ids.PaymentId, outcome: PaymentStateMachine.Outcome) =>
          scope.mode === "live"
            ? Effect.fail(notFound())
            : mutate(id, scope, (payment, now) => PaymentStateMachine.settle(payment, outcome, { now }))
      )

      const offeredMethods = (id: Ids.PaymentId) =>
        repo.find(id).pipe(
          Effect.flatMap((stored) =>
            Option.isNone(stored) ? Effect.succeed(Option.none()) : applications.find(stored.value.applicationId)
          ),
          Effect.map((application) => Option.match(application, { onNone: () => [], onSome: (app) => app.methods }))
        )

      const checkout = Effect.fn("Payments.checkout")(function* (id: Ids.PaymentId) {
        const payment = yield* readOrNotFound(id)
        return { payment, methods: yield* offeredMethods(id) } satisfies CheckoutView
      })

      const settle = Effect.fn("Payments.settle")(function* (
        id: Ids.PaymentId,
        outcome: PaymentStateMachine.Outcome,
        payer: Payment.Payer | null,
        method?: string
      ) {
        const offered = method === undefined ? [] : yield* offeredMethods(id)
        const chosen = method !== undefined && offered.includes(method) ? method : undefined
        return yield* mutate(
          id,
          undefined,
          (
            payment,
            now
          ): Result.Result<PaymentStateMachine.Transition, ApiError.PaymentNotPending | ApiError.NotFound> =>
            payment.mode === "live"
              ? Result.fail(notFound())
              : PaymentStateMachine.settle(payment, outcome, { now, payer, method: chosen })
        )
      })

      const applyCheckoutAnswer = Effect.fn("Payments.applyCheckoutAnswer")(
        function* (input: {
          readonly paymentId: Ids.PaymentId
          readonly reading: CheckoutReading
          readonly event?: { readonly linkId: ProviderLinkId; readonly id: string; readonly type: string } | undefined
        }) {
          const outcome = yield* sql.withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              if (input.event !== undefined) {
                const first = yield* checkouts.markEventSeen(input.event.linkId, input.event.id, input.event.type, now)
                if (!first) return { payment: Option.none<Payment.Payment>(), duplicate: true, before: null }
              }
              const locked = yield* repo.lock(input.paymentId, undefined, "wait")
              const checkout = yield* checkouts.find(input.paymentId)
              if (Option.isNone(locked) || Option.isNone(checkout)) {
                return { payment: Option.none<Payment.Payment>(), duplicate: false, before: null }
              }
              const settlement = ProviderSettlement.apply(
                locked.value.payment,
                { _tag: "Checkout", state: input.reading.state },
                { now, visit: checkout.value.visit, closing: checkout.value.closing }
              )
              const after = yield* settleLocked(locked.value, settlement, now)
              // Read again while pending (lost events, decisions §10); a final payment needs no more reads.
              const nextReadAt =
                after.status === "pending"
                  ? ProviderSettlement.Schedule.nextPaymentRead({
                      visitedAt: checkout.value.visitedAt,
                      lastReadAt: now
                    })
                  : null
              yield* checkouts.recordRead(
                input.paymentId,
                input.reading,
                input.reading.paymentIntentId,
                nextReadAt,
                now
              )
              return { payment: Option.some(after), duplicate: false, before: locked.value.payment.status }
            })
          )
          yield* countIfSettled(outcome)
          return { payment: outcome.payment, duplicate: outcome.duplicate }
        },
        Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
      )

      const applyExpiryAnswer = Effect.fn("Payments.applyExpiryAnswer")(
        function* (input: {
          readonly paymentId: Ids.PaymentId
          readonly reading: CheckoutReading | ProviderSettlement.CloseAnswer
        }) {
          const outcome = yield* sql.withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              const locked = yield* repo.lock(input.paymentId, undefined, "wait")
              const checkout = yield* checkouts.find(input.paymentId)
              if (Option.isNone(locked) || Option.isNone(checkout))
                return { payment: Option.none<Payment.Payment>(), before: null }
              const answer: ProviderSettlement.CloseAnswer =
                input.reading._tag === "Checkout" ? { _tag: "Checkout", state: input.reading.state } : input.reading
              const { settlement } = ProviderSettlement.decideClose(locked.value.payment, "expire", answer, {
                now,
                visit: checkout.value.visit,
                closing: "expire"
              })
              const after = yield* settleLocked(locked.value, settlement, now)
              const nextReadAt = after.status === "pending" ? ProviderSettlement.Schedule.nextExpiryAttempt(now) : null
              yield* checkouts.recordRead(
                input.paymentId,
                input.reading,
                "paymentIntentId" in input.reading ? input.reading.paymentIntentId : null,
                nextReadAt,
                now
              )
              return { payment: Option.some(after), before: locked.value.payment.status }
            })
          )
          yield* countIfSettled(outcome)
          return outcome.payment
        },
        Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
      )

      const settleUnopened = Effect.fn("Payments.settleUnopened")(
        function* (input: {
          readonly paymentId: Ids.PaymentId
          readonly found: { readonly sessionId: string; readonly reading: CheckoutReading } | null
        }) {
          const outcome = yield* sql.withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              const locked = yield* repo.lock(input.paymentId, undefined, "wait")
              const checkout = yield* checkouts.find(input.paymentId)
              if (
                Option.isNone(locked) ||
                Option.isNone(checkout) ||
                checkout.value.state !== "opening" ||
                checkout.value.closing !== "expire"
              ) {
                return { payment: Option.none<Payment.Payment>(), before: null }
              }
              const { found } = input
              const decision = ProviderSettlement.decideUnopened(locked.value.payment, found?.reading.state ?? null, {
                now,
                visit: null,
                closing: "expire"
              })
              const after = yield* settleLocked(locked.value, decision, now)
              if (decision.adopt && found !== null) {
                yield* checkouts.adopt({ paymentId: input.paymentId, sessionId: found.sessionId, now })
                yield* checkouts.recordRead(
                  input.paymentId,
                  found.reading,
                  found.reading.paymentIntentId,
                  after.status === "pending"
                    ? // Completed unpaid (a delayed method): read again like a visited checkout until it settles.
                      ProviderSettlement.Schedule.nextPaymentRead({ visitedAt: now, lastReadAt: now })
                    : null,
                  now
                )
              } else {
                yield* checkouts.notOpened(
                  input.paymentId,
                  { _tag: "Unopened", sessionId: found?.sessionId ?? null, state: found?.reading.state._tag ?? null },
                  now,
                  null
                )
              }
              return { payment: Option.some(after), before: locked.value.payment.status }
            })
          )
          yield* countIfSettled(outcome)
          return outcome.payment
        },
        Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
      )

      // Counted here, after the commit, by mode and outcome only (Metrics: no id, key or amount in a label).
      const settled = (payment: Payment.Payment) => Metrics.recordPaymentSettled(payment.mode, payment.status)
      /** After a provider answer's commit: counted when it changed the payment's status. */
      const countIfSettled = (outcome: {
        readonly payment: Option.Option<Payment.Payment>
        readonly before: Payment.PaymentStatus | null
      }) =>
        Option.isSome(outcome.payment) && outcome.before !== outcome.payment.value.status
          ? settled(outcome.payment.value)
          : Effect.void
      return Payments.of({
        create: (request) => {
          // A create that commits first answers in its second run (IdempotencyStore): only that one is counted.
          let deferred = false
          const claim = request.idempotency
          const counted: CreateRequest =
            claim?.commitFirst == null
              ? request
              : {
                  ...request,
                  idempotency: {
                    ...claim,
                    commitFirst: Effect.andThen(
                      Effect.sync(() => {
                        deferred = true
                      }),
                      claim.commitFirst
                    )
                  }
                }
          return create(counted).pipe(
            Effect.tap(() => (deferred ? Effect.void : Metrics.recordPaymentCreated(request.scope.mode, "accepted"))),
            Effect.tapError((error) =>
              error._tag === "ProviderError" ? Metrics.recordPaymentCreated(request.scope.mode, "refused") : Effect.void
            )
          )
        },
        retrieve,
        list,
        cancel: (scope, id) => cancel(scope, id).pipe(Effect.tap(settled)),
        refund: (scope, id, request, idempotency) =>
          refund(scope, id, request, idempotency).pipe(Effect.tap(() => Metrics.recordRefund(scope.mode, "succeeded"))),
        requestRefund: (applicationId, id, amount, reason, requestedBy) =>
          requestRefund(applicationId, id, amount, reason, requestedBy).pipe(
            Effect.tap(() => Metrics.recordRefund("live", "requested"))
          ),
        simulate: (scope, id, outcome) => simulate(scope, id, outcome).pipe(Effect.tap(settled)),
        checkout,
        settle: (id, outcome, payer, method) => settle(id, outcome, payer, method).pipe(Effect.tap(settled)),
        applyCheckoutAnswer,
        applyExpiryAnswer,
        settleUnopened,
        expireDue: (options) => expireDue(options ?? {}),
        expireShown
      })
    })
  )
}
