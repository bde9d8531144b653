import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Option, Schema } from "effect"
import * as RetrySchedule from "../src/webhooks/RetrySchedule.ts"

const first = DateTime.makeUnsafe("2026-11-22T10:00:00.000Z")
const at = (ms: number): DateTime.Utc => DateTime.makeUnsafe(DateTime.toEpochMillis(first) + ms)
const offset = (time: DateTime.Utc): number => DateTime.toEpochMillis(time) - DateTime.toEpochMillis(first)
const minute = 60_000
const hour = 60 * minute

const dueAtOf = (next: RetrySchedule.NextAttempt): DateTime.Utc => {
  if (next._tag !== "Retry") assert.fail(`expected a retry, got ${JSON.stringify(next)}`)
  return next.dueAt
}

/** Runs the schedule with each attempt starting `lateness[i]` ms after it was due; returns the start times. */
const run = (lateness: ReadonlyArray<number>) => {
  const starts: Array<DateTime.Utc> = [first]
  const dueTimes: Array<DateTime.Utc> = []
  let next = RetrySchedule.nextAttempt({ attemptNumber: 1, startedAt: first, firstAttemptAt: first })
  while (next._tag === "Retry") {
    dueTimes.push(next.dueAt)
    const startedAt = DateTime.addDuration(next.dueAt, Duration.millis(lateness[starts.length - 1] ?? 0))
    starts.push(startedAt)
    next = RetrySchedule.nextAttempt({ attemptNumber: starts.length, startedAt, firstAttemptAt: first })
  }
  return { starts, dueTimes, end: next }
}

