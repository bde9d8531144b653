/**
 * Input from strangers (issue 11, points 7–9): any object key is an ordinary key, text that PostgreSQL cannot store
 * is refused where it enters, and URLs are stored WHATWG-normalised (ASCII, so they can always be a `Location`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as Text from "../src/domain/Text.ts"
import * as CreatePayment from "../src/payments/CreatePayment.ts"
import { CancelBody, CreatePaymentBody, HttpUrl, MetadataInput, RefundBody } from "../src/payments/PaymentRequests.ts"
import { validate } from "../src/payments/RequestValidation.ts"
import { settings } from "./support/payments.ts"

const prototypeKeys = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf"]
/** Any key, with Object.prototype's member names (and `__proto__`) drawn often. */
const anyKey = fc.oneof(fc.constantFrom(...prototypeKeys), fc.string(), fc.string({ unit: "grapheme" }))

/** A body as JSON.parse builds it: `__proto__` is an own property, not the prototype. */
const withKey = (base: Record<string, unknown>, key: string, value: unknown): unknown =>
  JSON.parse(JSON.stringify({ ...base, placeholder: value }).replace('"placeholder"', () => JSON.stringify(key)))

const validBody = { amount: 1500, order_reference: "order-42" }

describe("any object key is an ordinary key", () => {
  it("an unknown top-level key of any name is `validation_failed` on exactly that key, for every body", () => {
    const known = new Set([...Object.keys(CreatePaymentBody.fields), ...Object.keys(RefundBody.fields)])
    fc.assert(
      fc.property(
        anyKey.filter((key) => !known.has(key) && key !== "placeholder"),
        (key) => {
          for (const [schema, base] of [
            [CreatePaymentBody, validBody],
            [RefundBody, {}],
            [CancelBody, {}]
          ] as const) {
            const result = validate(schema)(withKey(base, key, 1))
            assert.isTrue(Result.isFailure(result))
            if (Result.isFailure(result)) {
              const { fields } = result.failure
              assert.deepStrictEqual(Object.keys(fields), [key])
              assert.deepStrictEqual(fields[key], ["is not a known field"])
            }
          }
        }
      ),
      { numRuns: 300 }
    )
  })

  it("the create rules report such a key as an invalid field, next to the currency rule", () => {
    for (const key of prototypeKeys) {
      const result = CreatePayment.decide(withKey({ ...validBody, currency: "XXX" }, key, 1), settings)
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result) && result.failure._tag === "ValidationFailed") {
        assert.deepStrictEqual(Object.keys(result.failure.fields).sort(), ["currency", key].sort())
      } else assert.fail("expected validation_failed")
    }
  })

  it("a metadata key of any storable name is kept as an own key with its value", () => {
    fc.assert(
      fc.property(
        anyKey.filter((key) => key.length <= 40 && Text.isStorable(key)),
        fc.string({ maxLength: 20 }).filter(Text.isStorable),
        (key, value) => {
          const decoded = validate(MetadataInput)(withKey({}, key, value))
          assert.isTrue(Result.isSuccess(decoded))
          if (Result.isSuccess(decoded)) {
            assert.deepStrictEqual(Object.keys(decoded.success), [key])
            assert.isTrue(Object.hasOwn(decoded.success, key))
            assert.strictEqual(Object.getOwnPropertyDescriptor(decoded.success, key)?.value, value)
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})

/** A string with U+0000 or an unpaired surrogate somewhere in it. */
const unstorable = fc
  .tuple(fc.string(), fc.constantFrom("\u0000", "\ud800", "\udbff", "\udc00", "\udfff"), fc.string())
  .map(([before, bad, after]) => `${before}${bad}${after}`)
  .filter((value) => !Text.isStorable(value))

describe("text PostgreSQL cannot store is refused where it enters", () => {
  it("isStorable holds exactly for text without U+0000 and unpaired surrogates (pairs are fine)", () => {
    assert.isTrue(Text.isStorable("emoji 😀, ü, \u2028"))
    assert.isFalse(Text.isStorable("a\u0000"))
    assert.isFalse(Text.isStorable("\ud83d"))
    assert.isFalse(Text.isStorable("\ude00x"))
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (value) => Text.isStorable(value)),
      { numRuns: 300 }
    )
    fc.assert(
      fc.property(unstorable, (value) => !Text.isStorable(value)),
      { numRuns: 300 }
    )
  })

  it("toStorable keeps the length and makes any string storable", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), unstorable), (value) => {
        const storable = Text.toStorable(value)
        return Text.isStorable(storable) && storable.length === value.length
      }),
      { numRuns: 300 }
    )
  })

  it("every text field of a create is validation_failed naming the field", () => {
    const place: ReadonlyArray<readonly [string, (bad: string) => Record<string, unknown>]> = [
      ["order_reference", (bad) => ({ order_reference: bad })],
      ["description", (bad) => ({ description: bad })],
      ["customer.name", (bad) => ({ customer: { name: bad } })],
      ["customer.email", (bad) => ({ customer: { email: `a${bad}@shop.example` } })],
      ["metadata.k", (bad) => ({ metadata: { k: bad } })],
      ["return_url", (bad) => ({ return_url: `https://shop.example/${bad}` })]
    ]
    fc.assert(
      fc.property(
        unstorable.filter((value) => value.length <= 200),
        (bad) => {
          for (const [field, body] of place) {
            const result = validate(CreatePaymentBody)({ ...validBody, ...body(bad) })
            assert.isTrue(Result.isFailure(result), field)
            if (Result.isFailure(result)) assert.include(Object.keys(result.failure.fields), field)
          }
          const refund = validate(RefundBody)({ reason: bad })
          assert.isTrue(Result.isFailure(refund) && Object.keys(refund.failure.fields).includes("reason"))
        }
      ),
      { numRuns: 100 }
    )
  })
})

