import { isDeepStrictEqual } from "node:util"
import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as CanonicalJson from "../src/idempotency/CanonicalJson.ts"

const canonical = (value: unknown): string => {
  const result = CanonicalJson.canonicalize(value)
  if (Result.isFailure(result)) assert.fail(`unexpected failure: ${result.failure.message}`)
  return result.success
}

const failure = (value: unknown): CanonicalJson.NonJsonValue => {
  const result = CanonicalJson.canonicalize(value)
  if (Result.isSuccess(result)) assert.fail(`expected a failure, got ${result.success}`)
  return result.failure
}

// What JSON itself can tell apart: JSON.stringify then JSON.parse (maps -0 to 0, keeps own "__proto__" keys).
const normalize = (value: Schema.Json): unknown => JSON.parse(JSON.stringify(value))

// mulberry32: a tiny seeded generator so a key permutation is reproducible from the property's seed.
const seeded = (seed: number) => {
  let state = seed >>> 0
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// Rebuilds every object with its keys in a random order (Object.fromEntries keeps "__proto__" an own key).
const permuteKeys = (value: Schema.Json, next: () => number): Schema.Json => {
  if (Array.isArray(value)) return value.map((item: Schema.Json) => permuteKeys(item, next))
  if (value === null || typeof value !== "object") return value
  const entries = Object.entries(value)
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    const a = entries[i]
    const b = entries[j]
    if (a !== undefined && b !== undefined) {
      entries[i] = b
      entries[j] = a
    }
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, permuteKeys(item, next)]))
}

// [1, <hole>, 3], built without a literal hole.
const holey = (): Array<number> => {
  const array = new Array<number>(3)
  array[0] = 1
  array[2] = 3
  return array
}

