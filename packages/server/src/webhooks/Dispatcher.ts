/**
 * The webhook delivery engine (specification "Events", decisions §7): turns the outbox's pending deliveries into
 * signed attempts, at least once, on the core's schedule. It runs inside every server process; any number of them
 * may share one PostgreSQL.
 *
 * - Claiming: due deliveries are claimed in batches (DeliveryRepository: `FOR UPDATE SKIP LOCKED` and a lease of
 *   {@link leaseDuration}, well over the 10 s attempt limit). No transaction is open while a receiver is called;
 *   results are written back in batches by one writer fiber. A process that dies leaves its leases to be taken
 *   over: on PostgreSQL at once (its advisory lock went with its connection), otherwise when the lease runs out.
 * - Wake-ups: DeliveryWakeup (in-process after the outbox's commit; LISTEN/NOTIFY on PostgreSQL), with a poll every
 *   {@link PollInterval} as the backstop, which is also how retries come due.
 * - Caps (settings; defaults {@link globalLimit} and {@link perUrlLimit}): attempts in flight per process and per URL; a
 *   delivery whose URL is at its cap is handed back at once, and that application's deliveries are left out of the
 *   next claims until a slot frees, so a slow receiver holds only its own slots. Retries may hold at most
 *   {@link retryLimit} slots and first attempts are claimed first, so retries never starve first attempts.
 * - Time comes from Effect's Clock (`DateTime.now`); {@link Dispatcher.runDue} runs one step at a given time, which
 *   is how the schedule is tested.
 */
import { type Ids, RetrySchedule, WebhookSecret } from "@kassa/core"
import {
  Context,
  DateTime,
  Duration,
  Effect,
  Fiber,
  FiberSet,
  Latch,
  Layer,
  Option,
  Queue,
  Random,
  Schedule,
  Schema,
  Tracer
} from "effect"
import { Mac } from "effect/crypto"
import { Headers, HttpTraceContext } from "effect/http"
import { SqlClient } from "effect/sql"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Columns from "../database/Columns.ts"
import * as Metrics from "../observability/Metrics.ts"
import {
  type AttemptRecord,
  type ClaimedDelivery,
  DeliveryRepository,
  type DeliveryView,
  ownerLockClass,
  type ScheduledResult,
  type Target
} from "./DeliveryRepository.ts"
import { DeliveryWakeup } from "./DeliveryWakeup.ts"
import { type Outcome, WebhookSender } from "./WebhookSender.ts"

/** What an attempt's span links to: the trace context stored with its event, if any. */
const CauseRow = Schema.Struct({ trace_context: Schema.NullOr(Schema.String) })

/** Attempts in flight in one process, by default (`KASSA_DELIVERY_CONCURRENCY`). */
export const globalLimit = 256
/** Attempts in flight to one webhook URL from one process, by default (`KASSA_DELIVERY_CONCURRENCY_PER_URL`). */
export const perUrlLimit = 16
/** Slots retries may hold at the default caps (half); the rest are always there for first attempts. */
export const retryLimit = 128
/** Largest claim. */
export const batchSize = 100
/** A claim is taken over after this long, whatever its owner is doing (10 s attempt + write-back, with room). */
export const leaseDuration: Duration.Duration = Duration.seconds(60)
/**
 * The polling backstop: how late a retry can be, or a first attempt whose wake-up was lost. A reference rather than a
 * constant so that a test can stretch it and show that first attempts come from the wake-up, not from the poll.
 */
export const PollInterval = Context.Reference<Duration.Duration>("@kassa/server/webhooks/Dispatcher/PollInterval", {
  defaultValue: () => Duration.seconds(1)
})

export interface RunSummary {
  /** Deliveries claimed (attempted, or failed at their 24 h without an attempt). */
  readonly claimed: number
}

