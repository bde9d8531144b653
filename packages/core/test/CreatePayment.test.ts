import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import type { ApplicationSettings } from "../src/domain/Application.ts"
import * as CreatePayment from "../src/payments/CreatePayment.ts"
import { CreatePaymentBody } from "../src/payments/PaymentRequests.ts"
import { settings } from "./support/payments.ts"

const valid = { amount: 1500, order_reference: "order-42" }
const failure = (body: unknown, app: ApplicationSettings = settings) => {
  const result = CreatePayment.decide(body, app)
  if (Result.isSuccess(result)) throw new Error("expected a rejection")
  return result.failure
}
const success = (body: unknown, app: ApplicationSettings = settings) => {
  const result = CreatePayment.decide(body, app)
  if (Result.isFailure(result)) throw new Error(`expected success, got ${JSON.stringify(result.failure)}`)
  return result.success
}
const fieldsOf = (body: unknown, app: ApplicationSettings = settings) => {
  const error = failure(body, app)
  assert.strictEqual(error._tag, "ValidationFailed")
  return error._tag === "ValidationFailed" ? error.fields : {}
}

describe("defaults", () => {
  it("fills currency, method, locale, customer, description, return_url and metadata", () => {
    assert.deepStrictEqual(success(valid), {
      amount: 1500,
      currency: "EUR",
      method: "card",
      order_reference: "order-42",
      description: null,
      customer: { name: null, email: null, phone: null },
      locale: "en",
      return_url: null,
      metadata: {}
    })
  })

  it("keeps what the application sent", () => {
    const draft = success({
      ...valid,
      currency: "USD",
      method: "card",
      description: "Two mugs",
      customer: { email: "ada@example.com", phone: "+31 20 123 4567" },
      locale: "nl-NL",
      return_url: "https://SHOP.example/thanks?order=42",
      metadata: { cart: "c-1", items: 2, gift: false, note: null }
    })
    assert.strictEqual(draft.currency, "USD")
    assert.deepStrictEqual(draft.customer, { name: null, email: "ada@example.com", phone: "+31 20 123 4567" })
    assert.strictEqual(draft.locale, "nl-NL")
    // Kept as the WHATWG parser normalises it (host lower-cased): what is stored, answered and redirected to.
    assert.strictEqual(draft.return_url, "https://shop.example/thanks?order=42")
    assert.deepStrictEqual(draft.metadata, { cart: "c-1", items: 2, gift: false, note: null })
  })
})

describe("validation_failed", () => {
  it("reports every invalid field together", () => {
    const fields = fieldsOf({
      amount: 12.5,
      order_reference: "",
      currency: "eur",
      method: "Card!",
      description: "x".repeat(1001),
      customer: { email: "not-an-email", phone: "call me", name: "y".repeat(256) },
      locale: "english",
      return_url: "ftp://shop.example/x",
      metadata: { ["k".repeat(41)]: "v" },
      colour: "blue"
    })
    assert.deepStrictEqual(Object.keys(fields).sort(), [
      "amount",
      "colour",
      "currency",
      "customer.email",
      "customer.name",
      "customer.phone",
      "description",
      "locale",
      "metadata.kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
      "method",
      "order_reference",
      "return_url"
    ])
    assert.deepStrictEqual(fields.colour, ["is not a known field"])
  })

  it("requires amount and order_reference", () => {
    const fields = fieldsOf({})
    assert.deepStrictEqual(fields.amount, ["is required"])
    assert.deepStrictEqual(fields.order_reference, ["is required"])
  })

  it.each([0, -5, 2 ** 53, "100", null, 1.5])("amount %s is invalid", (amount) => {
    assert.property(fieldsOf({ ...valid, amount }), "amount")
  })

  it("accepts the largest exact amount 2^53−1 when the application allows it", () => {
    const app = { ...settings, max_amount: Number.MAX_SAFE_INTEGER }
    assert.strictEqual(success({ ...valid, amount: Number.MAX_SAFE_INTEGER }, app).amount, Number.MAX_SAFE_INTEGER)
  })

  it("a body that is not an object is reported as body", () => {
    for (const body of [null, [], "text", 42]) assert.property(fieldsOf(body), "body")
  })

  it("refuses a currency the application does not offer", () => {
    assert.property(fieldsOf({ ...valid, currency: "GBP" }), "currency")
  })

  it("metadata: at most 50 keys, values string ≤ 500, number, boolean or null", () => {
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]))
    assert.property(fieldsOf({ ...valid, metadata: many }), "metadata")
    assert.property(fieldsOf({ ...valid, metadata: { long: "x".repeat(501) } }), "metadata.long")
    assert.property(fieldsOf({ ...valid, metadata: { nested: { a: 1 } } }), "metadata.nested")
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, "x".repeat(500)]))
    assert.strictEqual(Object.keys(success({ ...valid, metadata: fifty }).metadata).length, 50)
  })

  it("order_reference may be 255 characters, not 256", () => {
    assert.strictEqual(success({ ...valid, order_reference: "r".repeat(255) }).order_reference.length, 255)
    assert.property(fieldsOf({ ...valid, order_reference: "r".repeat(256) }), "order_reference")
  })

  it("is deterministic: the same body always gives the same answer (retry rule 3)", () => {
    const body = { amount: "x", order_reference: 5 }
    assert.deepStrictEqual(failure(body), failure(body))
  })
})

