import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration } from "effect"
import * as fc from "fast-check"
import * as LoginThrottle from "../src/dashboard/LoginThrottle.ts"

const t0 = DateTime.makeUnsafe("2026-11-22T10:00:00.000Z")
const at = (seconds: number) => DateTime.addDuration(t0, Duration.seconds(seconds))
const seconds = (duration: Duration.Duration) => Duration.toMillis(duration) / 1000

const fail = (times: number, from = LoginThrottle.initialPair, now = t0) => {
  let state = from
  for (let index = 0; index < times; index++) state = LoginThrottle.pairAfterFailure(state, now)
  return state
}

const admitted = (
  pair: LoginThrottle.PairState,
  now: DateTime.Utc,
  address: LoginThrottle.AddressState = LoginThrottle.initialAddress,
  inFlight = 0
) => LoginThrottle.admit({ address, pair, inFlight, now })._tag === "Check"

/**
 * A guesser who tries again whenever told to wait and tries after each gap otherwise: every attempt the rule admits
 * is a wrong password checked. Returns the times of the checked attempts.
 */
const guess = (gaps: ReadonlyArray<number>) => {
  let pair = LoginThrottle.initialPair
  let address = LoginThrottle.initialAddress
  let now = t0
  const checked: Array<DateTime.Utc> = []
  for (const gap of gaps) {
    now = DateTime.addDuration(now, Duration.seconds(gap))
    const admission = LoginThrottle.admit({ address, pair, inFlight: 0, now })
    if (admission._tag === "Blocked") now = admission.until
    if (admission._tag === "Busy") continue
    pair = LoginThrottle.pairAfterFailure(pair, now)
    address = LoginThrottle.addressAfterFailure(address, now)
    checked.push(now)
  }
  return checked
}

describe("sign-in throttle (issues #6, #11)", () => {
  describe("per account and address", () => {
    it("four wrong passwords in a row are free", () => {
      assert.isTrue(admitted(fail(4), t0))
    })
    it("the fifth blocks the pair for the first delay; then each wrong password doubles it", () => {
      const fifth = fail(5)
      assert.isFalse(admitted(fifth, t0))
      assert.isFalse(admitted(fifth, at(seconds(LoginThrottle.firstDelay) - 1)))
      assert.isTrue(admitted(fifth, at(seconds(LoginThrottle.firstDelay))))
      const sixth = LoginThrottle.pairAfterFailure(fifth, at(seconds(LoginThrottle.firstDelay)))
      assert.isFalse(admitted(sixth, at(3 * seconds(LoginThrottle.firstDelay) - 1)))
      assert.isTrue(admitted(sixth, at(3 * seconds(LoginThrottle.firstDelay))))
    })
    it("the delay never exceeds the cap", () => {
      assert.deepStrictEqual(LoginThrottle.delayAfter(200), LoginThrottle.maxDelay)
    })
    it("a right password clears the pair", () => {
      assert.deepStrictEqual(LoginThrottle.pairAfterSuccess(), LoginThrottle.initialPair)
    })
    it("a pair quiet for its memory is forgotten", () => {
      const state = fail(3)
      assert.strictEqual(LoginThrottle.pairAfterFailure(state, at(seconds(LoginThrottle.pairMemory))).failures, 1)
      assert.strictEqual(LoginThrottle.pairAfterFailure(state, at(seconds(LoginThrottle.pairMemory) - 1)).failures, 4)
    })
    it("delays grow with the number of wrong passwords and stay within the first delay and the cap", () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 10_000 }), (failures) => {
          const delay = LoginThrottle.delayAfter(failures)
          const next = LoginThrottle.delayAfter(failures + 1)
          if (failures < LoginThrottle.maxFailures - 1) return Duration.isZero(delay) && Duration.isZero(next)
          return (
            Duration.isLessThanOrEqualTo(delay, next) &&
            Duration.isGreaterThanOrEqualTo(next, LoginThrottle.firstDelay) &&
            Duration.isLessThanOrEqualTo(next, LoginThrottle.maxDelay)
          )
        })
      )
    })
    it("whatever the guesser's timing, one address checks at most 16 wrong passwords of one account a day", () => {
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 0, max: 3600 }), { maxLength: 200 }), (gaps) => {
          const day = DateTime.addDuration(t0, Duration.days(1))
          return guess(gaps).filter((time) => DateTime.isLessThan(time, day)).length <= 16
        })
      )
    })
  })

  describe("per address", () => {
    it("the thirtieth wrong password in a window locks the address, whatever the pairs", () => {
      let address = LoginThrottle.initialAddress
      for (let index = 0; index < LoginThrottle.addressMaxFailures - 1; index++)
        address = LoginThrottle.addressAfterFailure(address, at(index))
      assert.isTrue(admitted(LoginThrottle.initialPair, at(60), address))
      address = LoginThrottle.addressAfterFailure(address, at(60))
      assert.isFalse(admitted(LoginThrottle.initialPair, at(61), address))
      assert.isTrue(admitted(LoginThrottle.initialPair, at(60 + seconds(LoginThrottle.addressLockDuration)), address))
    })
    it("the window restarts once it has run out", () => {
      let address = LoginThrottle.initialAddress
      for (let index = 0; index < LoginThrottle.addressMaxFailures - 1; index++)
        address = LoginThrottle.addressAfterFailure(address, t0)
      address = LoginThrottle.addressAfterFailure(address, at(seconds(LoginThrottle.addressWindow)))
      assert.strictEqual(address.failures, 1)
      assert.isNull(address.lockedUntil)
    })
    it("whatever the timing, no window of the address's length holds more checked failures than the limit", () => {
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 0, max: 120 }), { maxLength: 300 }), (gaps) => {
          // Many accounts from one address: every attempt names a fresh pair, so only the address rule holds.
          let address = LoginThrottle.initialAddress
          let now = t0
          const checked: Array<number> = []
          for (const gap of gaps) {
            now = DateTime.addDuration(now, Duration.seconds(gap))
            if (!admitted(LoginThrottle.initialPair, now, address)) continue
            address = LoginThrottle.addressAfterFailure(address, now)
            checked.push(DateTime.toEpochMillis(now))
          }
          const window = Duration.toMillis(LoginThrottle.addressWindow)
          return checked.every(
            (start) =>
              checked.filter((time) => time >= start && time < start + window).length <=
              2 * LoginThrottle.addressMaxFailures
          )
        })
      )
    })
    it("at most two sign-ins of one address are checked at once", () => {
      assert.isTrue(admitted(LoginThrottle.initialPair, t0, LoginThrottle.initialAddress, 1))
      assert.strictEqual(
        LoginThrottle.admit({
          address: LoginThrottle.initialAddress,
          pair: LoginThrottle.initialPair,
          inFlight: LoginThrottle.maxConcurrentPerAddress,
          now: t0
        })._tag,
        "Busy"
      )
    })
  })
})
