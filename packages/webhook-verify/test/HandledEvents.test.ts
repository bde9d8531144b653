import { type HandledEventStore, InMemoryHandledEventStore } from "@kassa/webhook-verify"
import { describe, expect, it } from "vitest"

const clock = (start = 0) => {
  let now = start
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms
    }
  }
}

describe("InMemoryHandledEventStore", () => {
  it("remembers added ids", () => {
    const store: HandledEventStore = new InMemoryHandledEventStore()
    expect(store.has("evt_1")).toBe(false)
    store.add("evt_1")
    expect(store.has("evt_1")).toBe(true)
    expect(store.has("evt_2")).toBe(false)
  })

  it("remembers ids for 48 hours by default, covering Kassa's 24-hour retries", () => {
    const time = clock()
    const store = new InMemoryHandledEventStore({ now: time.now })
    store.add("evt_1")
    time.advance(48 * 3600 * 1000 - 1)
    expect(store.has("evt_1")).toBe(true)
    time.advance(1)
    expect(store.has("evt_1")).toBe(false)
    expect(store.size).toBe(0)
  })

  it("forgets ids after a custom TTL, and adding again restarts it", () => {
    const time = clock()
    const store = new InMemoryHandledEventStore({ ttlSeconds: 10, now: time.now })
    store.add("evt_1")
    store.add("evt_2")
    time.advance(6_000)
    store.add("evt_1")
    time.advance(5_000)
    expect(store.has("evt_1")).toBe(true)
    expect(store.has("evt_2")).toBe(false)
  })

  it("keeps at most maxSize ids, forgetting the oldest first", () => {
    const store = new InMemoryHandledEventStore({ maxSize: 3 })
    for (const id of ["evt_1", "evt_2", "evt_3", "evt_4"]) store.add(id)
    expect(store.size).toBe(3)
    expect(store.has("evt_1")).toBe(false)
    expect(["evt_2", "evt_3", "evt_4"].every((id) => store.has(id))).toBe(true)
  })

  it.each([[{ maxSize: 0 }], [{ maxSize: 1.5 }], [{ ttlSeconds: 0 }], [{ ttlSeconds: Number.NaN }]])(
    "rejects invalid options %j",
    (options) => {
      expect(() => new InMemoryHandledEventStore(options)).toThrow(RangeError)
    }
  )

  it("fits an asynchronous store behind the same interface", async () => {
    const ids = new Set<string>()
    const database: HandledEventStore = {
      has: async (id) => ids.has(id),
      add: async (id) => {
        ids.add(id)
      }
    }
    await database.add("evt_1")
    expect(await database.has("evt_1")).toBe(true)
  })
})
