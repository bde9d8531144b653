import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as IdempotencyKey from "../src/idempotency/IdempotencyKey.ts"

const printable = Array.from({ length: 0x7e - 0x20 + 1 }, (_, i) => String.fromCharCode(0x20 + i)).join("")

const messageOf = (value: string): string => {
  const result = IdempotencyKey.parse(value)
  if (Result.isSuccess(result)) assert.fail(`expected ${JSON.stringify(value)} to be refused`)
  assert.strictEqual(result.failure._tag, "InvalidIdempotencyKey")
  return result.failure.message
}

const accepted = (value: string): void => {
  const result = IdempotencyKey.parse(value)
  if (Result.isFailure(result))
    assert.fail(`expected ${JSON.stringify(value)} to be accepted: ${result.failure.message}`)
  assert.strictEqual(result.success, value)
}

describe("IdempotencyKey.parse", () => {
  it("names the header and the limit", () => {
    assert.strictEqual(IdempotencyKey.headerName, "Idempotency-Key")
    assert.strictEqual(IdempotencyKey.maxLength, 255)
  })

  it("accepts 1 to 255 printable ASCII characters", () => {
    accepted("a")
    accepted(" ")
    accepted("~")
    accepted("8e2f5a8c-4c1b-4b0e-9a3e-2a1f0c9d7b61")
    accepted(printable)
    accepted("x".repeat(255))
    assert.strictEqual(printable.length, 95)
  })

  it("refuses an empty value", () => {
    assert.strictEqual(messageOf(""), "must not be empty")
  })

  it("refuses 256 characters or more", () => {
    assert.strictEqual(messageOf("x".repeat(256)), "must be at most 255 characters")
    assert.strictEqual(messageOf("x".repeat(10_000)), "must be at most 255 characters")
  })

  it("refuses characters outside 0x20–0x7E", () => {
    for (const bad of ["\u0000", "\u001f", "\t", "\n", "\r", "\u007f", "\u0080", "é", "€", "😀", "\ud800"]) {
      assert.strictEqual(messageOf(`key${bad}`), "must contain only printable ASCII characters (0x20–0x7E)")
    }
  })

  it("the schema accepts what parse accepts", () => {
    const is = Schema.is(IdempotencyKey.IdempotencyKey)
    assert.isTrue(is("abc"))
    assert.isFalse(is(""))
    assert.isFalse(is("a\nb"))
    assert.isFalse(is(42))
  })

  it("property: every string of 1–255 printable ASCII characters is accepted as is", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...printable), minLength: 1, maxLength: 255 }), (key) => {
        accepted(key)
      })
    )
  })

  it("property: a string with any other character is refused", () => {
    const other = fc
      .integer({ min: 0, max: 0xffff })
      .filter((code) => code < 0x20 || code > 0x7e)
      .map((code) => String.fromCharCode(code))
    const ascii = fc.string({ unit: fc.constantFrom(...printable), maxLength: 100 })
    fc.assert(
      fc.property(ascii, other, ascii, (before, bad, after) => {
        assert.isTrue(Result.isFailure(IdempotencyKey.parse(`${before}${bad}${after}`)))
      })
    )
  })
})
