import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration } from "effect"
import * as fc from "fast-check"
import { Schedule } from "../src/providers/ProviderSettlement.ts"
import { t0 } from "./support/payments.ts"

const at = (seconds: number) => DateTime.add(t0, { seconds })
const seconds = (from: DateTime.Utc, to: DateTime.Utc) => Duration.toSeconds(DateTime.distance(from, to))

describe("reading a pending live payment again (decisions §10, Lost events)", () => {
  it("first 60 s after the checkout visit, then every 5 minutes", () => {
    const visitedAt = at(0)
    const first = Schedule.nextPaymentRead({ visitedAt, lastReadAt: null })
    assert.strictEqual(first === null ? null : seconds(visitedAt, first), 60)
    const second = Schedule.nextPaymentRead({ visitedAt, lastReadAt: at(60) })
    assert.strictEqual(second === null ? null : seconds(at(60), second), 300)
  })

  it("a read before the first scheduled one (a webhook's re-read) does not postpone it", () => {
    const next = Schedule.nextPaymentRead({ visitedAt: at(0), lastReadAt: at(10) })
    assert.strictEqual(next === null ? null : seconds(at(0), next), 60)
  })

  it("a checkout nobody visited needs no read (its expiry closes it at the provider)", () => {
    assert.isNull(Schedule.nextPaymentRead({ visitedAt: null, lastReadAt: null }))
  })

  it("a lost event delays the outcome by at most 5 minutes plus the sweeper's lateness (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 40 }), (lateness) => {
        const visitedAt = at(0)
        let last: DateTime.Utc | null = null
        for (const late of lateness) {
          const due = Schedule.nextPaymentRead({ visitedAt, lastReadAt: last })
          if (due === null) throw new Error("a visited payment always has a next read")
          if (last === null) assert.strictEqual(seconds(visitedAt, due), 60)
          else assert.strictEqual(seconds(last, due), 300)
          last = DateTime.add(due, { seconds: late })
        }
      })
    )
  })
})

describe("reading a pending live refund again", () => {
  it("every 5 minutes during the first hour, then hourly", () => {
    const requestedAt = at(0)
    let last: DateTime.Utc | null = null
    const gaps: Array<number> = []
    for (let read = 0; read < 15; read++) {
      const next = Schedule.nextRefundRead({ requestedAt, lastReadAt: last })
      gaps.push(seconds(last ?? requestedAt, next))
      last = next
    }
    assert.deepStrictEqual(gaps, [...Array.from({ length: 12 }, () => 300), 3_600, 3_600, 3_600])
  })

  it("reads only move forward and never wait more than an hour (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 86_400 }), (elapsed) => {
        const requestedAt = at(0)
        const last = at(elapsed)
        const next = Schedule.nextRefundRead({ requestedAt, lastReadAt: last })
        const gap = seconds(last, next)
        assert.isTrue(gap > 0 && gap <= Duration.toSeconds(Schedule.lateRefundReadInterval))
        assert.strictEqual(gap, elapsed < 3_600 ? 300 : 3_600)
      })
    )
  })
})

describe("an expiry the provider did not answer", () => {
  it("is tried again within a minute", () => {
    assert.strictEqual(seconds(at(0), Schedule.nextExpiryAttempt(at(0))), 60)
  })
})
