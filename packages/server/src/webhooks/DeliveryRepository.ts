/**
 * Deliveries and their attempts in PostgreSQL, for the dispatcher and the operator API.
 *
 * - Claiming takes due rows with `FOR UPDATE SKIP LOCKED` in one statement and stamps them with a lease (until,
 *   owner, token): processes never wait on each other, and no transaction stays open while a receiver is called.
 *   A lease is taken over once it runs out, or at once when its owner process is gone (PostgreSQL: the owner holds
 *   a session advisory lock for as long as it lives; a killed process loses it with its connection).
 * - Results are written in batches, one transaction each. A delivery's schedule is updated only by the holder of its
 *   current claim (token compare-and-set); every attempt is recorded, numbered in order under the delivery's row lock.
 */
import { Delivery, Ids, Mode, WebhookEvent } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { openSecrets, SealedSecretsRow, type WebhookSecrets } from "../applications/ApplicationRepository.ts"
import * as Columns from "../database/Columns.ts"
import * as SecretBox from "../security/SecretBox.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

/** `classid` of the dispatchers' advisory locks (`objid` is the owner). "KASS" in ASCII. */
export const ownerLockClass = 0x4b415353

/** A due delivery not attempted within this many seconds counts as overdue: the engine is behind. */
export const overdueAfterSeconds = 60

export interface Backlog {
  readonly due: number
  readonly overdue: number
}

export const DeliveryStatus = Delivery.DeliveryStatus
export type DeliveryStatus = Delivery.DeliveryStatus
export const AttemptKind = Schema.Literals(["scheduled", "manual"])
export type AttemptKind = typeof AttemptKind.Type

/** A delivery claimed for one attempt. */
export interface ClaimedDelivery {
  readonly id: Ids.DeliveryId
  readonly applicationId: Ids.ApplicationId
  readonly eventId: string
  readonly event: string
  readonly body: string
  /** Scheduled attempts made so far. */
  readonly attemptCount: number
  readonly firstAttemptAt: DateTime.Utc | null
  readonly claimToken: string
}

/** Where and how an application's attempts go, read for the attempt. */
export interface Target {
  readonly url: string | null
  readonly secrets: WebhookSecrets
}

export interface AttemptRecord {
  readonly kind: AttemptKind
  readonly startedAt: DateTime.Utc
  readonly url: string | null
  readonly responseStatus: number | null
  readonly error: string | null
  readonly durationMs: number
  readonly responseBody: string | null
}

/** What a scheduled attempt (or a give-up without one) leaves behind. */
export interface ScheduledResult {
  readonly id: Ids.DeliveryId
  readonly claimToken: string
  /** None when the delivery was past its 24 h when it came due: failed without an attempt. */
  readonly attempt: AttemptRecord | null
  readonly status: DeliveryStatus
  readonly attemptCount: number
  readonly nextAttemptAt: DateTime.Utc | null
  readonly firstAttemptAt: DateTime.Utc | null
  readonly at: DateTime.Utc
}

export interface ClaimOptions {
  readonly now: DateTime.Utc
  readonly limit: number
  /** First attempts, retries, or both. */
  readonly lane: "first" | "retry" | "all"
  /** Applications whose receivers are busy in this process. */
  readonly exclude: ReadonlyArray<string>
  readonly owner: number
  readonly leaseUntil: DateTime.Utc
  /** PostgreSQL: also take over leases whose owner process is gone. */
  readonly checkOwners: boolean
}

/** The wire form of an attempt (decisions §8). */
export interface AttemptView {
  readonly number: number
  readonly kind: AttemptKind
  readonly started_at: DateTime.Utc
  readonly url: string | null
  readonly response_status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
}

/** The wire form of a delivery (decisions §8). */
export interface DeliveryView {
  readonly id: Ids.DeliveryId
  readonly event_id: Ids.EventId
  readonly event: WebhookEvent.EventName
  readonly payment_id: Ids.PaymentId
  readonly mode: Mode.Mode
  readonly status: DeliveryStatus
  readonly next_attempt_at: DateTime.Utc | null
  readonly created_at: DateTime.Utc
  readonly attempts: ReadonlyArray<AttemptView>
}

