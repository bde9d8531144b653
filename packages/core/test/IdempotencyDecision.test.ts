import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Option, Schema } from "effect"
import {
  decide,
  expiresAt,
  IdempotencyDecision,
  type IdempotencyRecord,
  IdempotencyRecord as IdempotencyRecordSchema,
  type IdempotentRequest,
  inProgressRetryAfter,
  lockTimeout,
  neverStoredCodes,
  retention,
  type StoredResponse,
  shouldStore
} from "../src/idempotency/IdempotencyDecision.ts"

const t0 = DateTime.makeUnsafe("2026-11-22T10:00:00.000Z")
const at = (ms: number): DateTime.Utc => DateTime.makeUnsafe(DateTime.toEpochMillis(t0) + ms)
const seconds = (s: number) => s * 1000
const hours = (h: number) => h * 3_600_000

const fingerprintA = "a".repeat(64)
const fingerprintB = "b".repeat(64)

const created: StoredResponse = {
  status: 201,
  body: `{"id":"5f0c8f5e-0000-4000-8000-000000000001","status":"pending"}`,
  headers: { Location: "/api/v1/payments/5f0c8f5e-0000-4000-8000-000000000001" }
}

const request = (overrides: Partial<IdempotentRequest> = {}): IdempotentRequest => ({
  method: "POST",
  path: "/api/v1/payments",
  fingerprint: fingerprintA,
  now: at(seconds(5)),
  ...overrides
})

const record = (overrides: Partial<IdempotencyRecord> = {}): Option.Option<IdempotencyRecord> =>
  Option.some({
    method: "POST",
    path: "/api/v1/payments",
    fingerprint: fingerprintA,
    createdAt: t0,
    lockedAt: null,
    response: created,
    ...overrides
  })

const inFlight = (lockedAt: DateTime.Utc = t0) => record({ lockedAt, response: null })

