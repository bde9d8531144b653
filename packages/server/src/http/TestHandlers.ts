/**
 * The `test` group: `POST /api/v1/test/payments/{id}/simulate` drives a pending test payment to paid, failed or
 * expired, as the hosted checkout would (without a payer). A live key gets 404 `not_found`.
 */
import { MerchantApi } from "@kassa/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { MerchantPayments } from "../payments/MerchantPayments.ts"
import { currentScope } from "./PaymentsHandlers.ts"

export const TestHandlers = HttpApiBuilder.group(
  MerchantApi.MerchantApi,
  "test",
  Effect.fn(function* (handlers) {
    const payments = yield* MerchantPayments
    return handlers.handle("simulate", ({ params, payload }) =>
      Effect.flatMap(currentScope, (scope) => payments.simulate(scope, params.id, payload.outcome))
    )
  })
)
