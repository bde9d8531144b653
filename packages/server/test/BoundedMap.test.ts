/** BoundedMap keeps at most its capacity, dropping the key set longest ago; a `set` makes a key the newest. */
import { describe, expect, it } from "vitest"
import { BoundedMap } from "../src/support/BoundedMap.ts"

describe("BoundedMap", () => {
  it("drops the key set longest ago past its capacity, a set moving a key to the newest", () => {
    const map = new BoundedMap<string, number>(2)
    map.set("a", 1)
    map.set("b", 2)
    map.set("a", 3)
    map.set("c", 4)
    expect([map.get("a"), map.get("b"), map.get("c")]).toEqual([3, undefined, 4])
    map.set("d", 5)
    expect([map.get("a"), map.get("c"), map.get("d")]).toEqual([undefined, 4, 5])
  })

  it("deletes one key, or every key a predicate picks", () => {
    const map = new BoundedMap<string, number>(10)
    for (const key of ["x\none", "y\none", "x\ntwo"]) map.set(key, 1)
    map.deleteWhere((key) => key.endsWith("\none"))
    map.delete("missing")
    expect([map.get("x\none"), map.get("y\none"), map.get("x\ntwo")]).toEqual([undefined, undefined, 1])
  })
})
