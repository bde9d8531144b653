/**
 * The payments' write kernel: the one way a payment changes, whoever changes it (a merchant's request, the hosted
 * checkout, the sweeper, a provider's answer). Load and lock the payment, pass it through lazy expiry, let the
 * core's state machine decide, then write the payment, its events and their deliveries in the caller's transaction.
 *
 * - Writers take the payment's row lock with NOWAIT ({@link PaymentWrites.mutate}): a payment another request is
 *   changing answers 409 `payment_busy` at once, and two refunds can never both see the same refundable amount.
 * - Lazy expiry: every reader and writer passes the payment through `PaymentStateMachine.observe` first, so a
 *   pending payment past `expires_at` is expired (and its event written, committed) before anything is answered. A
 *   list expires only the rows it shows (`expireShown`); the sweeper expires the rest set-based (`expireDue`). A live
 *   payment with a checkout at its provider is never expired here: its provider decides (decisions §10).
 * - A business refusal after a lazy expiry still commits the expiry: `mutate` returns the refusal as a `Result`
 *   inside the transaction and raises it only after the commit.
 * - How a payment was settled (`ChangeOrigin.settledVia`, issue 22 §3) is written by the status change's own
 *   UPDATE: callers name their source; the expiries here name theirs (`expiry_lazy`, `expiry_sweeper`).
 */
import {
  ApiError,
  CreatePayment,
  type Ids,
  type Payment,
  PaymentStateMachine,
  type SettlementSource
} from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as Metrics from "../observability/Metrics.ts"
import { EventOutbox } from "./EventOutbox.ts"
import { type ChangeOrigin, PaymentRepository, type Scope, type StoredPayment } from "./PaymentRepository.ts"

/** The contract's 404 for a payment the caller cannot see. */
export const notFound = () => new ApiError.NotFound({ message: "No payment with this id." })