describe("URLs are stored WHATWG-normalised", () => {
  const decodeUrl = Schema.decodeUnknownResult(HttpUrl)

  it("an accepted URL decodes to printable ASCII that decodes to itself", () => {
    fc.assert(
      fc.property(
        fc.webUrl({ withQueryParameters: true, withFragments: true }),
        fc.string({ unit: "grapheme", maxLength: 10 }),
        (url, tail) => {
          const decoded = decodeUrl(`${url}${tail}`)
          if (Result.isFailure(decoded)) return true
          return (
            /^[\x21-\x7e]+$/.test(decoded.success) && Result.getOrThrow(decodeUrl(decoded.success)) === decoded.success
          )
        }
      ),
      { numRuns: 300 }
    )
  })

  it("Schema.is still tells a URL from any string (the dashboard's webhook form relies on it)", () => {
    const isUrl = Schema.is(HttpUrl)
    assert.isTrue(isUrl("https://shop.example/hooks"))
    for (const bad of ["not a url", "ftp://shop.example/", "https://shop.example/\n", ""])
      assert.isFalse(isUrl(bad), bad)
  })

  it("non-ASCII and line separators are percent-encoded, the host lower-cased; control characters are refused", () => {
    assert.strictEqual(
      Result.getOrThrow(decodeUrl("https://SHOP.example/é\u2028?q=ü")),
      "https://shop.example/%C3%A9%E2%80%A8?q=%C3%BC"
    )
    for (const bad of [
      "https://shop.example/a\r\nb",
      "https://shop.example/\n",
      "https://shop.example/\t",
      "https://shop.example/\u0000"
    ]) {
      assert.isTrue(Result.isFailure(decodeUrl(bad)), JSON.stringify(bad))
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x1f }), fc.string({ maxLength: 10 }), (code, tail) =>
        Result.isFailure(decodeUrl(`https://shop.example/${String.fromCharCode(code)}${tail}`))
      ),
      { numRuns: 100 }
    )
  })
})
