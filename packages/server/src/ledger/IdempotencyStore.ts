/**
 * `Idempotency-Key` for create and refund (decisions §4), over the `idempotency_keys` table and the pure decision
 * table in @kassa/core (`IdempotencyDecision`).
 *
 * One transaction does it all: claim the key, run the work, store the answer, commit (except work that calls a
 * payment provider, below). A request that dies before
 * the commit leaves nothing behind — no record, no payment — so its retry starts afresh at once instead of waiting
 * out a stale lock, and since the payment and the stored answer commit together a second payment is impossible:
 * any later request either sees the committed record (and replays it) or, while the first still runs, cannot get
 * the key's lock.
 *
 * "Still running" is a transaction-scoped advisory lock on the key (`pg_try_advisory_xact_lock`): it is held exactly
 * as long as the claiming transaction, released by PostgreSQL when that transaction ends or its connection drops (a
 * killed process), and trying it never waits, so a concurrent request answers 409
 * `idempotency_request_in_progress` at once. A committed record without an answer (a lock in `locked_at`) can only
 * come from elsewhere (a future two-phase caller, or an operator); the decision table still treats it as in
 * progress for 60 s and then lets a retry take over, and the work then looks for what the dead request made
 * (`Claim.takeover`) before doing anything.
 *
 * Work that calls a payment provider (a live create) must not hold the key's transaction open across the call, nor
 * lose what it made if the process dies after the call: it asks (`Claim.commitFirst`) for what it wrote so far — the
 * `pending` payment — to commit with the record still locked and without an answer, and is then run once more outside
 * any transaction with `takeover`, so it finds that payment and finishes it. A retry while that runs is answered 409
 * in progress; once the process has died, 60 s after the lock, the retry takes over and finishes it the same way.
 */
