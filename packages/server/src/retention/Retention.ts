/**
 * Retention (issue 14 §4): a background fiber that deletes what is past its window, so the tables stop growing
 * forever (they are not partitioned: see docs/decisions.md). Every 5 minutes a round prunes, oldest first:
 * - finished deliveries (`succeeded`, `failed`) that finished before `KASSA_RETENTION_DELIVERIES` (90 days), with
 *   their attempts (one statement: the attempts, then the delivery, which the attempts reference);
 * - events older than that window but never younger than 30 days (the events API reads them back, decisions §12), of
 *   payments no longer pending, once no delivery references them (a pending delivery keeps its event, whatever its
 *   age); the payment itself is never deleted;
 * - audit entries older than `KASSA_RETENTION_AUDIT` (2 years);
 * - expired dashboard sessions, and idempotency keys past their 24 hours (this is the one place they are deleted;
 *   a key reused after its 24 hours is taken over by the store before then).
 *
 * Each batch is one short statement over at most 1,000 rows picked from an index (`0007_retention`) with
 * `FOR UPDATE SKIP LOCKED`: a row a request holds is skipped, never waited for, and several server processes share
 * the work. Between batches the fiber pauses as long as the batch took (at least 100 ms), so pruning uses at most
 * about half of one connection and never monopolises the database. A failed round is logged; the next runs as usual.
 */
