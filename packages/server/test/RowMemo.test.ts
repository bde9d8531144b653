/**
 * RowMemo hands back what the row schema's decoder gives, row after row: the same value for an unchanged row, a new
 * decode for any changed column (values, `Date`s, arrays), the decoder's failure for a row that does not decode, and
 * nothing stale once an identity is forgotten past the limit; `makeWith`'s projection made once per decode.
 */
import { Effect, Exit, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Columns from "../src/database/Columns.ts"
import * as RowMemo from "../src/database/RowMemo.ts"

const Row = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: Schema.Literals(["active", "suspended"]),
  amount: Columns.Integer,
  created_at: Columns.Timestamp,
  tags: Columns.StringArray,
  note: Columns.orNull(Schema.String)
})
const decode = Schema.decodeUnknownEffect(Row)

// Few distinct values, so that a sequence of rows often repeats a row, or changes one column of it.
const row = fc.record({
  id: fc.constantFrom("a", "b", "c"),
  name: fc.constantFrom("Shop", "Store"),
  status: fc.constantFrom("active", "suspended", "gone"),
  amount: fc.oneof(fc.constantFrom(1n, 2n, 2 ** 60), fc.constantFrom(1, 2)),
  created_at: fc.constantFrom(0, 1, 86_400_000).map((time) => new Date(time)),
  tags: fc.constantFrom([], ["x"], ["x", "y"], ["y", "x"], [1]),
  note: fc.constantFrom(null, "n"),
  unread: fc.constantFrom(1, 2)
})

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runSyncExit(effect)

describe("RowMemo", () => {
  it("decodes every row of a sequence as the schema does", () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 30 }), fc.integer({ min: 1, max: 3 }), (rows, limit) => {
        const memo = RowMemo.make(Row, (input) => input.id, limit)
        for (const input of rows) {
          const expected = run(decode(input))
          const actual = run(memo(input))
          expect(Exit.isSuccess(actual)).toBe(Exit.isSuccess(expected))
          if (Exit.isSuccess(actual) && Exit.isSuccess(expected)) expect(actual.value).toEqual(expected.value)
        }
      })
    )
  })

  it("hands back the remembered value for an unchanged row, and decodes a changed one again", () => {
    const memo = RowMemo.make(Row, (input) => input.id)
    const input = {
      id: "a",
      name: "Shop",
      status: "active",
      amount: 5n,
      created_at: new Date(0),
      tags: ["x"],
      note: null,
      unread: 1
    }
    const first = Effect.runSync(memo(input))
    // Equal columns in new objects (a new row from the driver), and a column the schema does not read changed.
    expect(Effect.runSync(memo({ ...input, created_at: new Date(0), tags: ["x"], unread: 2 }))).toBe(first)
    const changed = Effect.runSync(memo({ ...input, created_at: new Date(1) }))
    expect(changed).not.toBe(first)
    expect(changed.created_at.epochMilliseconds).toBe(1)
    expect(Effect.runSync(memo({ ...input, tags: ["x", "y"] })).tags).toEqual(["x", "y"])
  })

  it("projects each decoded row once: the same projection for an unchanged row, a new one for a changed row", () => {
    let projections = 0
    const memo = RowMemo.makeWith(
      Row,
      (input) => input.id,
      ({ id, ...rest }) => {
        projections++
        return { id, rest }
      }
    )
    const input = { id: "b", name: "Store", status: "active", amount: 7, created_at: new Date(5), tags: [], note: "n" }
    const first = Effect.runSync(memo(input))
    const { id: _, ...decoded } = Effect.runSync(decode(input))
    expect(first).toEqual({ id: "b", rest: decoded })
    expect(Effect.runSync(memo({ ...input, tags: [] }))).toBe(first)
    expect(projections).toBe(1)
    const changed = Effect.runSync(memo({ ...input, note: null }))
    expect(changed).not.toBe(first)
    expect(changed.rest.note).toBeNull()
    expect(projections).toBe(2)
  })
})