export class PaymentWrites extends Context.Service<
  PaymentWrites,
  {
    /** The payment as stored now, inside the caller's transaction (it must exist: the caller holds its lock). */
    readonly reload: (id: Ids.PaymentId) => Effect.Effect<StoredPayment>
    /**
     * Writes a transition of a locked payment with its events. The events carry the payment as fetch returns it
     * afterwards (read back, so `data` and a later fetch are the same bytes).
     */
    readonly apply: (
      stored: StoredPayment,
      transition: PaymentStateMachine.Transition,
      now: DateTime.Utc,
      origin?: ChangeOrigin
    ) => Effect.Effect<StoredPayment>
    /** Lazy expiry of a locked payment (see the module comment). */
    readonly observe: (stored: StoredPayment, now: DateTime.Utc) => Effect.Effect<StoredPayment>
    /**
     * The read path: no lock unless the payment is due, then a (waiting) lock to expire it before answering.
     * Waiting is safe: lock holders are short single-row transactions.
     */
    readonly read: (id: Ids.PaymentId, scope?: Scope) => Effect.Effect<Option.Option<Payment.Payment>>
    readonly readOrNotFound: (id: Ids.PaymentId, scope?: Scope) => Effect.Effect<Payment.Payment, ApiError.NotFound>
    /**
     * {@link readOrNotFound} of what the API key's statement already read (`PaymentRepository.rider`): the same
     * answer, from that row unless the payment is due (then locked and expired as a read does).
     */
    readonly readRidden: (
      id: Ids.PaymentId,
      scope: Scope,
      rider: unknown
    ) => Effect.Effect<Payment.Payment, ApiError.NotFound>
    /**
     * The write path: lock NOWAIT (busy → `payment_busy`, rolled back), lazy expiry, then `change` decides; the
     * payment as fetch returns it afterwards.
     */
    readonly mutate: <E>(
      id: Ids.PaymentId,
      scope: Scope | undefined,
      change: (payment: Payment.Payment, now: DateTime.Utc) => Result.Result<PaymentStateMachine.Transition, E>,
      origin?: ChangeOrigin
    ) => Effect.Effect<Payment.Payment, E | ApiError.NotFound | ApiError.PaymentBusy>
    /**
     * A create whose insert rule 5's unique index refused after its check passed (a concurrent create committed the
     * order reference meanwhile): the refusal naming the payment that won.
     */
    readonly lostReference: (scope: Scope, orderReference: string) => Effect.Effect<ApiError.OrderReferenceAlreadyPaid>
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
>()("@kassa/server/ledger/PaymentWrites") {
  static readonly layer = Layer.effect(
    PaymentWrites,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* PaymentRepository
      const outbox = yield* EventOutbox

      const reload = (id: Ids.PaymentId) =>
        repo.find(id).pipe(
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.die(new Error(`payment ${id} vanished inside its own transaction`)),
              onSome: Effect.succeed
            })
          )
        )

      const apply = (
        stored: StoredPayment,
        transition: PaymentStateMachine.Transition,
        now: DateTime.Utc,
        origin: ChangeOrigin = {}
      ) =>
        Effect.gen(function* () {
          yield* repo.save(stored.payment, transition.payment, now, origin)
          const after = yield* reload(stored.payment.id)
          if (transition.events.length > 0) {
            yield* outbox.record(stored.applicationId, after.payment, transition.events, now)
          }
          return after
        })

      const observeDue = (stored: StoredPayment, now: DateTime.Utc) => {
        const transition = PaymentStateMachine.observe(stored.payment, now)
        // Counted inside the transaction that expires it: only a failed commit (a database error) would overcount.
        return transition.events.length === 0
          ? Effect.succeed(stored)
          : apply(stored, transition, now, { settledVia: "expiry_lazy" }).pipe(
              Effect.tap(() => Metrics.recordPaymentSettled(transition.payment.mode, transition.payment.status))
            )
      }

      const observe = (stored: StoredPayment, now: DateTime.Utc) =>
        stored.payment.mode === "live" && PaymentStateMachine.isDue(stored.payment, now)
          ? Effect.flatMap(repo.hasCheckout(stored.payment.id), (atProvider) =>
              atProvider ? Effect.succeed(stored) : observeDue(stored, now)
            )
          : observeDue(stored, now)

      const read = (id: Ids.PaymentId, scope?: Scope) =>
        Effect.flatMap(repo.find(id, scope), (found) => readFound(id, scope, found))

      // On every fetch: combinators rather than a generator (each of whose steps is a turn of the fiber's loop); only
      // a payment found due takes the transaction that expires it.
      const readFound = (
        id: Ids.PaymentId,
        scope: Scope | undefined,
        found: Option.Option<StoredPayment>
      ): Effect.Effect<Option.Option<Payment.Payment>> =>
        Option.isNone(found)
          ? Effect.succeedNone
          : Effect.flatMap(DateTime.now, (now) =>
              PaymentStateMachine.isDue(found.value.payment, now)
                ? expireRead(id, scope)
                : Effect.succeed(Option.some(found.value.payment))
            )

      const expireRead = (id: Ids.PaymentId, scope: Scope | undefined) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const locked = yield* repo.lock(id, scope, "wait")
              if (Option.isNone(locked)) return Option.none<Payment.Payment>()
              const seen = yield* observe(locked.value, yield* DateTime.now)
              return Option.some(seen.payment)
            })
          )
          .pipe(Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die }))

      const orNotFound = Effect.flatMap(
        Option.match({
          onNone: () => Effect.fail(notFound()),
          onSome: (payment: Payment.Payment) => Effect.succeed(payment)
        })
      )
      const readOrNotFound = (id: Ids.PaymentId, scope?: Scope) => orNotFound(read(id, scope))
      const readRidden = (id: Ids.PaymentId, scope: Scope, rider: unknown) =>
        orNotFound(Effect.flatMap(repo.fromRider(rider), (found) => readFound(id, scope, found)))

      const mutate = <E>(
        id: Ids.PaymentId,
        scope: Scope | undefined,
        change: (payment: Payment.Payment, now: DateTime.Utc) => Result.Result<PaymentStateMachine.Transition, E>,
        origin: ChangeOrigin = {}
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

      const lostReference = (scope: Scope, orderReference: string) =>
        Effect.gen(function* () {
          const winner = yield* repo.findBlocking(scope, orderReference)
          const refusal = CreatePayment.checkOrderReference(
            Option.match(winner, { onNone: () => null, onSome: (id) => ({ id }) })
          )
          return Result.isFailure(refusal)
            ? refusal.failure
            : yield* Effect.die(new Error("order reference conflict without a blocking payment"))
        })

      /**
       * Expires locked due payments as one set: `PaymentStateMachine.expireDue` decides, one UPDATE writes the
       * statuses, two INSERTs their events and deliveries — the same rows the per-payment path writes. The events
       * carry the payment as fetch returns it afterwards: only the status differs from the row just locked.
       */
      const expireLocked = (
        locked: ReadonlyArray<StoredPayment>,
        now: DateTime.Utc,
        settledVia: SettlementSource.SettlementSource
      ) =>
        Effect.gen(function* () {
          const transitions = PaymentStateMachine.expireDue(
            locked.map((stored) => stored.payment),
            now
          )
          if (transitions.length === 0) return []
          const changed = new Set<string>(
            yield* repo.saveStatuses(
              transitions.map((transition) => transition.payment),
              now,
              settledVia
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

      const expireDue = Effect.fn("PaymentWrites.expireDue")(
        function* (options: { readonly batchSize?: number | undefined }) {
          const limit = options.batchSize ?? 500
          let total = 0
          while (true) {
            const now = yield* DateTime.now
            const { count, expired } = yield* sql.withTransaction(
              Effect.gen(function* () {
                const locked = yield* repo.lockDue({ now, limit })
                return { count: locked.length, expired: yield* expireLocked(locked, now, "expiry_sweeper") }
              })
            )
            yield* countExpired(expired)
            total += count
            if (count < limit) return total
          }
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      const expireShown = Effect.fn("PaymentWrites.expireShown")(
        function* (ids: ReadonlyArray<Ids.PaymentId>) {
          if (ids.length === 0) return []
          const now = yield* DateTime.now
          const expired = yield* sql.withTransaction(
            Effect.gen(function* () {
              return yield* expireLocked(yield* repo.lockDueAmong(ids, now), now, "expiry_lazy")
            })
          )
          yield* countExpired(expired)
          // Read again: a row another transaction changed meanwhile (paid, expired) is shown as it now is.
          return (yield* repo.findMany(ids)).map((stored) => stored.payment)
        },
        Effect.catchTag("SqlError", Effect.die)
      )

      return PaymentWrites.of({
        reload,
        apply,
        observe,
        read,
        readOrNotFound,
        readRidden,
        mutate,
        lostReference,
        expireDue: (options) => expireDue(options ?? {}),
        expireShown
      })
    })
  )
}
