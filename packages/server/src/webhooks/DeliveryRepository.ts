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
import { Delivery, Ids, type Mode, type WebhookEvent } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { WebhookSecrets } from "../applications/ApplicationRepository.ts"
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
export type AttemptKind = "scheduled" | "manual"

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

type Row = Record<string, unknown>

const toDate = (time: DateTime.Utc) => DateTime.toDateUtc(time)
const iso = (time: DateTime.Utc | null) => (time === null ? null : DateTime.formatIso(time))
/** A timestamp as a column (a Date) or inside a JSON aggregate (ISO 8601 text with an offset). */
const utc = (value: unknown): DateTime.Utc => DateTime.makeUnsafe(value as Date | string)
const utcOrNull = (value: unknown) => (value === null || value === undefined ? null : utc(value))
const textOrNull = (value: unknown) => (value === null || value === undefined ? null : String(value))

const attemptView = (row: Row): AttemptView => ({
  number: Number(row.number),
  kind: row.kind as AttemptKind,
  started_at: utc(row.started_at),
  url: textOrNull(row.url),
  response_status: row.response_status === null ? null : Number(row.response_status),
  error: textOrNull(row.error),
  duration_ms: Number(row.duration_ms),
  response_body: textOrNull(row.response_body)
})

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
        const now = toDate(options.now)
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
        const rows = yield* sql`
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
          SET lease_until = ${toDate(options.leaseUntil)}, lease_owner = ${options.owner}, claim_token = ${token}
          FROM due, events e
          WHERE d.id = due.id AND e.id = d.event_id
          RETURNING d.id, d.application_id, d.attempt_count, d.first_attempt_at, e.id AS event_id, e.event, e.body
        `
        return rows.map(
          (row): ClaimedDelivery => ({
            id: Ids.DeliveryId.make(String(row.id)),
            applicationId: Ids.ApplicationId.make(String(row.application_id)),
            eventId: String(row.event_id),
            event: String(row.event),
            body: String(row.body),
            attemptCount: Number(row.attempt_count),
            firstAttemptAt: utcOrNull(row.first_attempt_at),
            claimToken: token
          })
        )
      }, Effect.orDie)

      const targets = Effect.fn("DeliveryRepository.targets")(function* (applicationIds: ReadonlyArray<string>) {
        const rows = yield* sql`
          SELECT id, webhook_url, webhook_secret_encrypted, previous_webhook_secret_encrypted, webhook_secret_rotated_at
          FROM applications WHERE id = ANY(${[...applicationIds]}::uuid[])
        `
        const found = new Map<string, Target>()
        for (const row of rows) {
          const previous =
            row.previous_webhook_secret_encrypted === null || row.webhook_secret_rotated_at === null
              ? null
              : {
                  secret: openSecret(String(row.previous_webhook_secret_encrypted)),
                  rotatedAt: utc(row.webhook_secret_rotated_at)
                }
          found.set(String(row.id), {
            url: textOrNull(row.webhook_url),
            secrets: { current: openSecret(String(row.webhook_secret_encrypted)), previous }
          })
        }
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
                    updated_at = ${toDate(attempt.startedAt)}
                  WHERE id = ${id} AND status <> 'succeeded'
                `
              }
            })
          )
          .pipe(Effect.orDie)
      })

      const find = (id: Ids.DeliveryId) =>
        sql`
          SELECT d.id, d.application_id, e.event, e.body
          FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ${id}
        `.pipe(
          Effect.map((rows) =>
            Option.map(
              Option.fromNullishOr(rows[0]),
              (row): StoredDelivery => ({
                id,
                applicationId: Ids.ApplicationId.make(String(row.application_id)),
                event: String(row.event),
                body: String(row.body)
              })
            )
          ),
          Effect.orDie
        )

      /** A delivery row with its attempts (read by the same statement, see selectViews). */
      const toView = (row: Row): DeliveryView => ({
        id: Ids.DeliveryId.make(String(row.id)),
        event_id: Ids.EventId.make(String(row.event_id)),
        event: row.event as WebhookEvent.EventName,
        payment_id: Ids.PaymentId.make(String(row.payment_id)),
        mode: row.mode as Mode.Mode,
        status: row.status as DeliveryStatus,
        next_attempt_at: utcOrNull(row.next_attempt_at),
        created_at: utc(row.created_at),
        attempts: (row.attempts as ReadonlyArray<Row>).map(attemptView)
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
        sql`${selectViews} WHERE d.id = ${id}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toView)),
          Effect.orDie
        )

      const list = Effect.fn("DeliveryRepository.list")(function* (applicationId: Ids.ApplicationId, query: ListQuery) {
        let cursor = sql``
        if (query.startingAfter !== undefined) {
          const [after] = yield* sql`
            SELECT created_at, id FROM deliveries WHERE id = ${query.startingAfter} AND application_id = ${applicationId}
          `
          if (after === undefined) return Option.none<DeliveryPage>()
          cursor = sql`AND (d.created_at, d.id) < (${after.created_at as Date}, ${String(after.id)}::uuid)`
        }
        const filters = [
          query.status === undefined ? sql`` : sql`AND d.status = ${query.status}`,
          query.event === undefined ? sql`` : sql`AND e.event = ${query.event}`,
          query.paymentId === undefined ? sql`` : sql`AND e.payment_id = ${query.paymentId}`,
          // deliveries.mode (0004): the filter walks deliveries_application_mode, not every event.
          query.mode === undefined ? sql`` : sql`AND d.mode = ${query.mode}`
        ]
        const rows = yield* sql`
          ${selectViews}
          WHERE d.application_id = ${applicationId} ${filters[0]} ${filters[1]} ${filters[2]} ${filters[3]} ${cursor}
          ORDER BY d.created_at DESC, d.id DESC
          LIMIT ${query.limit + 1}
        `
        const data = rows.slice(0, query.limit).map(toView)
        return Option.some<DeliveryPage>({ data, has_more: rows.length > query.limit })
      }, Effect.orDie)

      // Walks only the due part of deliveries_due (pending, next_attempt_at <= now): a scrape costs in proportion
      // to the backlog, not to the table.
      const backlog = sql<{ readonly due: string | number; readonly overdue: string | number }>`
        SELECT count(*) AS due,
          count(*) FILTER (WHERE next_attempt_at <= now() - make_interval(secs => ${overdueAfterSeconds})) AS overdue
        FROM deliveries
        WHERE status = 'pending' AND next_attempt_at <= now()
      `.pipe(
        Effect.map(([row]) => ({ due: Number(row?.due ?? 0), overdue: Number(row?.overdue ?? 0) })),
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
