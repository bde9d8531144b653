/**
 * `GET /api/v1/payments/{id}` served below effect's router (a lane: see `Lane.ts`), answered as the contract's route
 * (`PaymentsHandlers.retrieve`) answers it: the same authentication (MerchantAuth.verify, decisions §5's order, the
 * same rate-limit budget), the same use case (MerchantPayments.retrieve), the same bytes
 * (`test/PaymentFetchLane.test.ts`).
 *
 * Only a request that is exactly the route takes the lane: `GET`, the path with a valid payment id and nothing after
 * it (no query string), no request body. Anything else (another spelling, `HEAD`, a malformed id, a query, a body)
 * goes to the router as before, which answers it as the contract says.
 */
import type { IncomingMessage } from "node:http"
import { type ApiError, Ids, PaymentsApi } from "@kassa/core"
import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { challengeHeader, MerchantAuth, rateLimited } from "../auth/Authentication.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import * as RateLimit from "../auth/RateLimit.ts"
import { MerchantPayments } from "../payments/MerchantPayments.ts"
import * as Lane from "./Lane.ts"
import { paymentJson } from "./PaymentsHandlers.ts"
import * as RouteFallback from "./RouteFallback.ts"

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

/** A refusal of authentication as the contract answers it; a 401 names the scheme to use. */
export const refusalAnswer = (refusal: ApiError.ApiError) => {
  const response = RouteFallback.errorResponse(refusal)
  return refusal._tag === "Unauthenticated" || refusal._tag === "InvalidApiKey"
    ? HttpServerResponse.setHeader(response, "www-authenticate", challengeHeader)
    : response
}

/** The lane's request handler, given the server's services. */
export const make = Effect.gen(function* () {
  const auth = yield* MerchantAuth
  const payments = yield* MerchantPayments
  const clientAddress = yield* ClientAddress
  const serve = yield* Lane.runner

  const fetch = (request: IncomingMessage, id: Ids.PaymentId) =>
    auth
      .verify(Lane.bearer(request.headers.authorization), () =>
        clientAddress.ofPeer(request.socket.remoteAddress, Lane.headerText(request.headers["x-forwarded-for"]))
      )
      .pipe(
        Effect.flatMap(({ caller, decision }) => {
          const limits = RateLimit.headers(decision)
          if (!decision.allowed) {
            return Effect.succeed(
              HttpServerResponse.setHeaders(RouteFallback.errorResponse(rateLimited(decision)), limits)
            )
          }
          return payments.retrieve({ applicationId: caller.applicationId, mode: caller.mode }, id).pipe(
            Effect.map((payment) =>
              HttpServerResponse.text(paymentJson(payment), {
                status: 200,
                contentType: "application/json",
                headers: limits
              })
            ),
            Effect.catchTag("NotFound", (error) =>
              Effect.succeed(HttpServerResponse.setHeaders(RouteFallback.errorResponse(error), limits))
            ),
            Effect.annotateLogs({ application_id: caller.applicationId, api_key_id: caller.keyId, mode: caller.mode })
          )
        }),
        Effect.catch((refusal: ApiError.ApiError) => Effect.succeed(refusalAnswer(refusal)))
      )

  return (request, response) => {
    const id = laneId(request)
    if (id === undefined) return false
    serve(request, response, route, () => fetch(request, id))
    return true
  }
}) satisfies Effect.Effect<Lane.LaneHandler, unknown, unknown>