describe("method rules", () => {
  const several = { ...settings, methods: ["card", "ideal"] }
  it("method_required when the application offers several and none is sent", () => {
    assert.strictEqual(failure(valid, several)._tag, "MethodRequired")
  })
  it("a sent method is used when enabled", () => {
    assert.strictEqual(success({ ...valid, method: "ideal" }, several).method, "ideal")
  })
  it("method_not_enabled for a method the application does not offer", () => {
    assert.strictEqual(failure({ ...valid, method: "paypal" })._tag, "MethodNotEnabled")
  })
  it("method_not_enabled when the application offers none, with or without a method", () => {
    const none = { ...settings, methods: [] }
    assert.strictEqual(failure(valid, none)._tag, "MethodNotEnabled")
    assert.strictEqual(failure({ ...valid, method: "card" }, none)._tag, "MethodNotEnabled")
  })
})

describe("amount bounds", () => {
  it("below the minimum gives amount_below_minimum with min_amount", () => {
    const error = failure({ ...valid, amount: 99 })
    assert.strictEqual(error._tag, "AmountBelowMinimum")
    assert.strictEqual(error._tag === "AmountBelowMinimum" ? error.min_amount : null, 100)
  })
  it("above the maximum gives amount_above_maximum with max_amount", () => {
    const error = failure({ ...valid, amount: 10_000_001 })
    assert.strictEqual(error._tag, "AmountAboveMaximum")
    assert.strictEqual(error._tag === "AmountAboveMaximum" ? error.max_amount : null, 10_000_000)
  })
  it("the bounds themselves are allowed", () => {
    assert.strictEqual(success({ ...valid, amount: 100 }).amount, 100)
    assert.strictEqual(success({ ...valid, amount: 10_000_000 }).amount, 10_000_000)
  })
})

describe("return_url", () => {
  it("another host gives return_url_not_allowed", () => {
    assert.strictEqual(failure({ ...valid, return_url: "https://evil.example/x" })._tag, "ReturnUrlNotAllowed")
    assert.strictEqual(
      failure({ ...valid, return_url: "https://shop.example.evil.example/" })._tag,
      "ReturnUrlNotAllowed"
    )
  })
  it("the host compares case-insensitively, on any port when none is registered", () => {
    assert.strictEqual(
      success({ ...valid, return_url: "http://Shop.Example:8080/x" }).return_url,
      "http://shop.example:8080/x"
    )
  })
  it("a registered port must match", () => {
    const app = { ...settings, return_url_host: "shop.example:8443" }
    assert.strictEqual(
      success({ ...valid, return_url: "https://shop.example:8443/r" }, app).return_url,
      "https://shop.example:8443/r"
    )
    assert.strictEqual(failure({ ...valid, return_url: "https://shop.example/r" }, app)._tag, "ReturnUrlNotAllowed")
  })
  it("without a registered host no return_url is allowed, but omitting it is fine", () => {
    const app = { ...settings, return_url_host: null }
    assert.strictEqual(failure({ ...valid, return_url: "https://shop.example/x" }, app)._tag, "ReturnUrlNotAllowed")
    assert.isNull(success(valid, app).return_url)
  })
})