describe("IdempotencyDecision", () => {
  it("exports the limits of decisions §4", () => {
    assert.isTrue(Duration.equals(lockTimeout, Duration.seconds(60)))
    assert.isTrue(Duration.equals(retention, Duration.hours(24)))
    assert.isTrue(Duration.equals(inProgressRetryAfter, Duration.seconds(1)))
    assert.isTrue(DateTime.Equivalence(expiresAt({ createdAt: t0 }), at(hours(24))))
  })

  describe("decide: one test per row", () => {
    it("no record → Start (new)", () => {
      assert.deepStrictEqual(decide(request(), Option.none()), IdempotencyDecision.Start({ reason: "new" }))
    })

    it("same request, response stored → Replay with that response", () => {
      const decision = decide(request(), record())
      assert.deepStrictEqual(decision, IdempotencyDecision.Replay({ response: created }))
      assert.isTrue(IdempotencyDecision.$is("Replay")(decision))
    })

    it("replays a stored error answer the same way", () => {
      const failed: StoredResponse = { status: 502, body: `{"error":{"code":"provider_error"}}` }
      assert.deepStrictEqual(
        decide(request(), record({ response: failed })),
        IdempotencyDecision.Replay({ response: failed })
      )
    })

    it("different body → Reused (body)", () => {
      assert.deepStrictEqual(
        decide(request({ fingerprint: fingerprintB }), record()),
        IdempotencyDecision.Reused({ mismatch: "body" })
      )
    })

    it("different path → Reused (path)", () => {
      assert.deepStrictEqual(
        decide(request({ path: "/api/v1/payments/5f0c8f5e-0000-4000-8000-000000000001/refunds" }), record()),
        IdempotencyDecision.Reused({ mismatch: "path" })
      )
    })

    it("different method → Reused (method)", () => {
      assert.deepStrictEqual(
        decide(request({ method: "PUT" }), record()),
        IdempotencyDecision.Reused({ mismatch: "method" })
      )
    })

    it("method and path are compared before the body", () => {
      assert.deepStrictEqual(
        decide(request({ method: "PUT", path: "/x", fingerprint: fingerprintB }), record()),
        IdempotencyDecision.Reused({ mismatch: "method" })
      )
      assert.deepStrictEqual(
        decide(request({ path: "/x", fingerprint: fingerprintB }), record()),
        IdempotencyDecision.Reused({ mismatch: "path" })
      )
    })

    it("same request, no response, lock younger than 60 s → InProgress with Retry-After 1 s", () => {
      const decision = decide(request({ now: at(seconds(10)) }), inFlight())
      assert.deepStrictEqual(decision, IdempotencyDecision.InProgress({ retryAfter: Duration.seconds(1) }))
    })

    it("same request, no response, lock older than 60 s → TakeOver with the stale lock", () => {
      assert.deepStrictEqual(
        decide(request({ now: at(seconds(90)) }), inFlight()),
        IdempotencyDecision.TakeOver({ previousLock: t0 })
      )
    })

    it("same request, no response, no lock (released) → TakeOver at once", () => {
      assert.deepStrictEqual(
        decide(request({ now: at(1) }), record({ lockedAt: null, response: null })),
        IdempotencyDecision.TakeOver({ previousLock: null })
      )
    })

    it("record older than 24 h → Start (expired), whatever it holds", () => {
      const later = request({ now: at(hours(30)), fingerprint: fingerprintB, path: "/other" })
      assert.deepStrictEqual(decide(later, record()), IdempotencyDecision.Start({ reason: "expired" }))
      assert.deepStrictEqual(
        decide(later, inFlight(at(hours(30) - 1))),
        IdempotencyDecision.Start({ reason: "expired" })
      )
    })

    it("a different request while the first runs → Reused, not InProgress", () => {
      assert.deepStrictEqual(
        decide(request({ fingerprint: fingerprintB, now: at(1) }), inFlight()),
        IdempotencyDecision.Reused({ mismatch: "body" })
      )
    })

    it("a stored response wins over a lock left behind", () => {
      assert.deepStrictEqual(
        decide(request({ now: at(1) }), record({ lockedAt: t0 })),
        IdempotencyDecision.Replay({ response: created })
      )
    })

    it("clock skew: a lock taken 'in the future' still counts as in progress", () => {
      assert.strictEqual(decide(request({ now: t0 }), inFlight(at(seconds(2))))._tag, "InProgress")
    })
  })

  describe("decide: the edges", () => {
    it("the lock is live until 60 s exactly, stale from 60 s on", () => {
      const lockedAt = at(seconds(100))
      const tagAt = (ms: number) => decide(request({ now: at(seconds(100) + ms) }), inFlight(lockedAt))._tag
      assert.strictEqual(tagAt(0), "InProgress")
      assert.strictEqual(tagAt(seconds(60) - 1), "InProgress")
      assert.strictEqual(tagAt(seconds(60)), "TakeOver")
      assert.strictEqual(tagAt(seconds(60) + 1), "TakeOver")
    })

    it("the record is remembered until 24 h exactly after first use, forgotten from 24 h on", () => {
      const tagAt = (ms: number) => decide(request({ now: at(ms) }), record())._tag
      assert.strictEqual(tagAt(hours(24) - 1), "Replay")
      assert.strictEqual(tagAt(hours(24)), "Start")
      assert.strictEqual(tagAt(hours(24) + 1), "Start")
    })

    it("the 24 h count starts at first use, not at the lock", () => {
      // A take-over relocks the record but does not extend its life.
      const relocked = inFlight(at(hours(24) - seconds(10)))
      assert.strictEqual(decide(request({ now: at(hours(24) - 1) }), relocked)._tag, "InProgress")
      assert.strictEqual(decide(request({ now: at(hours(24)) }), relocked)._tag, "Start")
    })
  })

  describe("decide: $match covers every case", () => {
    it("maps each decision to its HTTP answer", () => {
      const answer = IdempotencyDecision.$match({
        Start: () => "run",
        Replay: ({ response }) => `replay ${response.status}`,
        Reused: () => "409 idempotency_key_reused",
        InProgress: ({ retryAfter }) =>
          `409 idempotency_request_in_progress Retry-After: ${Duration.toSeconds(retryAfter)}`,
        TakeOver: () => "run again"
      })
      assert.strictEqual(answer(decide(request(), Option.none())), "run")
      assert.strictEqual(answer(decide(request(), record())), "replay 201")
      assert.strictEqual(answer(decide(request({ path: "/x" }), record())), "409 idempotency_key_reused")
      assert.strictEqual(
        answer(decide(request({ now: at(1) }), inFlight())),
        "409 idempotency_request_in_progress Retry-After: 1"
      )
      assert.strictEqual(answer(decide(request({ now: at(seconds(61)) }), inFlight())), "run again")
    })
  })

  describe("IdempotencyRecord schema", () => {
    it("describes the records decide reads", () => {
      const is = Schema.is(IdempotencyRecordSchema)
      assert.isTrue(is(Option.getOrThrow(record())))
      assert.isTrue(is(Option.getOrThrow(inFlight())))
      assert.isFalse(is({ ...Option.getOrThrow(record()), createdAt: "2026-11-22T10:00:00.000Z" }))
    })
  })

  describe("shouldStore", () => {
    const stored: ReadonlyArray<readonly [number, string | undefined]> = [
      [200, undefined],
      [201, undefined],
      [204, undefined],
      [404, "not_found"],
      [409, "order_reference_already_paid"],
      [409, "payment_not_cancellable"],
      [409, "payment_not_refundable"],
      [409, "payment_not_pending"],
      [422, "validation_failed"],
      [422, "method_required"],
      [422, "method_not_enabled"],
      [422, "amount_below_minimum"],
      [422, "amount_above_maximum"],
      [422, "return_url_not_allowed"],
      [422, "refund_amount_exceeds_refundable"],
      [422, "refunds_processed_manually"],
      [502, "provider_error"]
    ]
    const notStored: ReadonlyArray<readonly [number, string | undefined]> = [
      [500, "server_error"],
      [500, undefined],
      [409, "idempotency_request_in_progress"],
      [409, "idempotency_key_reused"],
      [409, "payment_busy"],
      [429, "rate_limited"],
      [429, undefined],
      [401, "unauthenticated"],
      [401, "invalid_api_key"],
      [403, "application_disabled"],
      [403, "application_pending_review"],
      [403, "application_suspended"],
      [403, "ip_not_allowed"],
      [401, undefined],
      [403, undefined],
      [400, "http_error"],
      [405, "http_error"],
      [413, "http_error"],
      [415, "http_error"],
      [502, undefined],
      [502, "server_error"],
      [503, undefined],
      [504, undefined],
      [302, undefined],
      [100, undefined]
    ]
    for (const [status, code] of stored) {
      it(`stores ${status} ${code ?? "(no code)"}`, () => {
        assert.isTrue(shouldStore(status, code))
      })
    }
    for (const [status, code] of notStored) {
      it(`never stores ${status} ${code ?? "(no code)"}`, () => {
        assert.isFalse(shouldStore(status, code))
      })
    }

    it("lists exactly the never-stored codes", () => {
      assert.deepStrictEqual([...neverStoredCodes].sort(), [
        "application_disabled",
        "application_pending_review",
        "application_suspended",
        "http_error",
        "idempotency_key_reused",
        "idempotency_request_in_progress",
        "invalid_api_key",
        "ip_not_allowed",
        "payment_busy",
        "rate_limited",
        "server_error",
        "unauthenticated"
      ])
    })

    it.prop("stores every 2xx and refuses every 401, 403, 429 and 5xx but 502 provider_error", [Schema.Int], ([n]) => {
      const status = 100 + Math.abs(n % 500)
      const expected =
        (status >= 200 && status < 300) || (status >= 400 && status < 500 && ![401, 403, 429].includes(status))
      assert.strictEqual(shouldStore(status), expected)
    })
  })
})