/** What a failed scheduled attempt (or its success) does to the delivery, by the core's schedule. */
export const scheduledResult = (
  delivery: ClaimedDelivery,
  startedAt: DateTime.Utc,
  record: AttemptRecord,
  succeeded: boolean
): ScheduledResult => {
  const attemptCount = delivery.attemptCount + 1
  const firstAttemptAt = delivery.firstAttemptAt ?? startedAt
  const base = { id: delivery.id, claimToken: delivery.claimToken, attempt: record, attemptCount, firstAttemptAt }
  if (succeeded) return { ...base, status: "succeeded", nextAttemptAt: null, at: startedAt }
  const next = RetrySchedule.nextAttempt({ attemptNumber: attemptCount, startedAt, firstAttemptAt })
  return next._tag === "Retry"
    ? { ...base, status: "pending", nextAttemptAt: next.dueAt, at: startedAt }
    : { ...base, status: "failed", nextAttemptAt: null, at: startedAt }
}

/** A delivery that comes due once its 24 h are over is failed without another attempt. */
const pastDeadline = (delivery: ClaimedDelivery, now: DateTime.Utc): ScheduledResult | null =>
  delivery.firstAttemptAt !== null && !DateTime.isLessThan(now, RetrySchedule.deadline(delivery.firstAttemptAt))
    ? {
        id: delivery.id,
        claimToken: delivery.claimToken,
        attempt: null,
        status: "failed",
        attemptCount: delivery.attemptCount,
        nextAttemptAt: null,
        firstAttemptAt: delivery.firstAttemptAt,
        at: now
      }
    : null

/** The attempt's outcome as a metric label: `success`, `http_<status>` for another answer, or the error code. */
const attemptOutcome = (outcome: Outcome): string =>
  outcome.succeeded
    ? "success"
    : outcome.responseStatus !== null
      ? `http_${outcome.responseStatus}`
      : (outcome.error ?? "connection_error")

/** Counts a delivery whose result ends it (a retry still pending is not counted). */
const countFinished = (result: ScheduledResult) =>
  result.status === "pending" ? Effect.void : Metrics.recordDelivery(result.status)

const noUrl: Outcome = {
  succeeded: false,
  responseStatus: null,
  error: "no_webhook_url",
  responseBody: null,
  durationMs: 0
}

export class Dispatcher extends Context.Service<
  Dispatcher,
  {
    /**
     * One step, now or at `at`: claims every delivery due then, makes their attempts (started at `at` when given)
     * and writes the results before returning. No caps; the background loop does the same continuously.
     */
    readonly runDue: (options?: { readonly at?: DateTime.Utc | undefined }) => Effect.Effect<RunSummary>
    /**
     * Resend (decisions §7): one immediate manual attempt of the same event, with a fresh `t`, outside the schedule.
     * Answers the delivery as it is now (the attempt follows) and its application; none for an unknown id.
     */
    readonly resend: (
      id: Ids.DeliveryId
    ) => Effect.Effect<Option.Option<{ readonly view: DeliveryView; readonly applicationId: Ids.ApplicationId }>>
  }