export interface ListQuery {
  readonly limit: number
  readonly startingAfter?: Ids.DeliveryId | undefined
  readonly status?: DeliveryStatus | undefined
  readonly event?: WebhookEvent.EventName | undefined
  readonly paymentId?: Ids.PaymentId | undefined
  readonly mode?: Mode.Mode | undefined
}

export interface DeliveryPage {
  readonly data: ReadonlyArray<DeliveryView>
  readonly has_more: boolean
}

/** A delivery as the resend path needs it. */
export interface StoredDelivery {
  readonly id: Ids.DeliveryId
  readonly applicationId: Ids.ApplicationId
  readonly event: string
  readonly body: string
}

const iso = (time: DateTime.Utc | null) => (time === null ? null : DateTime.formatIso(time))

/** A row of `delivery_attempts`, as a column set or inside `json_agg` (timestamps as text there). */
const AttemptRow = Schema.Struct({
  number: Columns.Integer,
  kind: AttemptKind,
  started_at: Columns.Timestamp,
  url: Schema.NullOr(Schema.String),
  response_status: Columns.NullableInteger,
  error: Schema.NullOr(Schema.String),
  duration_ms: Columns.Integer,
  response_body: Schema.NullOr(Schema.String)
})

/** A delivery with its event and its attempts, read by one statement (see `selectViews`). */
const ViewRow = Schema.Struct({
  id: Ids.DeliveryId,
  event_id: Ids.EventId,
  event: WebhookEvent.EventName,
  payment_id: Ids.PaymentId,
  mode: Mode.Mode,
  status: Delivery.DeliveryStatus,
  next_attempt_at: Columns.NullableTimestamp,
  created_at: Columns.Timestamp,
  attempts: Columns.Json(Schema.Array(AttemptRow))
})

/** A claimed row of `deliveries` with its event. */
const ClaimedRow = Schema.Struct({
  id: Ids.DeliveryId,
  application_id: Ids.ApplicationId,
  attempt_count: Columns.Integer,
  first_attempt_at: Columns.NullableTimestamp,
  event_id: Schema.String,
  event: Schema.String,
  body: Schema.String
})

/** Where an application's attempts go: its URL and sealed secrets. */
const TargetRow = Schema.Struct({
  id: Ids.ApplicationId,
  webhook_url: Schema.NullOr(Schema.String),
  ...SealedSecretsRow.fields
})

const StoredRow = Schema.Struct({ application_id: Ids.ApplicationId, event: Schema.String, body: Schema.String })

/** Where a page of deliveries starts after. */
const CursorRow = Schema.Struct({ created_at: Columns.Timestamp, id: Ids.DeliveryId })

const BacklogRow = Schema.Struct({ due: Columns.Integer, overdue: Columns.Integer })

const attemptView = ({ started_at, ...attempt }: typeof AttemptRow.Type): AttemptView => ({ ...attempt, started_at })

const attemptJson = (id: string, ord: number, attempt: AttemptRecord) => ({
  delivery_id: id,
  ord,
  kind: attempt.kind,
  started_at: DateTime.formatIso(attempt.startedAt),
  url: attempt.url,
  response_status: attempt.responseStatus,
  error: attempt.error,
  duration_ms: attempt.durationMs,
  response_body: attempt.responseBody
})

