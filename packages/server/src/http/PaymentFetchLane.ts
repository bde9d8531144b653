/**
 * `GET /api/v1/payments/{id}` served below effect's router (a lane: see `Lane.ts`, which also authenticates it),
 * answered as the contract's route (`PaymentsHandlers.retrieve`) answers it: the same use case
 * (MerchantPayments.retrieve, in one round trip with authentication: `retrieveRidden`), the same bytes
 * (`test/PaymentFetchLane.test.ts`).
 *
 * Only a request that is exactly the route takes the lane: `GET`, the path with a valid payment id and nothing after
 * it (no query string), no request body. Anything else (another spelling, `HEAD`, a malformed id, a query, a body)
 * goes to the router as before, which answers it as the contract says.
 */
import type { IncomingMessage } from "node:http"
import { Ids, PaymentsApi } from "@kassa/core"
import { Effect, Schema } from "effect"
import { MerchantPayments } from "../payments/MerchantPayments.ts"
import * as Lane from "./Lane.ts"
import { paymentResponse } from "./PaymentsHandlers.ts"

const prefix = `${PaymentsApi.apiPrefix}/payments/`
/** The route's template, as the router labels its metrics and names its spans. */
export const route = `${prefix}:id`
const isPaymentId = Schema.is(Ids.PaymentId)

/** The payment id of a request the lane takes, or undefined for one the router must answer. */
export const laneId = (request: IncomingMessage): Ids.PaymentId | undefined => {
  if (request.method !== "GET") return undefined
  const url = request.url
  if (url === undefined || !url.startsWith(prefix)) return undefined
  const id = url.slice(prefix.length)
  if (!isPaymentId(id)) return undefined
  // A body would have to be read (or drained) first; no client sends one with this GET.
  if (request.headers["content-length"] !== undefined || request.headers["transfer-encoding"] !== undefined) {
    return undefined
  }
  return id
}

/** The lane's request handler, given the server's services. */
export const make = Effect.gen(function* () {
  const payments = yield* MerchantPayments
  const serve = yield* Lane.runner

  // The payment is read by the API key's own statement (`MerchantPayments.riderOf`): one round trip, not two.
  const fetch =
    (id: Ids.PaymentId): Lane.LaneWork =>
    ({ caller, rider }) =>
      Effect.map(
        payments.retrieveRidden({ applicationId: caller.applicationId, mode: caller.mode }, id, rider),
        (payment) => paymentResponse(payment, 200)
      )

  return (request, response) => {
    const id = laneId(request)
    if (id === undefined) return false
    serve(request, response, route, fetch(id), payments.riderOf(id))
    return true
  }
}) satisfies Effect.Effect<Lane.LaneHandler, unknown, unknown>
