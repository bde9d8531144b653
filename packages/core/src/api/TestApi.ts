/**
 * The `test` group: drives a test payment to an outcome without the hosted checkout (decisions §1). A live key gets
 * 404 `not_found`, as if the payment did not exist.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Payment } from "../domain/Payment.ts"
import { SimulateBody } from "../payments/PaymentRequests.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import { PaymentParams } from "./PaymentsApi.ts"

export class TestApi extends HttpApiGroup.make("test")
  .add(
    HttpApiEndpoint.post("simulate", "/test/payments/:id/simulate", {
      params: PaymentParams,
      payload: SimulateBody,
      success: Payment,
      error: [
        ErrorEnvelope.NotFound,
        ErrorEnvelope.PaymentNotPending,
        ErrorEnvelope.PaymentBusy,
        ErrorEnvelope.ValidationFailed,
        ErrorEnvelope.ServerError
      ]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Simulate an outcome",
        description:
          "Test keys only. Moves a `pending` test payment to `paid`, `failed` or `expired`, with its webhook, as the " +
          "hosted checkout would."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Test mode",
      description: "Helpers for test keys; a live key gets 404 `not_found`."
    })
  ) {}
