import { assert, describe, it } from "@effect/vitest"
import * as ApiError from "../src/errors/ApiError.ts"

// The specification's Errors table (plus payment_not_pending from decisions §1): code → status.
const specification: ReadonlyArray<readonly [string, number]> = [
  ["unauthenticated", 401],
  ["invalid_api_key", 401],
  ["application_disabled", 403],
  ["application_pending_review", 403],
  ["application_suspended", 403],
  ["ip_not_allowed", 403],
  ["not_found", 404],
  ["order_reference_already_paid", 409],
  ["idempotency_key_reused", 409],
  ["idempotency_request_in_progress", 409],
  ["payment_not_cancellable", 409],
  ["payment_not_refundable", 409],
  ["payment_not_pending", 409],
  ["payment_busy", 409],
  ["validation_failed", 422],
  ["method_required", 422],
  ["method_not_enabled", 422],
  ["amount_below_minimum", 422],
  ["amount_above_maximum", 422],
  ["return_url_not_allowed", 422],
  ["refund_amount_exceeds_refundable", 422],
  ["refunds_processed_manually", 422],
  ["rate_limited", 429],
  ["provider_error", 502],
  ["server_error", 500],
  ["http_error", 400]
]

describe("the error catalogue", () => {
  it("has exactly the specification's codes and statuses", () => {
    const catalogued = Object.values(ApiError.catalogue).map(({ code, status }) => [code, status] as const)
    assert.deepStrictEqual([...catalogued].sort(), [...specification].sort())
  })

  it("gives every code exactly one status, and every row the class of its own tag", () => {
    const rows = Object.entries(ApiError.catalogue)
    const codes = rows.map(([, { code }]) => code)
    assert.strictEqual(new Set(codes).size, codes.length, "a code stands in two rows")
    for (const [tag, row] of rows) {
      assert.isTrue(Number.isInteger(row.status) && row.status >= 400 && row.status <= 599, row.code)
      assert.strictEqual(row.error.identifier, tag)
      assert.strictEqual(ApiError.byCode[row.code as ApiError.ErrorCode], row)
      assert.include(["never", "wait", "backoff"], row.retry, row.code)
      assert.isNotEmpty(row.description, row.code)
    }
  })

  it("retries as the specification's retry rules say", () => {
    const retried = Object.values(ApiError.catalogue).filter(({ retry }) => retry !== "never")
    assert.sameMembers(
      retried.map(({ code, retry }) => `${code} ${retry}`),
      [
        // Rule 1's exceptions: the same request may get another answer after a wait.
        "idempotency_request_in_progress wait",
        "payment_busy wait",
        "rate_limited wait",
        // Rule 2: 5xx may be retried, except provider_error, final for its Idempotency-Key (a new payment needs a
        // new key).
        "server_error backoff"
      ]
    )
  })

  it("each class carries its status for HttpApi", () => {
    assert.strictEqual(ApiError.statusOf(new ApiError.NotFound({ message: "m" })), 404)
    assert.strictEqual(ApiError.statusOf(new ApiError.HttpError({ message: "m", httpStatus: 405 })), 405)
    assert.strictEqual(ApiError.statusOf(new ApiError.ProviderError({ message: "m" })), 502)
  })
})

describe("toWire", () => {
  it("adds exactly the fields of the error's row", () => {
    const cases: ReadonlyArray<readonly [ApiError.ApiError, Record<string, unknown>]> = [
      [new ApiError.OrderReferenceAlreadyPaid({ message: "m", payment_id: "p" }), { payment_id: "p" }],
      [new ApiError.PaymentNotCancellable({ message: "m", status: "paid" }), { status: "paid" }],
      [new ApiError.PaymentNotRefundable({ message: "m", status: "pending" }), { status: "pending" }],
      [new ApiError.PaymentNotPending({ message: "m", status: "expired" }), { status: "expired" }],
      [
        new ApiError.ValidationFailed({ message: "m", fields: { amount: ["is required"] } }),
        { fields: { amount: ["is required"] } }
      ],
      [new ApiError.AmountBelowMinimum({ message: "m", min_amount: 100 }), { min_amount: 100 }],
      [new ApiError.AmountAboveMaximum({ message: "m", max_amount: 9 }), { max_amount: 9 }],
      [new ApiError.RefundAmountExceedsRefundable({ message: "m", refundable_amount: 0 }), { refundable_amount: 0 }],
      [new ApiError.RefundsProcessedManually({ message: "m", docs_url: "u" }), { docs_url: "u" }],
      [new ApiError.ProviderError({ message: "m", payment_id: "p" }), { payment_id: "p" }],
      [new ApiError.ProviderError({ message: "m" }), {}],
      [new ApiError.RateLimited({ message: "m", retryAfterSeconds: 3 }), {}],
      [new ApiError.HttpError({ message: "m", httpStatus: 415 }), {}],
      [new ApiError.Unauthenticated({ message: "m" }), {}]
    ]
    for (const [error, added] of cases) {
      const { code, message, ...rest } = ApiError.toWire(error).error
      assert.strictEqual(code, ApiError.catalogue[error._tag].code)
      assert.strictEqual(message, "m")
      assert.deepStrictEqual(rest, added)
    }
  })
})