export class DeliveryRepository extends Context.Service<
  DeliveryRepository,
  {
    readonly claim: (options: ClaimOptions) => Effect.Effect<ReadonlyArray<ClaimedDelivery>>
    /** URL and signing secrets of each application, as stored now. */
    readonly targets: (applicationIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Target>>
    /** Writes a batch of scheduled results in one transaction. */
    readonly complete: (results: ReadonlyArray<ScheduledResult>) => Effect.Effect<void>
    /** Gives claimed deliveries back untouched, due as before. */
    readonly release: (ids: ReadonlyArray<string>, claimToken: string) => Effect.Effect<void>
    /** Gives back every lease of an owner (a clean shutdown). */
    readonly releaseOwner: (owner: number) => Effect.Effect<void>
    /** Drops every lease (the embedded database: the only process that can open it is starting). */
    readonly releaseAll: Effect.Effect<void>
    /** Records a manual attempt; a success ends the delivery as `succeeded`, a failure changes nothing else. */
    readonly recordManual: (id: Ids.DeliveryId, attempt: AttemptRecord, succeeded: boolean) => Effect.Effect<void>
    readonly find: (id: Ids.DeliveryId) => Effect.Effect<Option.Option<StoredDelivery>>
    readonly view: (id: Ids.DeliveryId) => Effect.Effect<Option.Option<DeliveryView>>
    /** Newest first; `None` when `startingAfter` names no delivery of the application. */
    readonly list: (applicationId: Ids.ApplicationId, query: ListQuery) => Effect.Effect<Option.Option<DeliveryPage>>
    /** Pending deliveries due now, and those due for over {@link overdueAfterSeconds} (the metrics' backlog). */
    readonly backlog: Effect.Effect<Backlog, SqlError.SqlError>
  }
>()("@kassa/server/webhooks/DeliveryRepository") {
  static readonly layer = Layer.effect(
    DeliveryRepository,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { encryptionKey } = yield* ServerSecrets

      // Opening a sealed secret is an AES-GCM decryption; the same ciphertext always opens to the same secret.
      const opened = new Map<string, string>()
      const openSecret = (sealed: string) => {
        const known = opened.get(sealed)
        if (known !== undefined) return known
        if (opened.size > 10_000) opened.clear()
        const secret = SecretBox.open(encryptionKey, sealed)
        opened.set(sealed, secret)
        return secret
      }

      const claim = Effect.fn("DeliveryRepository.claim")(function* (options: ClaimOptions) {
        const now = Columns.toDate(options.now)
        const lane =
          options.lane === "first"
            ? sql`AND d.attempt_count = 0`
            : options.lane === "retry"
              ? sql`AND d.attempt_count > 0`
              : sql``
        const deadOwner = options.checkOwners
          ? sql`OR d.lease_owner NOT IN (
              SELECT l.objid::bigint FROM pg_locks l
              WHERE l.locktype = 'advisory' AND l.classid = ${ownerLockClass}::oid AND l.objsubid = 2 AND l.granted
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`
          : sql``
        const token = crypto.randomUUID()
        const rows = yield* Columns.all(ClaimedRow)(sql`
          WITH due AS (
            SELECT d.id FROM deliveries d
            WHERE d.status = 'pending' AND d.next_attempt_at <= ${now} ${lane}
              AND NOT (d.application_id = ANY(${[...options.exclude]}::uuid[]))
              AND (d.lease_until IS NULL OR d.lease_until < ${now} ${deadOwner})
            ORDER BY d.next_attempt_at
            LIMIT ${options.limit}
            FOR UPDATE OF d SKIP LOCKED
          )
          UPDATE deliveries d
          SET lease_until = ${Columns.toDate(options.leaseUntil)}, lease_owner = ${options.owner}, claim_token = ${token}
          FROM due, events e
          WHERE d.id = due.id AND e.id = d.event_id
          RETURNING d.id, d.application_id, d.attempt_count, d.first_attempt_at, e.id AS event_id, e.event, e.body
        `)
        return rows.map(
          (row): ClaimedDelivery => ({
            id: row.id,
            applicationId: row.application_id,
            eventId: row.event_id,
            event: row.event,
            body: row.body,
            attemptCount: row.attempt_count,
            firstAttemptAt: row.first_attempt_at,
            claimToken: token
          })
        )
      }, Effect.orDie)

      const targets = Effect.fn("DeliveryRepository.targets")(function* (applicationIds: ReadonlyArray<string>) {
        const rows = yield* Columns.all(TargetRow)(sql`
          SELECT id, webhook_url, webhook_secret_encrypted, previous_webhook_secret_encrypted, webhook_secret_rotated_at
          FROM applications WHERE id = ANY(${[...applicationIds]}::uuid[])
        `)
        const found = new Map<string, Target>()
        for (const row of rows) found.set(row.id, { url: row.webhook_url, secrets: openSecrets(row, openSecret) })
        return found as ReadonlyMap<string, Target>
      }, Effect.orDie)

      const complete = Effect.fn("DeliveryRepository.complete")(function* (results: ReadonlyArray<ScheduledResult>) {
        if (results.length === 0) return
        const ids = results.map((result) => result.id)
        const updates = JSON.stringify(
          results.map((result) => ({
            id: result.id,
            token: result.claimToken,
            status: result.status,
            attempt_count: result.attemptCount,
            next_attempt_at: iso(result.nextAttemptAt),
            first_attempt_at: iso(result.firstAttemptAt),
            updated_at: DateTime.formatIso(result.at)
          }))
        )
        const attempts = results.flatMap((result, ord) =>
          result.attempt === null ? [] : [attemptJson(result.id, ord, result.attempt)]
        )
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              // Row locks in id order: attempt numbers are taken under them, and two writers never deadlock.
              yield* sql`SELECT id FROM deliveries WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`
              // Only the current claim moves the schedule; a success (also a manual one) is never undone.
              yield* sql`
                UPDATE deliveries d
                SET status = CASE WHEN d.status = 'succeeded' THEN d.status ELSE r.status END,
                    attempt_count = r.attempt_count,
                    next_attempt_at = CASE WHEN d.status = 'succeeded' THEN NULL ELSE r.next_attempt_at END,
                    first_attempt_at = coalesce(d.first_attempt_at, r.first_attempt_at),
                    lease_until = NULL, lease_owner = NULL, claim_token = NULL, updated_at = r.updated_at
                FROM jsonb_to_recordset(${updates}::jsonb) AS r(id uuid, token uuid, status text, attempt_count int,
                  next_attempt_at timestamptz, first_attempt_at timestamptz, updated_at timestamptz)
                WHERE d.id = r.id AND d.claim_token = r.token
              `
              if (attempts.length > 0) yield* insertAttempts(JSON.stringify(attempts))
            })
          )
          .pipe(Effect.orDie)
      })

      const insertAttempts = (json: string) => sql`
        INSERT INTO delivery_attempts
          (delivery_id, number, kind, started_at, url, response_status, error, duration_ms, response_body)
        SELECT r.delivery_id,
          coalesce((SELECT max(a.number) FROM delivery_attempts a WHERE a.delivery_id = r.delivery_id), 0)
            + row_number() OVER (PARTITION BY r.delivery_id ORDER BY r.started_at, r.ord),
          r.kind, r.started_at, r.url, r.response_status, r.error, r.duration_ms, r.response_body
        FROM jsonb_to_recordset(${json}::jsonb) AS r(delivery_id uuid, ord int, kind text, started_at timestamptz,
          url text, response_status int, error text, duration_ms int, response_body text)
      `

      const release = (ids: ReadonlyArray<string>, claimToken: string) =>
        ids.length === 0
          ? Effect.void
          : sql`
              UPDATE deliveries SET lease_until = NULL, lease_owner = NULL, claim_token = NULL
              WHERE id = ANY(${[...ids]}::uuid[]) AND claim_token = ${claimToken}
            `.pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("DeliveryRepository.release"))

      const releaseOwner = (owner: number) =>
        sql`
          UPDATE deliveries SET lease_until = NULL, lease_owner = NULL, claim_token = NULL
          WHERE lease_owner = ${owner} AND status = 'pending'
        `.pipe(Effect.asVoid, Effect.orDie)

      const releaseAll = sql`
        UPDATE deliveries SET lease_until = NULL, lease_owner = NULL, claim_token = NULL
        WHERE lease_until IS NOT NULL
      `.pipe(Effect.asVoid, Effect.orDie)

      const recordManual = Effect.fn("DeliveryRepository.recordManual")(function* (
        id: Ids.DeliveryId,
        attempt: AttemptRecord,
        succeeded: boolean
      ) {
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql`SELECT id FROM deliveries WHERE id = ${id} FOR UPDATE`
              yield* insertAttempts(JSON.stringify([attemptJson(id, 0, attempt)]))
              if (succeeded) {
                yield* sql`
                  UPDATE deliveries SET status = 'succeeded', next_attempt_at = NULL,
                    updated_at = ${Columns.toDate(attempt.startedAt)}
                  WHERE id = ${id} AND status <> 'succeeded'
                `
              }
            })
          )
          .pipe(Effect.orDie)
      })

      const findRow = SqlSchema.findOneOption({
        Request: Ids.DeliveryId,
        Result: StoredRow,
        execute: (id) => sql`
          SELECT d.application_id, e.event, e.body
          FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ${id}
        `
      })
      const find = (id: Ids.DeliveryId) =>
        findRow(id).pipe(
          Effect.map(
            Option.map(
              (row): StoredDelivery => ({ id, applicationId: row.application_id, event: row.event, body: row.body })
            )
          ),
          Effect.orDie
        )

      const toView = ({ attempts, ...delivery }: typeof ViewRow.Type): DeliveryView => ({
        ...delivery,
        attempts: attempts.map(attemptView)
      })

      // One statement, so one snapshot: a delivery's status and its attempts always agree. Read by two statements, a
      // manual success committing between them showed its attempt beside the status from before it.
      const selectViews = sql`
        SELECT d.id, d.event_id, e.event, e.payment_id, d.mode, d.status, d.next_attempt_at, d.created_at,
          coalesce(
            (SELECT json_agg(a ORDER BY a.number) FROM delivery_attempts a WHERE a.delivery_id = d.id), '[]'::json
          ) AS attempts
        FROM deliveries d JOIN events e ON e.id = d.event_id
      `

      const view = (id: Ids.DeliveryId) =>
        Columns.first(ViewRow)(sql`${selectViews} WHERE d.id = ${id}`).pipe(
          Effect.map(Option.map(toView)),
          Effect.orDie
        )

      const list = Effect.fn("DeliveryRepository.list")(function* (applicationId: Ids.ApplicationId, query: ListQuery) {
        let cursor = sql``
        if (query.startingAfter !== undefined) {
          const after = yield* Columns.first(CursorRow)(sql`
            SELECT created_at, id FROM deliveries WHERE id = ${query.startingAfter} AND application_id = ${applicationId}
          `)
          if (Option.isNone(after)) return Option.none<DeliveryPage>()
          // The cursor's time is read in the statement itself, at the column's precision (microseconds): sent back
          // from JavaScript it would be rounded to milliseconds, and a page would skip what shares its millisecond.
          cursor = sql`AND (d.created_at, d.id) < ((SELECT created_at FROM deliveries WHERE id = ${after.value.id}::uuid), ${after.value.id}::uuid)`
        }
        const filters = [
          query.status === undefined ? sql`` : sql`AND d.status = ${query.status}`,
          query.event === undefined ? sql`` : sql`AND e.event = ${query.event}`,
          query.paymentId === undefined ? sql`` : sql`AND e.payment_id = ${query.paymentId}`,
          // deliveries.mode (0004): the filter walks deliveries_application_mode, not every event.
          query.mode === undefined ? sql`` : sql`AND d.mode = ${query.mode}`
        ]
        const rows = yield* Columns.all(ViewRow)(sql`
          ${selectViews}
          WHERE d.application_id = ${applicationId} ${filters[0]} ${filters[1]} ${filters[2]} ${filters[3]} ${cursor}
          ORDER BY d.created_at DESC, d.id DESC
          LIMIT ${query.limit + 1}
        `)
        const data = rows.slice(0, query.limit).map(toView)
        return Option.some<DeliveryPage>({ data, has_more: rows.length > query.limit })
      }, Effect.orDie)

      // Walks only the due part of deliveries_due (pending, next_attempt_at <= now): a scrape costs in proportion
      // to the backlog, not to the table.
      const backlog = Columns.first(BacklogRow)(sql`
        SELECT count(*) AS due,
          count(*) FILTER (WHERE next_attempt_at <= now() - make_interval(secs => ${overdueAfterSeconds})) AS overdue
        FROM deliveries
        WHERE status = 'pending' AND next_attempt_at <= now()
      `).pipe(
        // The caller keeps the last figures when the database does not answer; a count that does not decode is a bug.
        Effect.catchTag("SchemaError", Effect.die),
        Effect.map(Option.getOrElse(() => ({ due: 0, overdue: 0 }))),
        Effect.withSpan("DeliveryRepository.backlog")
      )

      return DeliveryRepository.of({
        backlog,
        claim,
        targets,
        complete,
        release,
        releaseOwner,
        releaseAll,
        recordManual,
        find,
        view,
        list
      })
    })
  )
}
