/**
 * Live refunds through the payment provider (issue 12 §4, decisions §10 "Live refunds").
 *
 * A request (dashboard or operator API) runs in three steps, never holding a transaction across the provider call:
 * 1. one transaction under the payment's row lock (NOWAIT, like every writer): the refund is checked by the core
 *    (`PaymentStateMachine.requestRefund`: pending refunds already reserve their amount) and stored `pending`, with its
 *    `provider_refunds` row due for a read later — so a crash right after the commit still gets the call made;
 * 2. the provider call (`ProviderConnector.refund`: the provider's payment, the amount, Kassa's refund id,
 *    Idempotency-Key = the refund id), outside any transaction;
 * 3. one transaction under the payment's row lock: the core's `ProviderSettlement.apply` decides (succeeded → refund
 *    `succeeded`, payment `partially_refunded`/`refunded` with its event and delivery; failed/canceled → released, no
 *    event; succeeded-then-failed → recomputed, no event, a discrepancy), or, when the provider did not answer, the
 *    refund stays `pending` and its next attempt is set by `ProviderSettlement.Schedule`.
 *
 * The background fiber takes `provider_refunds` rows that are due (`FOR UPDATE SKIP LOCKED`, leased for a minute so
 * that another process does not call the provider for the same row meanwhile), and for each one repeats the create
 * call with the same Idempotency-Key (the provider never answered it) or reads the provider's refund, then applies
 * the answer as in step 3. A live payment Kassa did not open at a provider (no `provider_payments` row with a provider
 * payment) keeps the old path: the refund is recorded `pending` for someone to carry out by hand.
 */