import { ApiError, IdempotencyDecision, IdempotencyKey, Ids, Mode } from "@kassa/core"
import { Context, Data, DateTime, Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import type { Scope } from "./PaymentRepository.ts"

/** A final HTTP answer of an idempotent endpoint, as stored and replayed. */
export interface Answer {
  readonly status: number
  /** The exact JSON body text. */
  readonly body: string
  /** Headers that belong to the answer (`Location` of a 201). */
  readonly headers: Readonly<Record<string, string>>
  /** `error.code` of an error answer. */
  readonly code?: string | undefined
}

/** The answer for a contract error. */
export const errorAnswer = (error: ApiError.ApiError, headers: Readonly<Record<string, string>> = {}): Answer => ({
  status: ApiError.statusOf(error),
  body: JSON.stringify(ApiError.toWire(error)),
  headers,
  code: ApiError.catalogue[error._tag].code
})

/** What the work learns about the key it runs under. */
export interface Claim {
  readonly key: string
  /** The record's first use: what was made under the key since then belongs to this record. */
  readonly since: DateTime.Utc
  /** The key was left without an answer by a request that died: its work may already be done. */
  readonly takeover: boolean
  /**
   * Inside the key's transaction: commit what the work wrote so far with the key still locked and no answer, discard
   * this run's answer, and run the work again after the commit, outside any transaction, with `takeover` (it finds
   * what it wrote). `null` in that second run: the work is no longer inside a transaction.
   */
  readonly commitFirst: Effect.Effect<void> | null
}

export interface IdempotentRequest {
  readonly scope: Scope
  readonly key: IdempotencyKey.IdempotencyKey
  readonly method: string
  /** The request path without query, e.g. `/api/v1/payments`. */
  readonly path: string
  /** `RequestFingerprint` of the body. */
  readonly fingerprint: string
}

export interface Outcome {
  readonly answer: Answer
  /** The answer is a stored one (send `Idempotent-Replayed: true`). */
  readonly replayed: boolean
}

// An answer that must not be remembered: the claim is rolled back with everything else.
class Unstored extends Data.TaggedError("Unstored")<{ readonly answer: Answer }> {}

const inProgress = errorAnswer(
  new ApiError.IdempotencyRequestInProgress({
    message: "A request with this Idempotency-Key is still running; retry in a second."
  }),
  { "retry-after": String(Duration.toSeconds(IdempotencyDecision.inProgressRetryAfter)) }
)

const reused = (mismatch: "method" | "path" | "body") =>
  errorAnswer(
    new ApiError.IdempotencyKeyReused({
      message:
        mismatch === "body"
          ? "This Idempotency-Key was used with a different body; use a new key for a new request."
          : "This Idempotency-Key was used on another endpoint; use a new key for a new request."
    })
  )

/** Where a key's record is: application, mode and key (the table's primary key). */
export const RecordKey = Schema.Struct({
  application_id: Ids.ApplicationId,
  mode: Mode.Mode,
  key: IdempotencyKey.IdempotencyKey
})

/** A status that can be replayed: anything else stored would make a wrong answer. */
const HttpStatus = Columns.Integer.check(Schema.isBetween({ minimum: 100, maximum: 599 }))

/**
 * A row of `idempotency_keys` as the decision reads it (its key columns are the lookup's). An answer's status and
 * body are written together and cleared together: a row with one and not the other is not a record of any answer.
 */
export const RecordRow = Schema.Struct({
  method: Schema.String,
  path: Schema.String,
  fingerprint: Schema.String,
  created_at: Columns.Timestamp,
  // Null first (Columns.orNull): a record is read on every keyed create, and most of its columns are often null.
  locked_at: Columns.orNull(Columns.Timestamp),
  response_status: Columns.orNull(HttpStatus),
  response_body: Schema.NullOr(Schema.String),
  response_headers: Columns.orNull(Columns.Json(Schema.Record(Schema.String, Schema.String)))
}).check(
  Schema.makeFilter(
    (row) =>
      (row.response_status === null) === (row.response_body === null) || "an answer's status and body go together"
  )
)

/** The record of a decoded row, as the core's decision takes it. */
export const toRecord = (row: typeof RecordRow.Type): IdempotencyDecision.IdempotencyRecord => ({
  method: row.method,
  path: row.path,
  fingerprint: row.fingerprint,
  createdAt: row.created_at,
  lockedAt: row.locked_at,
  response:
    row.response_status === null || row.response_body === null
      ? null
      : {
          status: row.response_status,
          body: row.response_body,
          ...(row.response_headers === null ? {} : { headers: row.response_headers })
        }
})

const LockRow = Schema.Struct({ locked: Schema.Boolean })

export class IdempotencyStore extends Context.Service<
  IdempotencyStore,
  {
    /**
     * Runs `work` at most once per key (within 24 h) and answers every request with that key as decisions §4 says.
     * `work` runs inside the key's transaction; whatever it writes commits together with the stored answer.
     */
    readonly run: <R>(
      request: IdempotentRequest,
      work: (claim: Claim) => Effect.Effect<Answer, never, R>
    ) => Effect.Effect<Outcome, never, R>
  }
>()("@kassa/server/ledger/IdempotencyStore") {
  static readonly layer = Layer.effect(
    IdempotencyStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      // Decoders made once, here: every keyed create reads its record at least once.
      const findRecord = SqlSchema.findOneOption({
        Request: RecordKey,
        Result: RecordRow,
        execute: (key) => sql`
          SELECT method, path, fingerprint, created_at, locked_at, response_status, response_body, response_headers
          FROM idempotency_keys WHERE application_id = ${key.application_id} AND mode = ${key.mode} AND key = ${key.key}
        `
      })
      // A record that does not decode is a broken database: the request dies (500) and nothing is replayed from it.
      const read = (request: IdempotentRequest) =>
        findRecord({ application_id: request.scope.applicationId, mode: request.scope.mode, key: request.key }).pipe(
          Effect.map(Option.map(toRecord)),
          Effect.catchTag("SchemaError", Effect.die)
        )

      // Never waits: the lock is either free or held by a transaction working on this very key.
      const lockKey = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: LockRow,
        execute: (name) => sql`SELECT pg_try_advisory_xact_lock(hashtextextended(${name}, 0)) AS locked`
      })
      const tryLock = (request: IdempotentRequest) =>
        lockKey(`idempotency:${request.scope.applicationId}:${request.scope.mode}:${request.key}`).pipe(
          Effect.map(Option.exists((row) => row.locked)),
          Effect.catchTag("SchemaError", Effect.die)
        )

      /**
       * Claims the key for this request. Each write is conditional on the state the decision saw (no record; a
       * record past 24 h; a lock past 60 s), so even without the advisory lock only one request could win a claim.
       */
      const claim = (
        request: IdempotentRequest,
        decision: IdempotencyDecision.IdempotencyDecision,
        now: DateTime.Utc
      ) => {
        const at = DateTime.toDateUtc(now)
        const where = sql`
          application_id = ${request.scope.applicationId} AND mode = ${request.scope.mode} AND key = ${request.key}
        `
        switch (decision._tag) {
          case "Start":
            return decision.reason === "new"
              ? sql`
                  INSERT INTO idempotency_keys (application_id, mode, key, method, path, fingerprint, created_at,
                    locked_at)
                  VALUES (${request.scope.applicationId}, ${request.scope.mode}, ${request.key}, ${request.method},
                    ${request.path}, ${request.fingerprint}, ${at}, ${at})
                  ON CONFLICT DO NOTHING
                  RETURNING key
                `
              : sql`
                  UPDATE idempotency_keys
                  SET method = ${request.method}, path = ${request.path}, fingerprint = ${request.fingerprint},
                      created_at = ${at}, locked_at = ${at}, response_status = NULL, response_body = NULL,
                      response_headers = NULL
                  WHERE ${where}
                    AND created_at <= ${DateTime.toDateUtc(DateTime.subtractDuration(now, IdempotencyDecision.retention))}
                  RETURNING key
                `
          default:
            return sql`
              UPDATE idempotency_keys SET locked_at = ${at}
              WHERE ${where} AND response_status IS NULL
                AND (locked_at IS NULL
                  OR locked_at <= ${DateTime.toDateUtc(DateTime.subtractDuration(now, IdempotencyDecision.lockTimeout))})
              RETURNING key
            `
        }
      }

      const store = (request: IdempotentRequest, answer: Answer) => sql`
        UPDATE idempotency_keys
        SET response_status = ${answer.status}, response_body = ${answer.body},
            response_headers = ${JSON.stringify(answer.headers)}::jsonb, locked_at = NULL
        WHERE application_id = ${request.scope.applicationId} AND mode = ${request.scope.mode}
          AND key = ${request.key}
      `

      /** Stores the answer of work resumed after its commit, unless one is stored already (that one is the answer). */
      const storeResumed = (request: IdempotentRequest, answer: Answer) =>
        Effect.gen(function* () {
          const updated = yield* sql`
            UPDATE idempotency_keys
            SET response_status = ${answer.status}, response_body = ${answer.body},
                response_headers = ${JSON.stringify(answer.headers)}::jsonb, locked_at = NULL
            WHERE application_id = ${request.scope.applicationId} AND mode = ${request.scope.mode}
              AND key = ${request.key} AND response_status IS NULL
            RETURNING key
          `
          if (updated.length > 0) return { answer, replayed: false } satisfies Outcome
          const stored = yield* read(request)
          return Option.isSome(stored) && stored.value.response !== null
            ? replay(stored.value.response)
            : ({ answer, replayed: false } satisfies Outcome)
        })

      /** Work resumed after its commit ended without a storable answer: the next retry may take over at once. */
      const release = (request: IdempotentRequest) => sql`
        UPDATE idempotency_keys SET locked_at = NULL
        WHERE application_id = ${request.scope.applicationId} AND mode = ${request.scope.mode}
          AND key = ${request.key} AND response_status IS NULL
      `

      /** `Retry-After` on a resumed work's in-progress answer, as on the store's own. */
      const withRetryAfter = (answer: Answer): Answer =>
        answer.code === inProgress.code ? { ...answer, headers: { ...answer.headers, ...inProgress.headers } } : answer

      const replay = (response: IdempotencyDecision.StoredResponse): Outcome => ({
        answer: { status: response.status, body: response.body, headers: response.headers ?? {} },
        replayed: true
      })

      const run = <R>(request: IdempotentRequest, work: (claim: Claim) => Effect.Effect<Answer, never, R>) =>
        Effect.gen(function* () {
          const first = yield* runClaimed(request, work)
          if (first._tag === "Done") return first.outcome
          // Committed with the key locked: the work goes on outside the transaction, finding what it wrote.
          const answer = yield* work({ key: request.key, since: first.since, takeover: true, commitFirst: null }).pipe(
            Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : Effect.ignore(release(request))))
          )
          if (!IdempotencyDecision.shouldStore(answer.status, answer.code)) {
            yield* release(request)
            return { answer: withRetryAfter(answer), replayed: false } satisfies Outcome
          }
          return yield* storeResumed(request, answer)
        }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("IdempotencyStore.run"))

      type Claimed =
        | { readonly _tag: "Done"; readonly outcome: Outcome }
        | { readonly _tag: "Resume"; readonly since: DateTime.Utc }

      const done = (outcome: Outcome): Claimed => ({ _tag: "Done", outcome })

      const runClaimed = <R>(request: IdempotentRequest, work: (claim: Claim) => Effect.Effect<Answer, never, R>) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const now = yield* DateTime.now
              const decideNow = (stored: Option.Option<IdempotencyDecision.IdempotencyRecord>) =>
                IdempotencyDecision.decide(
                  { method: request.method, path: request.path, fingerprint: request.fingerprint, now },
                  stored
                )
              // A finished record answers without the lock: its answer never changes.
              const early = decideNow(yield* read(request))
              if (early._tag === "Replay") return done(replay(early.response))
              if (early._tag === "Reused") return done({ answer: reused(early.mismatch), replayed: false })

              if (!(yield* tryLock(request))) return done({ answer: inProgress, replayed: false })
              // Whoever held the lock before has committed or rolled back: this read is the truth.
              const stored = yield* read(request)
              const decision = decideNow(stored)
              switch (decision._tag) {
                case "Replay":
                  return done(replay(decision.response))
                case "Reused":
                  return done({ answer: reused(decision.mismatch), replayed: false })
                case "InProgress":
                  return done({ answer: inProgress, replayed: false })
                case "Start":
                case "TakeOver": {
                  const claimed = yield* claim(request, decision, now)
                  // Only a record written around this code (not under the lock) can make a claim miss.
                  if (claimed.length === 0) return done({ answer: inProgress, replayed: false })
                  const takeover = decision._tag === "TakeOver"
                  const since = takeover && Option.isSome(stored) ? stored.value.createdAt : now
                  let resume = false
                  const commitFirst = Effect.sync(() => {
                    resume = true
                  })
                  const answer = yield* work({ key: request.key, since, takeover, commitFirst })
                  // Commit with the key locked and no answer; `run` goes on after the commit.
                  if (resume) return { _tag: "Resume", since } satisfies Claimed
                  if (!IdempotencyDecision.shouldStore(answer.status, answer.code)) {
                    return yield* new Unstored({ answer })
                  }
                  yield* store(request, answer)
                  return done({ answer, replayed: false })
                }
              }
            })
          )
          .pipe(Effect.catchTag("Unstored", ({ answer }) => Effect.succeed(done({ answer, replayed: false }))))

      return IdempotencyStore.of({ run })
    })
  )
}