>()("@kassa/server/webhooks/Dispatcher") {
  /** The service and its fibers, which live as long as the layer. */
  static readonly layer = Layer.effect(
    Dispatcher,
    Effect.gen(function* () {
      const repo = yield* DeliveryRepository
      const sender = yield* WebhookSender
      const wakeup = yield* DeliveryWakeup
      const sql = yield* SqlClient.SqlClient
      const config = yield* ServerConfig
      const mac = yield* Mac.Mac
      const onPostgres = Option.isSome(config.databaseUrl)
      const owner = yield* Random.nextIntBetween(1, 2_147_483_647)
      const pollInterval = yield* PollInterval
      // The caps (KASSA_DELIVERY_CONCURRENCY, KASSA_DELIVERY_CONCURRENCY_PER_URL); retries keep the same share of
      // the slots as at the defaults (half), and a full loop claims again once an eighth is free.
      const globalCap = config.deliveryConcurrency
      const perUrlCap = config.deliveryConcurrencyPerUrl
      const retryCap = Math.max(1, Math.floor((globalCap * retryLimit) / globalLimit))
      const refillAt = Math.max(1, Math.floor(globalCap / 8))

      /**
       * A link from an attempt's span to the span that caused its event (stored with the event: `trace_context`), so a
       * trace backend shows which request a webhook came from. Read only when spans are exported.
       */
      const causeOf = (deliveryId: Ids.DeliveryId) =>
        Effect.withFiber((fiber): Effect.Effect<ReadonlyArray<Tracer.SpanLink>> => {
          if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return Effect.succeed([])
          return Columns.first(CauseRow)(sql`
            SELECT e.trace_context FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ${deliveryId}
          `).pipe(
            Effect.map((row) => {
              const traceparent = Option.getOrNull(row)?.trace_context
              if (traceparent == null) return []
              return Option.match(HttpTraceContext.fromHeaders(Headers.fromInput({ traceparent })), {
                onNone: () => [],
                onSome: (span) => [{ span, attributes: { "kassa.link": "caused_by" } }]
              })
            }),
            // A link is an aid: the attempt goes ahead without it if the database fails. A row that does not decode
            // is a broken database, as everywhere.
            Effect.catchTag("SchemaError", Effect.die),
            Effect.orElseSucceed(() => [])
          )
        })

      /** Makes one attempt of `delivery` to `target` (URL and secrets as read for it), started at `clock`'s time. */
      const attempt = Effect.fnUntraced(function* (
        delivery: { readonly id: Ids.DeliveryId; readonly event: string; readonly body: string },
        target: Target | undefined,
        kind: AttemptRecord["kind"],
        clock: Effect.Effect<DateTime.Utc>
      ) {
        const links = yield* causeOf(delivery.id)
        const startedAt = yield* clock
        const url = target?.url ?? null
        const outcome =
          target === undefined || url === null
            ? noUrl
            : yield* sender
                .send({
                  url,
                  event: delivery.event,
                  body: delivery.body,
                  secrets: WebhookSecret.signingSecrets<string>({ ...target.secrets, now: startedAt }),
                  timestamp: Math.floor(DateTime.toEpochMillis(startedAt) / 1000)
                })
                .pipe(
                  Effect.provideService(Mac.Mac, mac),
                  Effect.tap((outcome) =>
                    Effect.annotateCurrentSpan({
                      "http.response.status_code": outcome.responseStatus ?? 0,
                      "kassa.attempt.outcome": attemptOutcome(outcome)
                    })
                  ),
                  // A client span per attempt; its id travels to the receiver as `traceparent` (WebhookSender).
                  Effect.withSpan("webhook.attempt", {
                    kind: "client",
                    attributes: { "kassa.event": delivery.event },
                    links
                  })
                )
        yield* Metrics.recordAttempt(kind, attemptOutcome(outcome), outcome.durationMs / 1000)
        const record: AttemptRecord = {
          kind,
          startedAt,
          url,
          responseStatus: outcome.responseStatus,
          error: outcome.error,
          durationMs: outcome.durationMs,
          responseBody: outcome.responseBody
        }
        return { startedAt, record, succeeded: outcome.succeeded }
      })

      const scheduledAttempt = (
        delivery: ClaimedDelivery,
        target: Target | undefined,
        clock: Effect.Effect<DateTime.Utc>
      ) =>
        attempt(delivery, target, "scheduled", clock).pipe(
          Effect.map(({ startedAt, record, succeeded }) => scheduledResult(delivery, startedAt, record, succeeded)),
          Effect.tap(countFinished)
        )

      const targetsOf = (claimed: ReadonlyArray<ClaimedDelivery>) =>
        repo.targets([...new Set(claimed.map((delivery) => delivery.applicationId))])

      // ---- The background loop's state: counts of attempts in flight (fibers interleave only at yields).
      let inFlight = 0
      let retriesInFlight = 0
      const perUrl = new Map<string, number>()
      // The last URL seen per application, to leave applications with a busy receiver out of claims.
      const applicationUrl = new Map<string, string>()

      const busyApplications = () => {
        const busy: Array<string> = []
        for (const [application, url] of applicationUrl) {
          if ((perUrl.get(url) ?? 0) >= perUrlCap) busy.push(application)
        }
        return busy
      }

      const takeSlot = (delivery: ClaimedDelivery, url: string | null) => {
        inFlight++
        if (delivery.attemptCount > 0) retriesInFlight++
        if (url !== null) {
          perUrl.set(url, (perUrl.get(url) ?? 0) + 1)
          applicationUrl.set(delivery.applicationId, url)
        }
      }

      const freeSlot = (delivery: ClaimedDelivery, url: string | null) =>
        Effect.suspend(() => {
          inFlight--
          if (delivery.attemptCount > 0) retriesInFlight--
          let wake = inFlight === globalCap - refillAt
          if (url !== null) {
            const left = (perUrl.get(url) ?? 1) - 1
            if (left === 0) {
              perUrl.delete(url)
              applicationUrl.delete(delivery.applicationId)
            } else perUrl.set(url, left)
            // A receiver that was at its cap can take work again.
            wake ||= left === perUrlCap - 1
          }
          return wake ? wakeup.wake : Effect.void
        })

      const writes = yield* Queue.bounded<ScheduledResult>(4 * globalCap)
      const attempts = yield* FiberSet.make<unknown, never>()

      /** The writer: batches of results, one transaction each; a failed batch is tried again. */
      const writeBatch = (batch: ReadonlyArray<ScheduledResult>) =>
        repo.complete(batch).pipe(
          Effect.sandbox,
          Effect.retry({ times: 5, schedule: Schedule.exponential(Duration.millis(200)) }),
          Effect.catch((cause) =>
            Effect.logError(`Could not record ${batch.length} webhook result(s); their leases will run out`, cause)
          ),
          // Started writes finish, even at shutdown: their attempts happened.
          Effect.uninterruptible
        )
      const writer = Queue.takeBetween(writes, 1, 500).pipe(Effect.flatMap(writeBatch), Effect.forever)

      /** One claim round of the background loop; true when more due work is probably waiting. */
      const round = Effect.gen(function* () {
        const free = globalCap - inFlight
        if (free <= 0) return true
        const now = yield* DateTime.now
        const common = {
          now,
          exclude: busyApplications(),
          owner,
          leaseUntil: DateTime.addDuration(now, leaseDuration),
          checkOwners: onPostgres
        }
        const firstLimit = Math.min(free, batchSize)
        const firsts = yield* repo.claim({ ...common, lane: "first", limit: firstLimit })
        const retryRoom = Math.min(free - firsts.length, retryCap - retriesInFlight, batchSize)
        const retries = retryRoom > 0 ? yield* repo.claim({ ...common, lane: "retry", limit: retryRoom }) : []
        const claimed = [...firsts, ...retries]
        if (claimed.length === 0) return false

        const targets = yield* targetsOf(claimed)
        const handedBack = new Map<string, Array<string>>()
        for (const delivery of claimed) {
          const expired = pastDeadline(delivery, now)
          if (expired !== null) {
            yield* countFinished(expired)
            yield* Queue.offer(writes, expired)
            continue
          }
          const target = targets.get(delivery.applicationId)
          const url = target?.url ?? null
          if (url !== null && (perUrl.get(url) ?? 0) >= perUrlCap) {
            // Its receiver is busy: back to the queue, due as before, and its application sits out the next claims.
            applicationUrl.set(delivery.applicationId, url)
            handedBack.set(delivery.claimToken, [...(handedBack.get(delivery.claimToken) ?? []), delivery.id])
            continue
          }
          takeSlot(delivery, url)
          yield* FiberSet.run(
            attempts,
            scheduledAttempt(delivery, target, DateTime.now).pipe(
              Effect.flatMap((result) => Queue.offer(writes, result)),
              Effect.catchDefect((defect) =>
                Effect.logError("Webhook attempt broke off; it is made again when its lease runs out", defect)
              ),
              Effect.ensuring(freeSlot(delivery, url))
            )
          )
        }
        for (const [token, ids] of handedBack) yield* repo.release(ids, token)
        return firsts.length === firstLimit || (retryRoom > 0 && retries.length === retryRoom)
      })

      const loop = Effect.gen(function* () {
        while (true) {
          const more = yield* round.pipe(
            Effect.catchCause((cause) => Effect.logError("Webhook dispatch round failed", cause).pipe(Effect.as(false)))
          )
          if (!(more && inFlight < globalCap)) yield* wakeup.wait(pollInterval)
        }
      })

      // ---- Liveness of this process's leases.
      if (onPostgres) {
        // A dedicated connection holds this owner's advisory lock as long as the process lives; a killed process
        // loses it with the connection, and other processes take its leases over at once.
        const locked = yield* Latch.make()
        const hold = Effect.gen(function* () {
          const connection = yield* sql.reserve
          yield* connection.execute("SELECT pg_advisory_lock($1, $2)", [ownerLockClass, owner], undefined)
          yield* locked.open
          // Notices a lost connection, to take the lock again on a new one.
          yield* connection.execute("SELECT 1", [], undefined).pipe(Effect.delay(Duration.seconds(5)), Effect.forever)
        }).pipe(Effect.scoped)
        yield* hold.pipe(
          Effect.catchCause((cause) => Effect.logWarning("Webhook lease lock lost; taking it again", cause)),
          Effect.andThen(Effect.sleep(Duration.seconds(1))),
          Effect.forever,
          Effect.forkScoped
        )
        yield* locked.await
      } else {
        // Only one process can open the embedded database: every lease in it is from an earlier run.
        yield* repo.releaseAll
      }

      const writerFiber = yield* Effect.forkScoped(writer)
      const loopFiber = yield* Effect.forkScoped(loop)

      // Runs before the fibers' own finalizers: stop claiming, stop attempts, record what finished, and hand back
      // the rest so another process (or the next start) retries it at once.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          yield* Fiber.interrupt(loopFiber)
          yield* FiberSet.clear(attempts)
          yield* Fiber.interrupt(writerFiber)
          const left = yield* Queue.clear(writes)
          if (left.length > 0) yield* writeBatch(left)
          yield* repo.releaseOwner(owner)
        }).pipe(Effect.catchCause((cause) => Effect.logWarning("Webhook dispatcher stopped uncleanly", cause)))
      )

      const runDue = Effect.fn("Dispatcher.runDue")(function* (options?: { readonly at?: DateTime.Utc | undefined }) {
        const at = options?.at
        const clock = at === undefined ? DateTime.now : Effect.succeed(at)
        let total = 0
        while (true) {
          const now = yield* clock
          const claimed = yield* repo.claim({
            now,
            limit: batchSize,
            lane: "all",
            exclude: [],
            owner,
            leaseUntil: DateTime.addDuration(now, leaseDuration),
            checkOwners: onPostgres
          })
          if (claimed.length === 0) return { claimed: total }
          total += claimed.length
          const targets = yield* targetsOf(claimed)
          const results = yield* Effect.forEach(
            claimed,
            (delivery) => {
              const expired = pastDeadline(delivery, now)
              return expired !== null
                ? Effect.as(countFinished(expired), expired)
                : scheduledAttempt(delivery, targets.get(delivery.applicationId), clock)
            },
            { concurrency: "unbounded" }
          )
          yield* repo.complete(results)
        }
      })

      const resend = Effect.fn("Dispatcher.resend")(function* (id: Ids.DeliveryId) {
        const stored = yield* repo.find(id)
        if (Option.isNone(stored)) return Option.none()
        const delivery = stored.value
        const view = yield* repo.view(id)
        yield* FiberSet.run(
          attempts,
          Effect.gen(function* () {
            const targets = yield* repo.targets([delivery.applicationId])
            const { record, succeeded } = yield* attempt(
              delivery,
              targets.get(delivery.applicationId),
              "manual",
              DateTime.now
            )
            yield* repo.recordManual(id, record, succeeded)
          }).pipe(Effect.catchCause((cause) => Effect.logError("Manual webhook attempt failed", cause)))
        )
        return Option.map(view, (current) => ({ view: current, applicationId: delivery.applicationId }))
      })

      return Dispatcher.of({ runDue, resend })
    })
  )
}