describe("CanonicalJson.canonicalize", () => {
  it("sorts keys, drops white space and keeps array order", () => {
    assert.strictEqual(canonical({ b: 1, a: { d: [3, 1, 2], c: null } }), `{"a":{"c":null,"d":[3,1,2]},"b":1}`)
    assert.strictEqual(canonical(JSON.parse(' {\n "b" : 1 ,\t"a" : [ true , false ] } ')), `{"a":[true,false],"b":1}`)
  })

  it("writes the scalars and empty containers", () => {
    assert.strictEqual(canonical(null), "null")
    assert.strictEqual(canonical(true), "true")
    assert.strictEqual(canonical(false), "false")
    assert.strictEqual(canonical("x"), `"x"`)
    assert.strictEqual(canonical(0), "0")
    assert.strictEqual(canonical({}), "{}")
    assert.strictEqual(canonical([]), "[]")
    assert.strictEqual(canonical([{}, []]), "[{},[]]")
  })

  it("matches the RFC 8785 §3.2.2 example", () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
    assert.strictEqual(canonical(JSON.parse(input)), expected)
  })

  it("sorts keys by UTF-16 code units, not code points (RFC 8785 §3.2.3 example)", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }
    const keys = Object.keys(JSON.parse(canonical(input)))
    // Integer-like keys come first in JS objects whatever the insertion order, so compare the text itself.
    assert.deepStrictEqual(keys.sort(), Object.keys(input).sort())
    const order = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"].map((key) => JSON.stringify(key))
    const text = canonical(input)
    const positions = order.map((key) => text.indexOf(`${key}:`))
    assert.deepStrictEqual(
      positions,
      [...positions].sort((a, b) => a - b)
    )
    assert.isTrue(positions.every((position) => position >= 0))
  })

  it("prints numbers as JSON.stringify does", () => {
    assert.strictEqual(
      canonical([-0, 1.0, 1e21, 1e-7, 0.1, -1.5e-10, 2 ** 53 - 1]),
      "[0,1,1e+21,1e-7,0.1,-1.5e-10,9007199254740991]"
    )
    assert.strictEqual(canonical(Number.MAX_VALUE), "1.7976931348623157e+308")
    assert.strictEqual(canonical(Number.MIN_VALUE), "5e-324")
  })

  it("escapes strings as JSON.stringify does", () => {
    assert.strictEqual(canonical('\u0000\u001f"\\\n\t/'), String.raw`"\u0000\u001f\"\\\n\t/"`)
    assert.strictEqual(canonical("\u2028é😀"), `"\u2028é😀"`)
    // A lone surrogate is escaped (well-formed JSON.stringify), so it stays distinct from any other string.
    assert.strictEqual(canonical("\ud800"), String.raw`"\ud800"`)
    assert.strictEqual(canonical({ "a\nb": 1 }), String.raw`{"a\nb":1}`)
  })

  it("keeps an own __proto__ key and accepts null-prototype objects", () => {
    assert.strictEqual(canonical(JSON.parse(`{"b":2,"__proto__":{"x":1}}`)), `{"__proto__":{"x":1},"b":2}`)
    const bare = Object.create(null) as Record<string, unknown>
    bare.z = 1
    bare.a = 2
    assert.strictEqual(canonical(bare), `{"a":2,"z":1}`)
  })

  it("accepts a value shared by two branches (not a cycle)", () => {
    const shared = { a: 1 }
    assert.strictEqual(canonical([shared, { shared }]), `[{"a":1},{"shared":{"a":1}}]`)
  })

  describe("refuses values that have no JSON form", () => {
    const cases: ReadonlyArray<readonly [string, unknown, string]> = [
      ["undefined", undefined, ""],
      ["NaN", Number.NaN, ""],
      ["Infinity", Number.POSITIVE_INFINITY, ""],
      ["-Infinity", Number.NEGATIVE_INFINITY, ""],
      ["a bigint", 1n, ""],
      ["a function", () => 1, ""],
      ["a symbol", Symbol("s"), ""],
      ["a Date", new Date(0), ""],
      ["a Map", new Map(), ""],
      ["a class instance", new (class Point {})(), ""],
      ["undefined in an object", { a: { b: undefined } }, "/a/b"],
      ["NaN in an array", [1, [2, Number.NaN]], "/1/1"],
      ["a hole in an array", holey(), "/1"],
      ["a bigint under an escaped key", { "a/b": { "c~d": 2n } }, "/a~1b/c~0d"]
    ]
    for (const [name, value, path] of cases) {
      it(name, () => {
        const error = failure(value)
        assert.strictEqual(error._tag, "NonJsonValue")
        assert.strictEqual(error.path, path)
        assert.include(error.message, path || "(root)")
      })
    }

    it("a symbol key", () => {
      assert.strictEqual(failure({ a: 1, [Symbol("s")]: 2 })._tag, "NonJsonValue")
    })

    it(`nesting deeper than ${CanonicalJson.maxDepth} levels, without overflowing the stack`, () => {
      const nest = (depth: number): unknown => {
        let value: unknown = 0
        for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value }
        return value
      }
      assert.strictEqual(CanonicalJson.maxDepth, 512)
      assert.isTrue(Result.isSuccess(CanonicalJson.canonicalize(nest(CanonicalJson.maxDepth))))
      assert.include(failure(nest(CanonicalJson.maxDepth + 1)).message, "nested deeper than 512 levels")
      const deep = JSON.parse(`${"[".repeat(200_000)}${"]".repeat(200_000)}`)
      assert.strictEqual(failure(deep)._tag, "NonJsonValue")
    })

    it("a cycle", () => {
      const cyclic: Record<string, unknown> = { a: [] }
      cyclic.self = { back: cyclic }
      const error = failure(cyclic)
      assert.strictEqual(error.path, "/self/back")
      assert.include(error.message, "circular")
    })
  })

  describe("properties", () => {
    it.prop("round-trips: JSON.parse of the output is the input", [Schema.Json], ([value]) => {
      assert.isTrue(isDeepStrictEqual(JSON.parse(canonical(value)), normalize(value)))
    })

    it.prop("is idempotent", [Schema.Json], ([value]) => {
      const once = canonical(value)
      assert.strictEqual(canonical(JSON.parse(once)), once)
    })

    it.prop("ignores white space", [Schema.Json], ([value]) => {
      const expected = canonical(value)
      assert.strictEqual(canonical(JSON.parse(JSON.stringify(value, null, 2))), expected)
      assert.strictEqual(canonical(JSON.parse(JSON.stringify(value, null, "\t \n"))), expected)
    })

    it.prop("ignores key order", [Schema.Json, Schema.Int], ([value, seed]) => {
      const permuted = permuteKeys(value, seeded(seed))
      assert.strictEqual(canonical(permuted), canonical(value))
    })

    it.prop("tells different values apart", [Schema.Json, Schema.Json], ([a, b]) => {
      const same = isDeepStrictEqual(normalize(a), normalize(b))
      assert.strictEqual(canonical(a) === canonical(b), same)
    })

    it.prop("tells a value from a one-element change of it", [Schema.Json], ([value]) => {
      assert.notStrictEqual(canonical([value, 0]), canonical([value, 1]))
      assert.notStrictEqual(canonical({ k: value }), canonical({ k: value, l: null }))
      assert.notStrictEqual(canonical({ k: value }), canonical({ K: value }))
    })

    it.prop("has no white space outside strings", [Schema.Json], ([value]) => {
      const outsideStrings = canonical(value).replace(/"(?:[^"\\]|\\.)*"/g, "")
      assert.notMatch(outsideStrings, /\s/)
    })
  })
})
