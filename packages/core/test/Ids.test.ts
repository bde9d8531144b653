import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as Ids from "../src/domain/Ids.ts"

// The uuid-shaped ids share one rule (decisions §3): lower-case only, so SQL and URLs compare them as strings.
const uuidIds = {
  PaymentId: Ids.PaymentId,
  RefundId: Ids.RefundId,
  ApplicationId: Ids.ApplicationId,
  ApiKeyId: Ids.ApiKeyId,
  DeliveryId: Ids.DeliveryId,
  UserId: Ids.UserId,
  ProviderLinkId: Ids.ProviderLinkId
}

describe("Ids", () => {
  it.each(Object.entries(uuidIds))("%s takes a lower-case UUID and nothing else", (_, schema) => {
    const decode = Schema.decodeUnknownResult(schema)
    const id = "0b6f9c1e-3a57-4d2b-9e8f-5c4d3b2a1f00"
    const decoded = decode(id)
    assert.isTrue(Result.isSuccess(decoded) && decoded.success === id)
    for (const input of [id.toUpperCase(), `${id} `, "0b6f9c1e3a574d2b9e8f5c4d3b2a1f00", "", 42]) {
      assert.isTrue(Result.isFailure(decode(input)), String(input))
    }
    const upper = decode(id.toUpperCase())
    assert.isTrue(Result.isFailure(upper) && String(upper.failure).includes("a lower-case UUID"))
  })
})
