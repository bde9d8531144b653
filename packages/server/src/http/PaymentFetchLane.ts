/**
 * `GET /api/v1/payments/{id}` served below effect's router (issue 23): the merchant API's most frequent request,
 * taken from Node's `request` event before effect's HTTP server wraps it, and answered with the same bytes as the
 * contract's route (`PaymentsHandlers.retrieve`). Going through effect's HTTP server, router, HttpApi decoding and
 * middleware cost a fetch about a fifth of its CPU (A/B in docs/decisions.md); what the request does is unchanged:
 * the same authentication (MerchantAuth.verify, decisions §5's order, the same rate-limit budget), the same use case
 * (MerchantPayments.retrieve), the same deadline, 500, metrics, access log line and server span as ResponseMiddleware
 * gives every other request. `test/PaymentFetchLane.test.ts` holds every answer equal to the contract's.
 *
 * Only a request that is exactly the route takes the lane: `GET`, the path with a valid payment id and nothing after
 * it (no query string), no request body. Anything else (another spelling, `HEAD`, a malformed id, a query, a body)
 * goes to the router as before, which answers it as the contract says.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { type ApiError, Ids, PaymentsApi } from "@kassa/core"
import { Cause, Duration, Effect, Exit, Redacted, Schema, type Tracer } from "effect"
import { type Headers, HttpServerResponse, HttpTraceContext } from "effect/http"
import { challengeHeader, MerchantAuth, rateLimited } from "../auth/Authentication.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import * as RateLimit from "../auth/RateLimit.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import { MerchantPayments } from "../payments/MerchantPayments.ts"
import { paymentJson } from "./PaymentsHandlers.ts"
import * as ResponseMiddleware from "./ResponseMiddleware.ts"
import * as RouteFallback from "./RouteFallback.ts"

const prefix = `${PaymentsApi.apiPrefix}/payments/`
/** The route's template, as the router labels its metrics and names its spans. */
export const route = `${prefix}:id`
const spanName = `GET ${route}`
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

/** How many requests the lane took in this process: its test checks that a request it compares did take it. */
export const taken = { requests: 0 }

/** Writes an answer made of effect's response values to Node's response: status, headers, the whole body. */
const writeAnswer = (nodeResponse: ServerResponse, response: HttpServerResponse.HttpServerResponse) => {
  if (nodeResponse.destroyed || nodeResponse.writableEnded) return
  nodeResponse.writeHead(response.status, response.headers)
  const body = response.body
  nodeResponse.end(body._tag === "Uint8Array" ? body.body : undefined)
}

const bearer = (header: string | undefined) =>
  Redacted.make(header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : "")

/**
 * The lane's request handler, given the server's services: `true` when it took the request (and will answer it),
 * `false` when the router must.
 */
export const make = Effect.gen(function* () {
  const auth = yield* MerchantAuth
  const payments = yield* MerchantPayments
  const clientAddress = yield* ClientAddress
  const { requestDeadline } = yield* ServerConfig
  const context = yield* Effect.context<never>()
  const run = Effect.runForkWith(context)
  const deadline = Duration.toMillis(requestDeadline)

  /** The answer to one fetch, before the headers every answer carries. */
  const fetch = (request: IncomingMessage, id: Ids.PaymentId) =>
    auth
      .verify(bearer(request.headers.authorization), () =>
        clientAddress.ofPeer(request.socket.remoteAddress, headerText(request.headers["x-forwarded-for"]))
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
        Effect.catch((refusal: ApiError.ApiError) => {
          const response = RouteFallback.errorResponse(refusal)
          return Effect.succeed(
            refusal._tag === "Unauthenticated" || refusal._tag === "InvalidApiKey"
              ? HttpServerResponse.setHeader(response, "www-authenticate", challengeHeader)
              : response
          )
        })
      )

  const answer = (request: IncomingMessage, id: Ids.PaymentId, span: Tracer.Span) =>
    Effect.suspend(() => {
      const requestId = ResponseMiddleware.newRequestId()
      const started = performance.now()
      if (span.sampled) span.attribute("kassa.request_id", requestId)
      const answered = fetch(request, id).pipe(
        Effect.catchCause((cause) => ResponseMiddleware.failureAnswer(cause)),
        Effect.annotateLogs({ request_id: requestId })
      )
      return ResponseMiddleware.within(answered, deadline, (_fiber, exit) =>
        Effect.flatMap(exit ?? ResponseMiddleware.timedOut(requestId, requestDeadline), (response) => {
          const seconds = Metrics.secondsSince(started)
          Metrics.recordRequestUnsafe(context, "GET", route, response.status, seconds)
          if (span.sampled) {
            span.attribute("http.request.method", "GET")
            span.attribute("http.route", route)
            span.attribute("url.path", request.url ?? "")
            span.attribute("http.response.status_code", response.status)
            const agent = request.headers["user-agent"]
            if (agent !== undefined) span.attribute("user_agent.original", agent)
            if (request.socket.remoteAddress !== undefined) {
              span.attribute("client.address", request.socket.remoteAddress)
            }
          }
          return ResponseMiddleware.accessLog(requestId, "GET", request.url ?? "", response.status, started).pipe(
            Effect.as(HttpServerResponse.setHeaders(response, ResponseMiddleware.apiHeaders(requestId)))
          )
        })
      )
    })

  return (request: IncomingMessage, response: ServerResponse): boolean => {
    const id = laneId(request)
    if (id === undefined) return false
    taken.requests++
    // Node's header object is what effect's request wraps too; only the trace headers are read from it.
    const parent = HttpTraceContext.fromHeaders(request.headers as unknown as Headers.Headers)
    const traced = Effect.useSpan(
      spanName,
      { kind: "server", ...(parent._tag === "Some" ? { parent: parent.value } : {}) },
      (span) => answer(request, id, span)
    )
    const fiber = run(traced)
    fiber.addObserver((exit) => {
      if (Exit.isSuccess(exit)) writeAnswer(response, exit.value)
      else if (!Cause.hasInterruptsOnly(exit.cause)) writeAnswer(response, ResponseMiddleware.serverError)
    })
    // The client went away: so does the work (effect's server does the same for the router's requests).
    response.once("close", () => {
      if (!response.writableEnded) fiber.interruptUnsafe()
    })
    return true
  }
})

const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  typeof value === "string" ? value : value?.join(", ")