import { EventsApi, IdempotencyDecision } from "@kassa/core"
import { Context, DateTime, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Columns from "../database/Columns.ts"

export interface RetentionOptions {
  /** Time between two rounds. */
  readonly interval: Duration.Duration
  /** Rows per batch (per transaction). */
  readonly batchSize: number
  /** Shortest pause between two batches; the pause is never shorter than the batch before it took. */
  readonly pause: Duration.Duration
}

/**
 * How long events are kept: `KASSA_RETENTION_DELIVERIES`, lengthened to the events API's 30 days when shorter
 * ("off" keeps them forever).
 */
export const eventsWindow = (deliveries: Option.Option<Duration.Duration>): Option.Option<Duration.Duration> =>
  Option.map(deliveries, (window) => Duration.max(window, Duration.days(EventsApi.minimumRetentionDays)))

export const defaults: RetentionOptions = {
  interval: Duration.minutes(5),
  batchSize: 1000,
  pause: Duration.millis(100)
}

/**
 * The statements of one batch each, as run (exported so test/QueryPlans.test.ts and bench/retention.ts explain
 * exactly these). Each answers one row: `n` deleted ({@link CountRow}), and `attempts` for deliveries
 * ({@link DeliveriesCountRow}).
 */
// The deletes take their keys as an array (`= ANY (ARRAY(…))`), which reads the primary key whatever the planner
// thinks of the batch's size; `IN (SELECT …)` was planned as a hash join over the whole table on small statistics.
export const statements = (sql: SqlClient.SqlClient, limit: number) => ({
  // Both deletes in one statement: the foreign key is checked at its end, when the attempts are gone.
  deliveries: (cutoff: Date) =>
    sql`
      WITH batch AS (
        SELECT id FROM deliveries
        WHERE status IN ('succeeded', 'failed') AND updated_at < ${cutoff}
        ORDER BY updated_at LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ),
      gone_attempts AS (DELETE FROM delivery_attempts WHERE delivery_id = ANY (ARRAY(SELECT id FROM batch)) RETURNING 1),
      gone AS (DELETE FROM deliveries WHERE id = ANY (ARRAY(SELECT id FROM batch)) RETURNING 1)
      SELECT (SELECT count(*) FROM gone)::int AS n, (SELECT count(*) FROM gone_attempts)::int AS attempts
    `,
  // A payment's events are its history, not its state: the payment row answers the API without them.
  // `OFFSET 0` keeps each check a probe of one index per event read: as a join, PostgreSQL planned a hash anti-join
  // over the whole deliveries table (887 MB at 1,000,000 payments) for every batch.
  events: (cutoff: Date) =>
    sql`
      WITH batch AS (
        SELECT e.id FROM events e
        WHERE e.created_at < ${cutoff}
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id OFFSET 0)
          AND EXISTS (SELECT 1 FROM payments p WHERE p.id = e.payment_id AND p.status <> 'pending' OFFSET 0)
        ORDER BY e.created_at LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ),
      gone AS (DELETE FROM events WHERE id = ANY (ARRAY(SELECT id FROM batch)) RETURNING 1)
      SELECT count(*)::int AS n FROM gone
    `,
  audit: (cutoff: Date) =>
    sql`
      WITH gone AS (
        DELETE FROM audit_log WHERE id = ANY (ARRAY(
          SELECT id FROM audit_log WHERE at < ${cutoff} ORDER BY at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )) RETURNING 1
      )
      SELECT count(*)::int AS n FROM gone
    `,
  sessions: (cutoff: Date) =>
    sql`
      WITH gone AS (
        DELETE FROM sessions WHERE token_hash = ANY (ARRAY(
          SELECT token_hash FROM sessions WHERE expires_at < ${cutoff}
          ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )) RETURNING 1
      )
      SELECT count(*)::int AS n FROM gone
    `,
  idempotencyKeys: (cutoff: Date) =>
    sql`
      WITH gone AS (
        DELETE FROM idempotency_keys WHERE (application_id, mode, key) IN (
          SELECT application_id, mode, key FROM idempotency_keys WHERE created_at <= ${cutoff}
          ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      )
      SELECT count(*)::int AS n FROM gone
    `
})

/** What a batch answers: the rows it deleted. */
export const CountRow = Schema.Struct({ n: Columns.Integer })

/** What a batch of deliveries answers: the deliveries it deleted, and their attempts. */
export const DeliveriesCountRow = Schema.Struct({ n: Columns.Integer, attempts: Columns.Integer })

/** Rows deleted by one round, by kind. */
export interface PruneResult {
  readonly attempts: number
  readonly deliveries: number
  readonly events: number
  readonly audit: number
  readonly sessions: number
  readonly idempotencyKeys: number
}

export class Retention extends Context.Service<
  Retention,
  {
    /** One round as of `now`: every kind, batch after batch, until no batch is full. */
    readonly prune: (now: DateTime.Utc) => Effect.Effect<PruneResult>
  }
>()("@kassa/server/retention/Retention") {
  static readonly layerWith = (options: RetentionOptions) =>
    Layer.effect(
      Retention,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const config = yield* ServerConfig
        const limit = options.batchSize
        const before = (now: DateTime.Utc, window: Duration.Duration) =>
          DateTime.toDateUtc(DateTime.subtractDuration(now, window))

        const batches = statements(sql, limit)
        // Each statement answers exactly one row; none would be a broken statement, read as nothing deleted.
        const rowsOf = (statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
          Columns.first(CountRow)(statement).pipe(
            Effect.map(Option.match({ onNone: () => ({ rows: 0 }), onSome: (row) => ({ rows: row.n }) }))
          )
        const deliveriesBatch = (cutoff: Date) =>
          Columns.first(DeliveriesCountRow)(batches.deliveries(cutoff)).pipe(
            Effect.map(
              Option.match({
                onNone: () => ({ rows: 0, attempts: 0 }),
                onSome: (row) => ({ rows: row.n, attempts: row.attempts })
              })
            )
          )
        const eventsBatch = (cutoff: Date) => rowsOf(batches.events(cutoff))
        const auditBatch = (cutoff: Date) => rowsOf(batches.audit(cutoff))
        const sessionsBatch = (cutoff: Date) => rowsOf(batches.sessions(cutoff))
        const idempotencyBatch = (cutoff: Date) => rowsOf(batches.idempotencyKeys(cutoff))

        /** Batches until one is not full, pausing between them; the rows (and attempts) deleted. */
        const drain = <E>(batch: Effect.Effect<{ readonly rows: number; readonly attempts?: number }, E>) =>
          Effect.gen(function* () {
            let rows = 0
            let attempts = 0
            while (true) {
              const [took, done] = yield* Effect.timed(batch)
              rows += done.rows
              attempts += done.attempts ?? 0
              if (done.rows < limit) return { rows, attempts }
              yield* Effect.sleep(Duration.max(options.pause, took))
            }
          })

        const windowed = <E>(
          window: Option.Option<Duration.Duration>,
          now: DateTime.Utc,
          batch: (cutoff: Date) => Effect.Effect<{ readonly rows: number; readonly attempts?: number }, E>
        ) =>
          Option.match(window, {
            onNone: () => Effect.succeed({ rows: 0, attempts: 0 }),
            onSome: (duration) => drain(batch(before(now, duration)))
          })

        const prune = Effect.fn("Retention.prune")(function* (now: DateTime.Utc) {
          // Deliveries first: an event is pruned only once no delivery references it.
          const deliveries = yield* windowed(config.retentionDeliveries, now, deliveriesBatch)
          const events = yield* windowed(eventsWindow(config.retentionDeliveries), now, eventsBatch)
          const audit = yield* windowed(config.retentionAudit, now, auditBatch)
          const sessions = yield* drain(sessionsBatch(DateTime.toDateUtc(now)))
          const idempotencyKeys = yield* drain(idempotencyBatch(before(now, IdempotencyDecision.retention)))
          return {
            attempts: deliveries.attempts,
            deliveries: deliveries.rows,
            events: events.rows,
            audit: audit.rows,
            sessions: sessions.rows,
            idempotencyKeys: idempotencyKeys.rows
          }
        }, Effect.orDie)

        yield* Effect.gen(function* () {
          const result = yield* prune(yield* DateTime.now)
          const total = Object.values(result).reduce((sum, n) => sum + n, 0)
          if (total > 0) yield* Effect.logInfo("Retention pruned old rows").pipe(Effect.annotateLogs(result))
        }).pipe(
          Effect.catchCause((cause) => Effect.logError("Retention round failed", cause)),
          Effect.repeat(Schedule.spaced(options.interval)),
          // The first round waits one interval: a start is busy enough, and a restart loop never prunes twice.
          Effect.delay(options.interval),
          Effect.forkScoped
        )

        return Retention.of({ prune })
      })
    )

  static readonly layer = Retention.layerWith(defaults)
}
