/**
 * What to do with a request that carries an `Idempotency-Key`, given what is stored under that key (decisions §4).
 *
 * The record is looked up by application + mode + key, and remembers the method and path of its first use. The
 * path is deliberately not part of the lookup: otherwise the same key on another path would find nothing and could
 * not be refused with `idempotency_key_reused`.
 *
 * Rows of the table, checked in this order:
 *
 * | Stored record                                   | Decision                       |
 * |-------------------------------------------------|--------------------------------|
 * | none                                            | `Start` (`new`)                |
 * | `now >= createdAt + 24 h`                       | `Start` (`expired`, replace it) |
 * | other method, path or body fingerprint          | `Reused` → 409 `idempotency_key_reused` |
 * | response stored                                 | `Replay` → same status, body, `Idempotent-Replayed: true` |
 * | no response, `now < lockedAt + 60 s`            | `InProgress` → 409 `idempotency_request_in_progress`, `Retry-After: 1` |
 * | no response, `now >= lockedAt + 60 s`, or no lock | `TakeOver` (the first process died) |
 *
 * Pure: time is an argument.
 *
 * @since 0.1.0
 */
import { Data, DateTime, Duration, Option, Schema } from "effect"
import { catalogue } from "../errors/ApiError.ts"

/** How long a request may hold its key without an answer before a retry may take the work over. */
export const lockTimeout: Duration.Duration = Duration.seconds(60)

/** How long a key is remembered, counted from its first use. */
export const retention: Duration.Duration = Duration.hours(24)

/** The `Retry-After` of 409 `idempotency_request_in_progress`. */
export const inProgressRetryAfter: Duration.Duration = Duration.seconds(1)

/** A stored final answer, replayed as is. */
export const StoredResponse = Schema.Struct({
  status: Schema.Int,
  /** The exact response body text, replayed byte for byte. */
  body: Schema.String,
  /** Headers that belong to the answer and must be replayed, e.g. `Location` of a 201. */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})
export type StoredResponse = typeof StoredResponse.Type

/** What is stored under an idempotency key. */
export const IdempotencyRecord = Schema.Struct({
  method: Schema.String,
  path: Schema.String,
  /** `RequestFingerprint` of the body of the first request. */
  fingerprint: Schema.String,
  /** First use; the key is forgotten `retention` after it. */
  createdAt: Schema.DateTimeUtc,
  /** Set while a request is working on the key; `null` once it has answered (or released the key). */
  lockedAt: Schema.NullOr(Schema.DateTimeUtc),
  /** The stored final answer, `null` while none is stored. */
  response: Schema.NullOr(StoredResponse)
})
export type IdempotencyRecord = typeof IdempotencyRecord.Type

/** The request being decided. */
export interface IdempotentRequest {
  readonly method: string
  readonly path: string
  /** `RequestFingerprint` of its body. */
  readonly fingerprint: string
  readonly now: DateTime.Utc
}

/** The outcome of {@link decide}. */
export type IdempotencyDecision = Data.TaggedEnum<{
  /**
   * Run the request: lock the key (insert the record, or replace the expired one) and store the answer if
   * `shouldStore` says so. The insert must be conditional, since a concurrent request may win the race.
   */
  Start: { readonly reason: "new" | "expired" }
  /** Answer with the stored response plus `Idempotent-Replayed: true`. */
  Replay: { readonly response: StoredResponse }
  /** 409 `idempotency_key_reused`; `mismatch` names the first difference found. */
  Reused: { readonly mismatch: "method" | "path" | "body" }
  /** 409 `idempotency_request_in_progress` with `Retry-After` (1 s). */
  InProgress: { readonly retryAfter: Duration.Duration }
  /**
   * The request that locked the key died (or released it without an answer): relock the key, with a
   * compare-and-set on `previousLock` so only one retry wins, and run again. The work itself must be idempotent
   * (find the payment the dead request may have created; reuse the provider-side idempotency key).
   */
  TakeOver: { readonly previousLock: DateTime.Utc | null }
}>

/** Constructors and matchers for {@link IdempotencyDecision}. */
export const IdempotencyDecision = Data.taggedEnum<IdempotencyDecision>()

/** The time at which a record is forgotten. */
export const expiresAt = (record: Pick<IdempotencyRecord, "createdAt">): DateTime.Utc =>
  DateTime.addDuration(record.createdAt, retention)

/** Decides what to do with `request` given the record stored under its key, if any. */
export const decide = (request: IdempotentRequest, stored: Option.Option<IdempotencyRecord>): IdempotencyDecision => {
  if (Option.isNone(stored)) return IdempotencyDecision.Start({ reason: "new" })
  const record = stored.value
  // "Remembered for 24 hours from first use": at exactly 24 h it is no longer remembered.
  if (!DateTime.isLessThan(request.now, expiresAt(record))) return IdempotencyDecision.Start({ reason: "expired" })
  if (record.method !== request.method) return IdempotencyDecision.Reused({ mismatch: "method" })
  if (record.path !== request.path) return IdempotencyDecision.Reused({ mismatch: "path" })
  if (record.fingerprint !== request.fingerprint) return IdempotencyDecision.Reused({ mismatch: "body" })
  if (record.response !== null) return IdempotencyDecision.Replay({ response: record.response })
  // "Does not block its key for more than 60 s": at exactly 60 s the lock is stale.
  if (
    record.lockedAt !== null &&
    DateTime.isLessThan(request.now, DateTime.addDuration(record.lockedAt, lockTimeout))
  ) {
    return IdempotencyDecision.InProgress({ retryAfter: inProgressRetryAfter })
  }
  return IdempotencyDecision.TakeOver({ previousLock: record.lockedAt })
}

/** Error codes whose answers are never stored: the catalogue's `stored: false` rows. */
export const neverStoredCodes: ReadonlySet<string> = new Set(
  Object.values(catalogue)
    .filter((row) => !row.stored)
    .map((row) => row.code)
)

/**
 * Whether an answer is stored for replay: every final answer of the endpoint — 2xx, the business 4xx errors and
 * 502 `provider_error` — and never 500, 401/403, 429, `idempotency_request_in_progress` or `payment_busy`.
 */
export const shouldStore = (status: number, errorCode?: string): boolean => {
  if (status >= 200 && status <= 299) return true
  if (errorCode !== undefined && neverStoredCodes.has(errorCode)) return false
  if (status === 401 || status === 403 || status === 429) return false
  if (status >= 400 && status <= 499) return true
  // A 502 means a payment was created (as `failed`); a new payment needs a new key.
  return status === 502 && errorCode === "provider_error"
}
