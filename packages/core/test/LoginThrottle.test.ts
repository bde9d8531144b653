import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration } from "effect"
import * as fc from "fast-check"
import * as LoginThrottle from "../src/dashboard/LoginThrottle.ts"

const t0 = DateTime.makeUnsafe("2026-11-22T10:00:00.000Z")
const at = (seconds: number) => DateTime.addDuration(t0, Duration.seconds(seconds))

const fail = (times: number, from = LoginThrottle.initial, now = t0) => {
  let state = from
  for (let index = 0; index < times; index++) state = LoginThrottle.afterFailure(state, now)
  return state
}

describe("sign-in lock-out (issue #6)", () => {
  it("four failures in a row do not lock", () => {
    const state = fail(4)
    assert.strictEqual(state.failures, 4)
    assert.isFalse(LoginThrottle.isLocked(state, t0))
  })
  it("the fifth failure in a row locks for fifteen minutes", () => {
    const state = fail(5)
    assert.isTrue(LoginThrottle.isLocked(state, t0))
    assert.isTrue(LoginThrottle.isLocked(state, at(15 * 60 - 1)))
    assert.isFalse(LoginThrottle.isLocked(state, at(15 * 60)))
  })
  it("failures during a lock do not extend it", () => {
    const locked = fail(5)
    const later = fail(10, locked, at(60))
    assert.deepStrictEqual(later.lockedUntil, locked.lockedUntil)
  })
  it("after a lock runs out the count starts again", () => {
    const state = fail(1, fail(5), at(15 * 60))
    assert.strictEqual(state.failures, 1)
    assert.isFalse(LoginThrottle.isLocked(state, at(15 * 60)))
  })
  it("a success clears the count", () => {
    assert.deepStrictEqual(LoginThrottle.afterSuccess(), LoginThrottle.initial)
  })
  it("whatever the sequence of failures, the account is locked only after five in a row since the last lock", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 600 }), { maxLength: 30 }), (gaps) => {
        let state = LoginThrottle.initial
        let now = t0
        let streak = 0
        for (const gap of gaps) {
          now = DateTime.addDuration(now, Duration.seconds(gap))
          const wasLocked = LoginThrottle.isLocked(state, now)
          state = LoginThrottle.afterFailure(state, now)
          if (!wasLocked) streak = state.lockedUntil !== null && LoginThrottle.isLocked(state, now) ? 0 : streak + 1
          if (streak >= LoginThrottle.maxFailures) return false
        }
        return true
      })
    )
  })
})
