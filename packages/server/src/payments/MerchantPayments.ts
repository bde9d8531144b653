/**
 * What a merchant's key does to payments through the API: create, fetch, list, cancel, refund, and the test
 * simulator's outcomes. The imperative shell around @kassa/core: the core decides (create rules, rule 5, refund
 * rules, the state machine), the write kernel (ledger/PaymentWrites.ts) locks, expires lazily and writes; a live
 * payment's provider side is live/LivePayments.ts.
 *
 * A create opens no transaction of its own: rule 5's check is a plain read (the unique index is the arbiter when
 * creates race), and a `pending` payment is one INSERT, atomic on its own. Only a payment created with events
 * (refused → `failed`) needs one, to commit the payment, its event and its delivery together. With an
 * Idempotency-Key all of this already runs inside the key's transaction (ledger/IdempotencyStore.ts).
 */
import {
  ApiError,
  CreatePayment,
  Ids,
  Payment,
  type PaymentRequests,
  PaymentStateMachine,
  RefundRules,
  RequestValidation,
  type SettlementSource
} from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Result } from "effect"
import { SecureRandom } from "effect/crypto"
import { SqlClient } from "effect/sql"
import type { Rider } from "../applications/ApiKeyRepository.ts"
import { ApplicationRepository, type StoredApplication } from "../applications/ApplicationRepository.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { EventOutbox } from "../ledger/EventOutbox.ts"
import type { Claim } from "../ledger/IdempotencyStore.ts"
import { type ListQuery, PaymentRepository, type Scope, type StoredPayment } from "../ledger/PaymentRepository.ts"
import { notFound, PaymentWrites } from "../ledger/PaymentWrites.ts"
import { LivePayments } from "../live/LivePayments.ts"
import * as Metrics from "../observability/Metrics.ts"
import { Simulator } from "./Simulator.ts"

export interface CreateRequest {
  readonly scope: Scope
  /** The request body as the API decoded it; `CreatePayment.decideBody` applies the create rules. */
  readonly body: PaymentRequests.CreatePaymentBody
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
  /** The dashboard user who refunds a test payment on its page (none through the API). */
  readonly requestedBy?: string | null | undefined
}

/** Who simulates or cancels: a key through the API (the default), or a member on the dashboard's payment page. */
export type Caller = "api" | "dashboard"

export type RefundError =
  | ApiError.NotFound
  | ApiError.RefundsProcessedManually
  | ApiError.PaymentNotRefundable
  | ApiError.RefundAmountExceedsRefundable
  | ApiError.PaymentBusy

export interface PaymentPage {
  readonly data: ReadonlyArray<Payment.Payment>
  readonly has_more: boolean
}

type Answer = Result.Result<Payment.Payment, Exclude<CreateError, CreatePayment.CreateRejection>>

