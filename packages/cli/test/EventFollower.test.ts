/** `kassa listen`'s window over the events list: late commits forwarded once, nothing from before the start. */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as EventFollower from "../src/EventFollower.ts"

const at = (seconds: number) => new Date(Date.UTC(2026, 10, 27, 12, 0, seconds)).toISOString()
const event = (id: string, seconds: number) => ({ id, event: "payment.paid", created_at: at(seconds) })
/** The list as the API answers it: newest first. */
const newestFirst = <E extends { created_at: string }>(events: ReadonlyArray<E>) =>
  [...events].sort((a, b) => b.created_at.localeCompare(a.created_at))

describe("EventFollower", () => {
  it("forwards nothing that was listed at the start, and reads a window before the newest event", () => {
    const state = EventFollower.start([event("a", 10), event("b", 20)], 5_000)
    expect(EventFollower.readFrom(state, 5_000)).toBe(at(15))
    expect(EventFollower.step(state, [event("b", 20)], 5_000).fresh).toEqual([])
    // "a" fell out of the window: the server does not list it again, and it is no longer remembered.
    expect([...state.seen.keys()]).toEqual(["b"])
  })

  it("an application with no event yet reads everything, then follows from its first event", () => {
    const empty = EventFollower.start([])
    expect(EventFollower.readFrom(empty)).toBeUndefined()
    const { fresh, state } = EventFollower.step(empty, newestFirst([event("a", 1), event("b", 2)]))
    expect(fresh.map(({ id }) => id)).toEqual(["a", "b"])
    expect(EventFollower.readFrom(state, 1_000)).toBe(at(1))
  })

  it("an event committed after a newer one was forwarded is still forwarded, once", () => {
    const start = EventFollower.start([event("old", 0)], 30_000)
    const first = EventFollower.step(start, newestFirst([event("old", 0), event("late", 5), event("next", 8)]))
    // "late" (created at 5 s) was not visible yet at the first poll: only "next" was listed.
    const seenFirst = EventFollower.step(start, newestFirst([event("old", 0), event("next", 8)]), 30_000)
    expect(seenFirst.fresh.map(({ id }) => id)).toEqual(["next"])
    const second = EventFollower.step(seenFirst.state, newestFirst([event("late", 5), event("next", 8)]), 30_000)
    expect(second.fresh.map(({ id }) => id)).toEqual(["late"])
    expect(EventFollower.step(second.state, newestFirst([event("late", 5), event("next", 8)])).fresh).toEqual([])
    expect(first.fresh.map(({ id }) => id)).toEqual(["late", "next"])
  })

  it("events of the same instant keep the list's order, reversed (oldest first)", () => {
    const listed = [event("third", 3), event("second", 3), event("first", 3)]
    expect(EventFollower.step(EventFollower.start([]), listed).fresh.map(({ id }) => id)).toEqual([
      "first",
      "second",
      "third"
    ])
  })

  it("whatever the order events become visible in, each one inside the window is forwarded exactly once", () => {
    fc.assert(
      fc.property(
        // Creation times (seconds) of events made after the start, and the poll at which each becomes visible.
        fc.array(fc.record({ created: fc.integer({ min: 1, max: 60 }), visibleAt: fc.integer({ min: 0, max: 9 }) }), {
          maxLength: 40
        }),
        (made) => {
          const windowMs = 120_000
          const all = made.map((m, index) => ({ ...event(`e${index}`, m.created), visibleAt: m.visibleAt }))
          let state = EventFollower.start([event("before", 0)], windowMs)
          const forwarded: Array<string> = []
          for (let poll = 0; poll < 10; poll++) {
            const from = EventFollower.readFrom(state, windowMs)
            const listed = newestFirst(
              [...all.filter((e) => e.visibleAt <= poll), { ...event("before", 0), visibleAt: 0 }].filter(
                (e) => from === undefined || e.created_at >= from
              )
            )
            const next = EventFollower.step(state, listed, windowMs)
            forwarded.push(...next.fresh.map(({ id }) => id))
            state = next.state
          }
          expect([...forwarded].sort()).toEqual(all.map(({ id }) => id).sort())
        }
      )
    )
  })
})