import { PgClient } from "@effect/sql-pg"
import { ApiError, Ids, type Payment, PaymentStateMachine, ProviderSettlement } from "@kassa/core"
import { Context, DateTime, Duration, Effect, Layer, Option, Result, Schedule } from "effect"
import { SecureRandom } from "effect/crypto"
import { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { PaymentRepository, type StoredPayment } from "../ledger/PaymentRepository.ts"
import { notFound, PaymentWrites } from "../ledger/PaymentWrites.ts"
import * as Metrics from "../observability/Metrics.ts"
import type { NoAnswer, ProviderLinkId, ProviderRefused, RefundReading } from "../providers/ProviderConnector.ts"
import { ProviderConnectors } from "../providers/ProviderConnectors.ts"
import { ProviderLinks, type StoredLink } from "../providers/ProviderLinks.ts"
import { LiveCheckouts } from "./LiveCheckouts.ts"
import { ProviderAnswers } from "./ProviderAnswers.ts"
import { makeRows, type ProviderRefundRow } from "./ProviderRefundRows.ts"

/** Time between two rounds of the background fiber (a due refund waits at most this long past its time). */
export const interval: Duration.Duration = Duration.seconds(30)
/** How long a claimed row is kept from other processes: longer than one provider call (10 s timeout). */
export const lease: Duration.Duration = Duration.minutes(1)

export interface LiveRefundRequest {
  /** The dashboard's application; none for the operator API (the service's staff act on every application). */
  readonly applicationId?: Ids.ApplicationId | undefined
  readonly paymentId: Ids.PaymentId
  /** Minor units; none → everything still refundable. */
  readonly amount?: number | undefined
  readonly reason: string | null
  /** The dashboard user who asked (null for the admin token). */
  readonly requestedBy: string | null
}

export type LiveRefundError =
  | ApiError.NotFound
  | ApiError.PaymentNotRefundable
  | ApiError.RefundAmountExceedsRefundable
  | ApiError.PaymentBusy
  // The provider refused the refund (decisions §11: Mollie's duplicate within the hour, or any other refusal): the
  // refund is recorded `failed`, its amount released, and the request answers 502 with the provider's reason.
  | ApiError.ProviderError

export interface LiveRefundResult {
  /** The payment as fetch returns it after the provider's answer was applied (or after step 1 without a provider). */
  readonly payment: Payment.Payment
  readonly refundId: Ids.RefundId
  readonly applicationId: Ids.ApplicationId
}

interface Changed {
  readonly before: Payment.Payment
  readonly after: Payment.Payment
}

interface Reserved {
  readonly stored: StoredPayment
  readonly payment: Payment.Payment
  readonly amount: number
  readonly provider: { readonly linkId: ProviderLinkId; readonly providerPaymentId: string } | null
}

/** What the provider said to a create call or a read. */
type Outcome = RefundReading | NoAnswer | ProviderRefused

/**
 * What a provider event about a refund led to: applied (the payment, if one changed), or the provider did not answer
 * the read, so the event's sender should send it again.
 */
export type ProviderRefundResult =
  | { readonly _tag: "Applied"; readonly payment: Option.Option<Payment.Payment> }
  | NoAnswer

export class LiveRefunds extends Context.Service<
  LiveRefunds,
  {
    /** A refund request by service staff or a dashboard user (see the module comment). */
    readonly request: (request: LiveRefundRequest) => Effect.Effect<LiveRefundResult, LiveRefundError>
    /**
     * Asks the provider about one refund again (create with the same key while it never answered, else a read) and
     * applies the answer. The provider-event route calls this with the refund an event names.
     */
    readonly refresh: (refundId: Ids.RefundId) => Effect.Effect<Option.Option<Payment.Payment>>
    /**
     * A provider event named a refund (a `Refund` event names it; a `RefundsChanged` event names the provider's
     * payment too): Kassa reads it from the provider and applies what it says now. A refund Kassa asked for is
     * settled like {@link refresh}; one made in the provider's own dashboard is recorded as a `succeeded` (or
     * pending, or failed) refund with reason "refunded at provider" and the usual event, on the payment of the
     * refund's provider payment (as the provider says now, else the event's). Only refunds of payments this link
     * opened are touched (one account linked twice sends every event to both endpoints).
     */
    readonly applyProviderRefund: (input: {
      readonly linkId: ProviderLinkId
      readonly providerRefundId: string
      readonly providerPaymentId: string | null
    }) => Effect.Effect<ProviderRefundResult>
    /** One round of the background fiber: every row due at `now` (default: the clock). Returns how many. */
    readonly refreshDue: (options?: {
      readonly now?: DateTime.Utc | undefined
      readonly limit?: number | undefined
    }) => Effect.Effect<number>
  }
>()("@kassa/server/live/LiveRefunds") {
  static readonly layer = Layer.effect(
    LiveRefunds,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* PgClient.PgClient
      const repo = yield* PaymentRepository
      const writes = yield* PaymentWrites
      const answers = yield* ProviderAnswers
      const checkouts = yield* LiveCheckouts
      const connectors = yield* ProviderConnectors
      const links = yield* ProviderLinks
      const random = yield* SecureRandom.SecureRandom
      const rows = makeRows(sql)

      const { toDate } = Columns

      /** The provider call for one refund; a refusal (4xx) is an answer too: the refund failed. */
      const call = (linkId: ProviderLinkId, make: (link: StoredLink) => Effect.Effect<Outcome>) =>
        Effect.gen(function* () {
          const link = yield* links.find(linkId)
          if (Option.isNone(link)) return yield* Effect.die(new Error(`provider link ${linkId} vanished`))
          return yield* make(link.value)
        })

      const create = (
        linkId: ProviderLinkId,
        refundId: Ids.RefundId,
        providerPaymentId: string,
        amount: number,
        currency: string
      ) =>
        call(linkId, (link) =>
          connectors
            .of(link.provider)
            .refund(links.access(link), { refundId, providerPaymentId, amount, currency })
            .pipe(Effect.catchTag("ProviderRefused", (refused) => Effect.succeed<Outcome>(refused)))
        )

      const read = (
        linkId: ProviderLinkId,
        refundId: Ids.RefundId,
        providerRefundId: string,
        providerPaymentId: string | null
      ) =>
        call(linkId, (link) =>
          connectors
            .of(link.provider)
            .readRefund(links.access(link), { providerRefundId, providerPaymentId }, refundId)
            .pipe(Effect.catchTag("ProviderRefused", (refused) => Effect.succeed<Outcome>(refused)))
        )

      const answerJson = (outcome: Outcome) =>
        outcome._tag === "ProviderRefused"
          ? { _tag: "Refused", message: outcome.message, code: outcome.code, status: outcome.status }
          : outcome._tag === "NoAnswer"
            ? { _tag: "NoAnswer", reason: outcome.reason }
            : {
                _tag: "Refund",
                refund: { ...outcome.refund, created_at: DateTime.formatIso(outcome.refund.created_at) }
              }

      /** Step 3: the provider's answer, applied under the payment's row lock with everything it writes. */
      const applyAnswer = (refundId: Ids.RefundId, outcome: Outcome) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const found = yield* rows.byRefundId(refundId)
              if (Option.isNone(found)) return Option.none<Changed>()
              const row = found.value
              // Waiting is safe: lock holders are short single-row transactions.
              const locked = yield* repo.lock(row.payment_id, undefined, "wait")
              if (Option.isNone(locked)) return Option.none<Changed>()
              const stored: StoredPayment = locked.value
              const now = yield* DateTime.now
              const requestedAt = row.created_at
              const settlement: ProviderSettlement.Settlement =
                outcome._tag === "ProviderRefused"
                  ? Result.match(PaymentStateMachine.resolveRefund(stored.payment, refundId, "failed", now), {
                      onFailure: () => ({ payment: stored.payment, events: [], discrepancy: null, askAgain: false }),
                      onSuccess: (transition) => ({ ...transition, discrepancy: null, askAgain: false })
                    })
                  : ProviderSettlement.apply(
                      stored.payment,
                      outcome._tag === "NoAnswer" ? outcome : { _tag: "Refund", refund: outcome.refund },
                      { now, visit: null }
                    )
              // An answer that moves nothing (no answer, a repeated read) leaves the payment row alone.
              const after = yield* answers.applySettlement(stored, settlement, now)
              const stillPending =
                settlement.payment.refunds.find((refund) => refund.id === refundId)?.status === "pending"
              const next = stillPending
                ? toDate(ProviderSettlement.Schedule.nextRefundRead({ requestedAt, lastReadAt: now }))
                : null
              const providerRefundId = outcome._tag === "Refund" ? outcome.refund.provider_refund_id : null
              yield* sql`
                UPDATE provider_refunds
                SET provider_refund_id = COALESCE(provider_refund_id, ${providerRefundId}),
                    attempts = attempts + 1, next_read_at = ${next}, last_read_at = ${toDate(now)},
                    last_answer = ${pg.json(answerJson(outcome))}, updated_at = ${toDate(now)}
                WHERE refund_id = ${refundId}
              `
              return Option.some<Changed>({ before: stored.payment, after })
            })
          )
          .pipe(
            Effect.tap((changed) =>
              Option.isSome(changed) ? countOutcome(changed.value.before, changed.value.after, refundId) : Effect.void
            ),
            Effect.map(Option.map(({ after }) => after)),
            Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die })
          )

      /** The refunds metric, after the commit: the refund's new status when it changed. */
      const countOutcome = (before: Payment.Payment, after: Payment.Payment, refundId: Ids.RefundId) => {
        const was = before.refunds.find((refund) => refund.id === refundId)?.status
        const now = after.refunds.find((refund) => refund.id === refundId)?.status
        return now !== undefined && now !== was ? Metrics.recordRefund("live", now) : Effect.void
      }

      const refuse = (error: LiveRefundError): Result.Result<Reserved, LiveRefundError> => Result.fail(error)
      const reserved = (value: Reserved): Result.Result<Reserved, LiveRefundError> => Result.succeed(value)

      /** Step 1: the refund reserved as `pending`, and the provider's part of it recorded, in one transaction. */
      const reserve = (request: LiveRefundRequest, refundId: Ids.RefundId) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const scope =
                request.applicationId === undefined
                  ? undefined
                  : { applicationId: request.applicationId, mode: "live" as const }
              const locked = yield* repo.lock(request.paymentId, scope, "nowait")
              if (Option.isNone(locked)) return refuse(notFound())
              const stored = locked.value
              if (stored.payment.mode === "test") {
                return refuse(
                  new ApiError.PaymentNotRefundable({
                    message:
                      "This is a test payment: test payments are refunded through the merchant API with a test key.",
                    status: stored.payment.status
                  })
                )
              }
              const now = yield* DateTime.now
              const decided = PaymentStateMachine.requestRefund(stored.payment, {
                refundId,
                amount: request.amount,
                reason: request.reason,
                now
              })
              if (Result.isFailure(decided)) return refuse(decided.failure)
              yield* repo.save(stored.payment, decided.success.payment, now, { requestedBy: request.requestedBy })
              const provider = Option.getOrUndefined(yield* rows.target(stored.payment.id))
              const amount = decided.success.payment.refunds.find((refund) => refund.id === refundId)?.amount ?? 0
              if (provider === undefined || provider.provider_payment_id === null) {
                return reserved({ stored, payment: decided.success.payment, amount, provider: null })
              }
              // Due later, as a safety net: a crash between this commit and the provider's answer still gets the
              // call made (with the same key) by the background fiber.
              yield* sql`
                INSERT INTO provider_refunds (refund_id, payment_id, link_id, next_read_at, created_at, updated_at)
                VALUES (${refundId}, ${stored.payment.id}, ${provider.link_id},
                  ${toDate(ProviderSettlement.Schedule.nextRefundRead({ requestedAt: now, lastReadAt: null }))},
                  ${toDate(now)}, ${toDate(now)})
              `
              return reserved({
                stored,
                payment: decided.success.payment,
                amount,
                provider: { linkId: provider.link_id, providerPaymentId: provider.provider_payment_id }
              })
            })
          )
          .pipe(Effect.catchTag("SqlError", Effect.die), Effect.flatMap(Effect.fromResult))

      const request = Effect.fn("LiveRefunds.request")(function* (request: LiveRefundRequest) {
        const refundId = Ids.RefundId.make(yield* random.uuidV4())
        const held = yield* reserve(request, refundId)
        yield* Metrics.recordRefund("live", "requested")
        const result = (payment: Payment.Payment): LiveRefundResult => ({
          payment,
          refundId,
          applicationId: held.stored.applicationId
        })
        if (held.provider === null) return result((yield* writes.reload(held.stored.payment.id)).payment)
        const outcome = yield* create(
          held.provider.linkId,
          refundId,
          held.provider.providerPaymentId,
          held.amount,
          held.stored.payment.currency
        )
        const settled = yield* applyAnswer(refundId, outcome)
        if (outcome._tag === "ProviderRefused") {
          return yield* new ApiError.ProviderError({
            message: `The payment provider refused the refund; it is recorded as failed and its amount released. The provider said: ${outcome.message}`,
            payment_id: held.stored.payment.id
          })
        }
        return result(Option.getOrElse(settled, () => held.payment))
      })

      /** Asks the provider about one row (create again while it never answered, else read); none: nothing to ask. */
      const askRow = (row: ProviderRefundRow) => {
        const refundId = row.refund_id
        return Effect.gen(function* () {
          if (row.provider_refund_id === null) {
            // The provider never answered the create call: the same call, the same key, so at most one refund.
            const again = yield* rows.createAgain(refundId)
            if (Option.isNone(again) || again.value.provider_payment_id === null) return Option.none<Outcome>()
            return Option.some(
              yield* create(
                row.link_id,
                refundId,
                again.value.provider_payment_id,
                again.value.amount,
                again.value.currency
              )
            )
          }
          // Mollie reads a refund under its payment; Stripe needs none.
          const target = yield* rows.target(row.payment_id)
          const providerPaymentId = Option.isSome(target) ? target.value.provider_payment_id : null
          return Option.some(yield* read(row.link_id, refundId, row.provider_refund_id, providerPaymentId))
        })
      }

      const refreshRow = (row: ProviderRefundRow) =>
        askRow(row).pipe(
          Effect.flatMap((outcome) =>
            Option.isNone(outcome) ? Effect.succeedNone : applyAnswer(row.refund_id, outcome.value)
          )
        )

      const refresh = Effect.fn("LiveRefunds.refresh")(function* (refundId: Ids.RefundId) {
        const row = yield* rows.byRefundId(refundId)
        return Option.isNone(row) ? Option.none<Payment.Payment>() : yield* refreshRow(row.value)
      })

      /** A refund made at the provider, recorded on the payment of `providerPaymentId` under its row lock. */
      const recordForeign = (
        linkId: ProviderLinkId,
        accountLinks: ReadonlyArray<ProviderLinkId>,
        providerPaymentId: string,
        reading: RefundReading
      ) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const owner = yield* rows.owner(providerPaymentId, accountLinks)
              if (Option.isNone(owner)) return Option.none<Payment.Payment>()
              const locked = yield* repo.lock(owner.value, undefined, "wait")
              if (Option.isNone(locked)) return Option.none<Payment.Payment>()
              const stored = locked.value
              // Checked again under the lock: another event about the same refund may have recorded it meanwhile.
              const seen = yield* rows.byProviderRefundId(reading.refund.provider_refund_id)
              if (Option.isSome(seen)) return Option.none<Payment.Payment>()
              const now = yield* DateTime.now
              const settlement = ProviderSettlement.apply(stored.payment, reading, { now, visit: null })
              // Not recordable (beyond what is refundable, or a payment never paid): the discrepancy names the
              // provider's refund, as there is no refund row to point at.
              const after = yield* answers.applySettlement(stored, settlement, now, {
                detail: reading.refund.provider_refund_id
              })
              const recorded = settlement.payment.refunds.find((refund) => refund.id === reading.refund.refund_id)
              if (recorded !== undefined) {
                const next =
                  recorded.status === "pending"
                    ? toDate(ProviderSettlement.Schedule.nextRefundRead({ requestedAt: now, lastReadAt: now }))
                    : null
                yield* sql`
                  INSERT INTO provider_refunds (refund_id, payment_id, link_id, provider_refund_id, attempts,
                    next_read_at, last_read_at, last_answer, created_at, updated_at)
                  VALUES (${recorded.id}, ${stored.payment.id}, ${linkId}, ${reading.refund.provider_refund_id}, 0,
                    ${next}, ${toDate(now)}, ${pg.json(answerJson(reading))}, ${toDate(now)}, ${toDate(now)})
                `
              }
              return settlement.payment === stored.payment ? Option.none<Payment.Payment>() : Option.some(after)
            })
          )
          .pipe(Effect.catchTags({ SqlError: Effect.die, PaymentBusy: Effect.die }))

      const applied = (payment: Option.Option<Payment.Payment>): ProviderRefundResult => ({
        _tag: "Applied",
        payment
      })
      const nothing = applied(Option.none())
      /** A refused read (4xx) is logged and the event answered: sending it again would be refused again. */
      const refusedRead = (providerRefundId: string, outcome: ProviderRefused) =>
        Effect.logWarning("The provider refused to read a refund an event named").pipe(
          Effect.annotateLogs({ provider_refund_id: providerRefundId, provider_message: outcome.message }),
          Effect.as(nothing)
        )

      const applyProviderRefund = Effect.fn("LiveRefunds.applyProviderRefund")(function* (input: {
        readonly linkId: ProviderLinkId
        readonly providerRefundId: string
        readonly providerPaymentId: string | null
      }) {
        // Whose payments the event may be about: every link of this provider account in this application (issue 21
        // §10: a re-link must not orphan what the old link opened). Another application's link of the same account
        // gets the event at its own endpoint.
        // Read only when a refund is not this link's own (the common case needs no query).
        const accountLinks = yield* Effect.cached(checkouts.accountLinks(input.linkId))
        const ofAccount = (linkId: ProviderLinkId) =>
          linkId === input.linkId ? Effect.succeed(true) : Effect.map(accountLinks, (ids) => ids.includes(linkId))
        const known = yield* rows.byProviderRefundId(input.providerRefundId)
        if (Option.isSome(known)) {
          const row = known.value
          if (!(yield* ofAccount(row.link_id))) return nothing
          const outcome = yield* askRow(row)
          if (Option.isNone(outcome)) return nothing
          // Kept pending with its next read set: the event is sent again, and the background round asks anyway.
          if (outcome.value._tag === "NoAnswer") {
            yield* applyAnswer(row.refund_id, outcome.value)
            return outcome.value
          }
          return applied(yield* applyAnswer(row.refund_id, outcome.value))
        }
        // Unknown: read it, under a new id for the case that it was made at the provider.
        const newId = Ids.RefundId.make(yield* random.uuidV4())
        const outcome = yield* read(input.linkId, newId, input.providerRefundId, input.providerPaymentId)
        if (outcome._tag === "NoAnswer") return outcome
        if (outcome._tag === "ProviderRefused") return yield* refusedRead(input.providerRefundId, outcome)
        if (outcome.kassaMade) {
          // Kassa's own refund whose create call has not been answered yet: settled as its answer would be.
          const ours = yield* rows.byRefundId(outcome.refund.refund_id)
          return Option.isSome(ours) && (yield* ofAccount(ours.value.link_id))
            ? applied(yield* applyAnswer(outcome.refund.refund_id, outcome))
            : nothing
        }
        // What the provider says now places it; the event's hint only when the refund does not say.
        const providerPaymentId = outcome.providerPaymentId ?? input.providerPaymentId
        if (providerPaymentId === null) return nothing
        return applied(yield* recordForeign(input.linkId, yield* accountLinks, providerPaymentId, outcome))
      })

      const refreshDue = Effect.fn("LiveRefunds.refreshDue")(function* (
        options: { readonly now?: DateTime.Utc | undefined; readonly limit?: number | undefined } = {}
      ) {
        const now = options.now ?? (yield* DateTime.now)
        const limit = options.limit ?? 100
        // Claimed and leased in one short statement; the provider calls happen after its commit.
        const claimed = yield* rows.claimDue({ now, until: DateTime.addDuration(now, lease), limit })
        yield* Effect.forEach(claimed, refreshRow, { discard: true })
        return claimed.length
      })

      yield* refreshDue().pipe(
        Effect.catchCause((cause) => Effect.logError("Live refund round failed", cause)),
        Effect.repeat(Schedule.spaced(interval)),
        Effect.forkScoped
      )

      return LiveRefunds.of({ request, refresh, applyProviderRefund, refreshDue: (options) => refreshDue(options) })
    })
  )
}
