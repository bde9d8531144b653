import { assert, describe, it } from "@effect/vitest"
import * as SettlementSource from "../src/payments/SettlementSource.ts"

const { describe: say } = SettlementSource

describe("how a payment was settled, in words (issue 22 §3)", () => {
  it("says the outcome and what caused it", () => {
    assert.strictEqual(
      say({ source: "checkout", status: "paid", provider: null, actor: null }),
      "Paid at the hosted checkout (the customer's choice)"
    )
    assert.strictEqual(
      say({ source: "api_simulate", status: "failed", provider: null, actor: null }),
      "Failed by a simulation through the API"
    )
    assert.strictEqual(
      say({ source: "expiry_sweeper", status: "expired", provider: null, actor: null }),
      "Expired at its expiry (the background sweeper)"
    )
    assert.strictEqual(
      say({ source: "api_cancel", status: "cancelled", provider: null, actor: null }),
      "Cancelled on a cancel through the API"
    )
  })
  it("a refunded payment was paid when it left pending", () => {
    for (const status of ["paid", "partially_refunded", "refunded"] as const)
      assert.strictEqual(
        say({ source: "checkout", status, provider: null, actor: null }),
        "Paid at the hosted checkout (the customer's choice)"
      )
  })
  it("names the provider of the payment's link, or says 'the payment provider' without one", () => {
    assert.strictEqual(
      say({ source: "provider_event", status: "paid", provider: "Stripe", actor: null }),
      "Paid at Stripe (webhook)"
    )
    assert.strictEqual(
      say({ source: "provider_read", status: "paid", provider: null, actor: null }),
      "Paid at the payment provider (read by Kassa on schedule)"
    )
  })
  it("names the dashboard member who did it, and nobody for a source no member causes", () => {
    assert.strictEqual(
      say({ source: "dashboard_simulate", status: "failed", provider: null, actor: "alice@shop.example" }),
      "Failed by a simulation from the dashboard by alice@shop.example"
    )
    assert.strictEqual(
      say({ source: "dashboard_cancel", status: "cancelled", provider: null, actor: null }),
      "Cancelled on a cancel from the dashboard"
    )
    assert.strictEqual(
      say({ source: "checkout", status: "paid", provider: null, actor: "alice@shop.example" }),
      "Paid at the hosted checkout (the customer's choice)"
    )
  })
  it("an old row without a source says it was not recorded; a pending payment is not settled", () => {
    assert.match(say({ source: null, status: "paid", provider: null, actor: null }), /^Not recorded/)
    assert.match(say({ source: null, status: "pending", provider: null, actor: null }), /^Not settled yet/)
  })
  it("every source has its own words", () => {
    const said = SettlementSource.SettlementSource.literals.map((source) =>
      say({ source, status: "failed", provider: "Mollie", actor: null })
    )
    assert.strictEqual(new Set(said).size, said.length)
  })
})