describe("RetrySchedule", () => {
  it("exports the limits of decisions §7", () => {
    assert.strictEqual(RetrySchedule.maxAttempts, 7)
    assert.isTrue(Duration.equals(RetrySchedule.giveUpAfter, Duration.hours(24)))
    assert.strictEqual(RetrySchedule.delays.length, RetrySchedule.maxAttempts - 1)
    assert.strictEqual(offset(RetrySchedule.deadline(first)), 24 * hour)
  })

  describe("delayAfter", () => {
    it("gives +1 min, +5 min, +30 min, +2 h, +6 h, +15 h after attempts 1 to 6", () => {
      const expected = [1 * minute, 5 * minute, 30 * minute, 2 * hour, 6 * hour, 15 * hour]
      expected.forEach((ms, i) => {
        const delay = Option.getOrThrow(RetrySchedule.delayAfter(i + 1))
        assert.strictEqual(Duration.toMillis(delay), ms, `after attempt ${i + 1}`)
      })
    })

    it("is None after the seventh attempt and for numbers that are not attempts", () => {
      for (const n of [7, 8, 100, 0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        assert.isTrue(Option.isNone(RetrySchedule.delayAfter(n)), String(n))
      }
    })
  })

  describe("nextAttempt, on time", () => {
    it("due times are +1 min, +6 min, +36 min, +2 h 36 min, +8 h 36 min, +23 h 36 min after the first", () => {
      const { dueTimes, starts, end } = run([])
      assert.deepStrictEqual(dueTimes.map(offset), [
        1 * minute,
        6 * minute,
        36 * minute,
        2 * hour + 36 * minute,
        8 * hour + 36 * minute,
        23 * hour + 36 * minute
      ])
      assert.strictEqual(starts.length, 7)
      assert.deepStrictEqual(end, { _tag: "GiveUp", reason: "max_attempts" })
    })

    it("attempt 7 is due 23 h 36 min after the first", () => {
      const next = RetrySchedule.nextAttempt({
        attemptNumber: 6,
        startedAt: at(8 * hour + 36 * minute),
        firstAttemptAt: first
      })
      assert.strictEqual(offset(dueAtOf(next)), 23 * hour + 36 * minute)
    })

    it("each retry is due its delay after the failed attempt started", () => {
      const startedAt = at(10 * minute)
      const next = RetrySchedule.nextAttempt({ attemptNumber: 2, startedAt, firstAttemptAt: first })
      assert.strictEqual(offset(dueAtOf(next)), 15 * minute)
    })
  })

  describe("nextAttempt, giving up", () => {
    it("after the seventh failure, even with time left", () => {
      assert.deepStrictEqual(
        RetrySchedule.nextAttempt({ attemptNumber: 7, startedAt: at(hour), firstAttemptAt: first }),
        {
          _tag: "GiveUp",
          reason: "max_attempts"
        }
      )
    })

    it("for attempt numbers that are not scheduled attempts", () => {
      for (const attemptNumber of [0, -3, 8, 2.5]) {
        assert.deepStrictEqual(RetrySchedule.nextAttempt({ attemptNumber, startedAt: first, firstAttemptAt: first }), {
          _tag: "GiveUp",
          reason: "max_attempts"
        })
      }
    })

    it("when the next attempt would be due at or after first + 24 h", () => {
      // Attempt 6 started late; +15 h lands exactly on the 24 h cut.
      const exactly = RetrySchedule.nextAttempt({ attemptNumber: 6, startedAt: at(9 * hour), firstAttemptAt: first })
      assert.deepStrictEqual(exactly, { _tag: "GiveUp", reason: "expired" })
      const justBefore = RetrySchedule.nextAttempt({
        attemptNumber: 6,
        startedAt: at(9 * hour - 1),
        firstAttemptAt: first
      })
      assert.strictEqual(offset(dueAtOf(justBefore)), 24 * hour - 1)
    })

    it("when an attempt itself ran after the 24 h", () => {
      const next = RetrySchedule.nextAttempt({ attemptNumber: 2, startedAt: at(25 * hour), firstAttemptAt: first })
      assert.deepStrictEqual(next, { _tag: "GiveUp", reason: "expired" })
    })

    it("a late schedule stops with expired before the seventh attempt", () => {
      const { starts, end } = run([0, 0, 0, 0, hour])
      assert.strictEqual(starts.length, 6)
      assert.deepStrictEqual(end, { _tag: "GiveUp", reason: "expired" })
    })
  })

  describe("properties", () => {
    const lateness = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 12 * hour })))

    it.prop("due times strictly increase and each follows its attempt's start", [lateness], ([late]) => {
      const { starts, dueTimes } = run(late)
      assert.strictEqual(starts.length, dueTimes.length + 1)
      for (const [i, due] of dueTimes.entries()) {
        const startedAt = starts[i]
        if (startedAt === undefined) assert.fail("every due time follows a start")
        assert.isTrue(DateTime.isGreaterThan(due, startedAt))
        const previous = dueTimes[i - 1]
        if (previous !== undefined) assert.isTrue(DateTime.isGreaterThan(due, previous))
      }
    })

    it.prop("never more than 7 attempts, never a retry due at or after 24 h", [lateness], ([late]) => {
      const { starts, dueTimes, end } = run(late)
      assert.isAtMost(starts.length, RetrySchedule.maxAttempts)
      for (const due of dueTimes) assert.isBelow(offset(due), 24 * hour)
      assert.strictEqual(end._tag, "GiveUp")
      if (starts.length === RetrySchedule.maxAttempts)
        assert.deepStrictEqual(end, { _tag: "GiveUp", reason: "max_attempts" })
      else assert.deepStrictEqual(end, { _tag: "GiveUp", reason: "expired" })
    })

    it.prop("a retry is due exactly its delay after the attempt started", [Schema.Int, lateness], ([n, late]) => {
      const attemptNumber = 1 + Math.abs(n % 6)
      const startedAt = at(late.reduce((sum, ms) => sum + ms, 0) % (8 * hour))
      const next = RetrySchedule.nextAttempt({ attemptNumber, startedAt, firstAttemptAt: first })
      const delay = Option.getOrThrow(RetrySchedule.delayAfter(attemptNumber))
      const due = DateTime.addDuration(startedAt, delay)
      if (next._tag === "Retry") assert.isTrue(DateTime.Equivalence(next.dueAt, due))
      else assert.isAtLeast(offset(due), 24 * hour)
    })
  })
})
