/**
 * The hand-built wire form of a payment (create and fetch answers, stored idempotent answers) must be the exact
 * bytes the contract's `Payment` schema encodes to.
 */
import { assert, describe, it } from "@effect/vitest"
import { Payment } from "@kassa/core"
import { Schema } from "effect"
import { paymentJson } from "../src/http/PaymentsHandlers.ts"

const encode = Schema.encodeSync(Schema.toCodecJson(Payment.Payment))

describe("paymentJson", () => {
  it.prop("is the JSON of the contract's encoding, byte for byte", [Payment.Payment], ([payment]) => {
    assert.strictEqual(paymentJson(payment), JSON.stringify(encode(payment)))
  })
})