describe("check order (decisions §2)", () => {
  const several = { ...settings, methods: ["card", "ideal"] }
  it("validation_failed comes before method_required", () => {
    assert.strictEqual(failure({ amount: 5, order_reference: "" }, several)._tag, "ValidationFailed")
  })
  it("method comes before the amount bounds", () => {
    assert.strictEqual(failure({ ...valid, amount: 1 }, several)._tag, "MethodRequired")
    assert.strictEqual(failure({ ...valid, amount: 1, method: "paypal" })._tag, "MethodNotEnabled")
  })
  it("amount bounds come before return_url", () => {
    assert.strictEqual(failure({ ...valid, amount: 1, return_url: "https://evil.example" })._tag, "AmountBelowMinimum")
  })
  it("order_reference is checked last, against the stored payments", () => {
    assert.isTrue(Result.isSuccess(CreatePayment.checkOrderReference(null)))
    const blocked = CreatePayment.checkOrderReference({ id: "0b0e1f6e-2f4c-4a53-9a34-3cf0d2b0c001" })
    assert.isTrue(Result.isFailure(blocked))
    if (Result.isFailure(blocked)) {
      assert.strictEqual(blocked.failure._tag, "OrderReferenceAlreadyPaid")
      assert.strictEqual(blocked.failure.payment_id, "0b0e1f6e-2f4c-4a53-9a34-3cf0d2b0c001")
    }
  })
})

describe("decideBody (a body the API already decoded)", () => {
  // The API decodes the body as the core's `decide` does (HttpApi's PayloadParseOptions), then hands it on.
  const decodeAsTheApi = Schema.decodeUnknownResult(CreatePaymentBody, { errors: "all", onExcessProperty: "error" })
  const optional = <A>(arbitrary: fc.Arbitrary<A>) => fc.option(arbitrary, { nil: undefined })
  const bodies = fc.record(
    {
      amount: fc.oneof(fc.integer({ min: -5, max: 20_000_000 }), fc.constant(2 ** 53 - 1)),
      currency: optional(fc.constantFrom("EUR", "USD", "JPY", "eur")),
      method: optional(fc.constantFrom("card", "ideal", "paypal")),
      order_reference: fc.string({ minLength: 0, maxLength: 8 }),
      return_url: optional(fc.constantFrom(null, "https://shop.example/done", "https://elsewhere.example/")),
      locale: optional(fc.constantFrom("nl", "de-DE")),
      metadata: optional(fc.constantFrom(null, {}, { order: 7 }))
    },
    { requiredKeys: [] }
  )
  const applications = fc.record({
    methods: fc.subarray(["card", "ideal", "paypal"]),
    currencies: fc.subarray(["EUR", "USD", "JPY"], { minLength: 1 })
  })

  it("answers every decodable body as decide answers the body as sent", () => {
    fc.assert(
      fc.property(bodies, applications, (body, offered) => {
        const app: ApplicationSettings = { ...settings, ...offered }
        const decoded = decodeAsTheApi(body)
        if (Result.isFailure(decoded)) return
        assert.deepStrictEqual(CreatePayment.decideBody(decoded.success, app), CreatePayment.decide(body, app))
      }),
      { numRuns: 500 }
    )
  })

  it("refuses a currency the application does not offer as validation_failed on currency alone", () => {
    const result = CreatePayment.decideBody({ amount: 1500, order_reference: "o", currency: "JPY" }, settings)
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result) && result.failure._tag === "ValidationFailed") {
      assert.deepStrictEqual(Object.keys(result.failure.fields), ["currency"])
    } else assert.fail("expected validation_failed")
  })
})
