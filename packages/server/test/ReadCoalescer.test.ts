/**
 * Coalesced provider reads (live/ReadCoalescer.ts, decisions §11 "at most one in flight and one every 2 s"): a flood
 * of hints for one key makes two reads, every hint gets the result of a read that started after it arrived, keys do
 * not wait for each other, and a caller that gives up does not interrupt the read others wait for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber } from "effect"
import * as ReadCoalescer from "../src/live/ReadCoalescer.ts"

const spacing = Duration.millis(100)

/** A read that counts its starts and answers the number of the start it is. */
const counter = () => {
  let starts = 0
  const read = (hold: Effect.Effect<void> = Effect.void) =>
    Effect.suspend(() => {
      const start = ++starts
      return Effect.as(hold, start)
    })
  return { read, starts: () => starts }
}

describe("ReadCoalescer", () => {
  it.live("1,000 hints at once for one key make one read, and the hints after it one more", () =>
    Effect.gen(function* () {
      const coalescer = ReadCoalescer.make<string, number, never>({ spacing, scope: yield* Effect.scope })
      const { read, starts } = counter()
      const gate = yield* Deferred.make<void>()
      // The first hint's read is held open while 999 more arrive: they all wait for the one trailing read.
      const first = yield* Effect.forkChild(coalescer.run("tr_1", read(Deferred.await(gate))))
      yield* Effect.yieldNow
      const rest = yield* Effect.forkChild(
        Effect.forEach(
          Array.from({ length: 999 }, () => coalescer.run("tr_1", read())),
          (hint) => hint,
          { concurrency: "unbounded" }
        )
      )
      yield* Effect.sleep(Duration.millis(20))
      expect(starts()).toBe(1)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toBe(1)
      const answers = yield* Fiber.join(rest)
      // Every later hint got the read that started after it arrived, not the one in flight when it came.
      expect(new Set(answers)).toEqual(new Set([2]))
      expect(starts()).toBe(2)
    }).pipe(Effect.scoped)
  )

  it.live("reads of one key start at least the spacing apart; other keys do not wait", () =>
    Effect.gen(function* () {
      const coalescer = ReadCoalescer.make<string, number, never>({ spacing, scope: yield* Effect.scope })
      const { read, starts } = counter()
      const startedAt: Array<number> = []
      const timed = Effect.tap(read(), () => Effect.sync(() => startedAt.push(Date.now())))
      yield* coalescer.run("tr_a", timed)
      yield* coalescer.run("tr_a", timed)
      expect(startedAt).toHaveLength(2)
      expect((startedAt[1] ?? 0) - (startedAt[0] ?? 0)).toBeGreaterThanOrEqual(Duration.toMillis(spacing) - 5)
      const before = Date.now()
      yield* coalescer.run("tr_b", read())
      expect(Date.now() - before).toBeLessThan(Duration.toMillis(spacing))
      expect(starts()).toBe(3)
    }).pipe(Effect.scoped)
  )

  it.live("a hint that gives up does not interrupt the read the others wait for", () =>
    Effect.gen(function* () {
      const coalescer = ReadCoalescer.make<string, number, never>({ spacing, scope: yield* Effect.scope })
      const { read } = counter()
      const gate = yield* Deferred.make<void>()
      const impatient = yield* Effect.forkChild(coalescer.run("tr_c", read(Deferred.await(gate))))
      yield* Effect.yieldNow
      const patient = yield* Effect.forkChild(coalescer.run("tr_c", read()))
      yield* Effect.sleep(Duration.millis(10))
      yield* Fiber.interrupt(impatient)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(patient)).toBe(2)
    }).pipe(Effect.scoped)
  )

  it.live(
    "idle keys are forgotten once more than the bound are tracked: memory does not grow with the ids posted",
    () =>
      Effect.gen(function* () {
        const coalescer = ReadCoalescer.make<number, number, never>({
          spacing: Duration.millis(1),
          scope: yield* Effect.scope,
          sweepAbove: 10
        })
        const { read } = counter()
        // Eleven keys: above the bound, but nothing is swept until a new key comes.
        for (let key = 0; key <= 10; key++) yield* coalescer.run(key, read())
        expect(coalescer.tracked()).toBe(11)
        // Idle for more than two spacings: the next new key sweeps them all away.
        yield* Effect.sleep(Duration.millis(20))
        yield* coalescer.run(11, read())
        expect(coalescer.tracked()).toBe(1)
      }).pipe(Effect.scoped)
  )
})