export class MerchantPayments extends Context.Service<
  MerchantPayments,
  {
    /** Creates a payment: `pending`, or `failed` with 502 `provider_error` when the provider refuses. */
    readonly create: (request: CreateRequest) => Effect.Effect<Payment.Payment, CreateError>
    readonly retrieve: (scope: Scope, id: Ids.PaymentId) => Effect.Effect<Payment.Payment, ApiError.NotFound>
    /**
     * {@link retrieve} in one round trip with authentication (the fetch lane): `riderOf(id)` rides on the API key's
     * statement, `retrieveRidden` answers from what it read, as {@link retrieve} would.
     */
    readonly riderOf: (id: Ids.PaymentId) => Rider
    readonly retrieveRidden: (
      scope: Scope,
      id: Ids.PaymentId,
      rider: unknown
    ) => Effect.Effect<Payment.Payment, ApiError.NotFound>
    /** Newest first; `starting_after` naming no visible payment is `validation_failed`. */
    readonly list: (scope: Scope, query: ListQuery) => Effect.Effect<PaymentPage, ApiError.ValidationFailed>
    readonly cancel: (
      scope: Scope,
      id: Ids.PaymentId,
      caller?: Caller
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
    /** The test simulator: test keys only (a live key gets `not_found`). */
    readonly simulate: (
      scope: Scope,
      id: Ids.PaymentId,
      outcome: PaymentStateMachine.Outcome,
      caller?: Caller
    ) => Effect.Effect<Payment.Payment, ApiError.NotFound | ApiError.PaymentNotPending | ApiError.PaymentBusy>
  }
>()("@kassa/server/payments/MerchantPayments") {
  static readonly layer = Layer.effect(
    MerchantPayments,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* PaymentRepository
      const writes = yield* PaymentWrites
      const outbox = yield* EventOutbox
      const simulator = yield* Simulator
      const live = yield* LivePayments
      const applications = yield* ApplicationRepository
      const random = yield* SecureRandom.SecureRandom
      const { baseUrl } = yield* ServerConfig
      const docsUrl = `${baseUrl}/docs/refunds`

      /** What a create answers for a stored payment: a payment created `failed` was refused by the provider. */
      const createAnswer = (stored: StoredPayment, refused: boolean): Answer =>
        refused
          ? Result.fail(
              new ApiError.ProviderError({
                message: "The payment provider refused the payment; it is stored as failed. Create a new one to retry.",
                payment_id: stored.payment.id
              })
            )
          : Result.succeed(stored.payment)

      /** Rule 5, read like any read: a pending holder past its expiry is expired now and frees the reference. */
      const checkReference = Effect.fnUntraced(function* (scope: Scope, orderReference: string) {
        const blocking = yield* repo.findBlocking(scope, orderReference)
        const holder = Option.isNone(blocking) ? Option.none() : yield* writes.read(blocking.value, scope)
        return CreatePayment.checkOrderReference(
          Option.getOrNull(
            Option.filter(holder, (payment) => Payment.orderReferenceBlockingStatuses.includes(payment.status))
          )
        )
      })

      /** The payment as the provider's answer makes it, inserted (with its event in one transaction when refused). */
      const store = Effect.fnUntraced(function* (input: {
        readonly id: Ids.PaymentId
        readonly scope: Scope
        readonly draft: CreatePayment.PaymentDraft
        readonly ttlSeconds: number
        readonly key: string | null
        readonly provider: PaymentStateMachine.ProviderAnswer
        /** Rule 5 was read before: a reference found taken now lost a race (409). */
        readonly checked: boolean
      }) {
        const { id, scope } = input
        const now = yield* DateTime.now
        const transition = PaymentStateMachine.create({
          id,
          mode: scope.mode,
          draft: input.draft,
          checkoutUrl: `${baseUrl}/checkout/${id}`,
          ttlSeconds: input.ttlSeconds,
          now,
          provider: input.provider
        })
        const write = Effect.gen(function* () {
          const inserted = yield* Effect.result(
            repo.insert(
              transition.payment,
              {
                applicationId: scope.applicationId,
                idempotencyKey: input.key,
                // Created settled only when refused.
                settledVia: transition.payment.status === "pending" ? undefined : "provider_refused"
              },
              now
            )
          )
          if (Result.isFailure(inserted)) {
            return input.checked
              ? (Result.fail(yield* writes.lostReference(scope, input.draft.order_reference)) as Answer)
              : ("taken" as const)
          }
          // Nothing to send: the inserted payment is the answer, without reading it back.
          if (transition.events.length === 0) return Result.succeed(transition.payment) as Answer
          // An event's data must be the payment exactly as fetch returns it (jsonb normalizes metadata).
          const stored = yield* writes.reload(id)
          yield* outbox.record(scope.applicationId, stored.payment, transition.events, now)
          return createAnswer(stored, input.provider === "refused")
        })
        return yield* transition.events.length === 0 ? write : sql.withTransaction(write)
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
          const draft = yield* Effect.fromResult(CreatePayment.decideBody(request.body, application))
          const key = request.idempotency?.key ?? null
          const ttlSeconds = application.payment_ttl_seconds

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
                  const resumed = yield* live.resume(stored, request.idempotency)
                  if (Option.isSome(resumed)) return resumed.value as Answer
                }
                // A payment created `failed` never changes again, so its row was never updated after the insert.
                const refused =
                  stored.payment.status === "failed" &&
                  DateTime.Equivalence(stored.updatedAt, stored.payment.created_at)
                return createAnswer(stored, refused)
              }
            }
            const id = Ids.PaymentId.make(yield* random.uuidV4())
            const base = { id, scope, draft, ttlSeconds, key }

            if (scope.mode === "test") {
              // The simulator has no side effects, so it is asked first and rule 5 is left to the unique index: an
              // accepted payment without events is inserted straight away (authenticate + INSERT, two statements),
              // and only a conflict takes the checked path.
              const provider = yield* simulator.open({ paymentId: id, mode: "test", draft, simulate: request.simulate })
              if (provider === "accepted") {
                const fast = yield* store({ ...base, provider, checked: false })
                if (fast !== "taken") return fast
              }
              const free = yield* checkReference(scope, draft.order_reference)
              if (Result.isFailure(free)) return Result.fail(free.failure) as Answer
              return (yield* store({ ...base, provider, checked: true })) as Answer
            }

            // Live: rule 5 is left to the insert's unique index first, like a test create (no read before it, the
            // link from the cache, checked by the insert itself); only a reference found taken goes through the
            // read, which also expires a pending holder past its expiry, before the provider hears of the payment.
            const claim = request.idempotency
            const opened = yield* live.create({ id, scope, draft, ttlSeconds, claim, checked: false })
            if (opened !== "unlinked" && opened !== "taken") return opened
            const free = yield* checkReference(scope, draft.order_reference)
            if (Result.isFailure(free)) return Result.fail(free.failure) as Answer
            const again = yield* live.create({ id, scope, draft, ttlSeconds, claim, checked: true })
            if (again !== "unlinked" && again !== "taken") return again
            // Live-enabled means an active provider link (decisions §10); without one the payment is refused.
            return (yield* store({ ...base, provider: "refused", checked: true })) as Answer
          })
          return yield* Effect.fromResult(outcome)
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      const list = Effect.fn("MerchantPayments.list")(function* (scope: Scope, query: ListQuery) {
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
          (yield* writes.expireShown(due.map(({ payment }) => payment.id))).map((payment) => [
            payment.id as string,
            payment
          ])
        )
        const data = page.payments.map(({ payment }) => fresh.get(payment.id) ?? payment)
        return {
          // A pending row found past its expiry is expired now, so a `pending` page leaves it out.
          data: query.status === undefined ? data : data.filter((payment) => payment.status === query.status),
          has_more: page.hasMore
        }
      })

      const cancel = Effect.fn("MerchantPayments.cancel")(function* (
        scope: Scope,
        id: Ids.PaymentId,
        settledVia: SettlementSource.SettlementSource
      ) {
        if (scope.mode === "live") {
          const atProvider = yield* live.cancel(scope, id)
          if (Option.isSome(atProvider)) return atProvider.value
        }
        return yield* writes.mutate(id, scope, (payment) => PaymentStateMachine.cancel(payment), { settledVia })
      })

      const refund = Effect.fn("MerchantPayments.refund")(function* (
        scope: Scope,
        id: Ids.PaymentId,
        request: RefundRequest,
        idempotency?: Claim
      ) {
        if (idempotency?.takeover === true) {
          const done = yield* repo.findRefundByIdempotencyKey(scope, idempotency.key, idempotency.since)
          if (Option.isSome(done)) return yield* writes.readOrNotFound(done.value, scope)
        }
        if (scope.mode === "live") {
          // 404 first; then live refunds are the dashboard's (decisions §1 check order).
          yield* writes.readOrNotFound(id, scope)
          return yield* new ApiError.RefundsProcessedManually({
            message: "Live refunds are requested from the application dashboard; see docs_url.",
            docs_url: docsUrl
          })
        }
        const refundId = Ids.RefundId.make(yield* random.uuidV4())
        return yield* writes.mutate(
          id,
          scope,
          (payment, now) =>
            RefundRules.checkApiRefund(payment, scope.mode, request.amount, docsUrl).pipe(
              Result.flatMap((amount) =>
                PaymentStateMachine.requestRefund(payment, { refundId, amount, reason: request.reason ?? null, now })
              )
            ),
          { idempotencyKey: idempotency?.key ?? null, requestedBy: request.requestedBy ?? null }
        )
      })

      const simulate = Effect.fn("MerchantPayments.simulate")(
        (
          scope: Scope,
          id: Ids.PaymentId,
          outcome: PaymentStateMachine.Outcome,
          settledVia: SettlementSource.SettlementSource
        ) =>
          scope.mode === "live"
            ? Effect.fail(notFound())
            : writes.mutate(id, scope, (payment, now) => PaymentStateMachine.settle(payment, outcome, { now }), {
                settledVia
              })
      )

      // Counted after the commit, by mode and outcome only (Metrics: no id, key or amount in a label).
      const settled = (payment: Payment.Payment) => Metrics.recordPaymentSettled(payment.mode, payment.status)

      return MerchantPayments.of({
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
        retrieve: (scope, id) => writes.readOrNotFound(id, scope),
        riderOf: repo.rider,
        retrieveRidden: (scope, id, rider) => writes.readRidden(id, scope, rider),
        list,
        cancel: (scope, id, caller = "api") =>
          cancel(scope, id, caller === "api" ? "api_cancel" : "dashboard_cancel").pipe(Effect.tap(settled)),
        refund: (scope, id, request, idempotency) =>
          refund(scope, id, request, idempotency).pipe(Effect.tap(() => Metrics.recordRefund(scope.mode, "succeeded"))),
        simulate: (scope, id, outcome, caller = "api") =>
          simulate(scope, id, outcome, caller === "api" ? "api_simulate" : "dashboard_simulate").pipe(
            Effect.tap(settled)
          )
      })
    })
  )
}
