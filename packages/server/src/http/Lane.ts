/**
 * What the lanes share (issue 23): a lane answers one of the merchant API's most frequent requests below effect's
 * router, straight from Node's `request` event, because effect's HTTP server, router, HttpApi decoding and middleware
 * cost a request about a fifth of its CPU. A lane changes how a request is carried, never what it does: it answers
 * with the contract's bytes (each lane's test sends every request to the lane and to the router and compares), and it
 * keeps everything ResponseMiddleware gives every other request — the deadline, the 500 that shows no internals, the
 * request metrics, the access log line, `Request-Id` and the API headers — through ResponseMiddleware's own functions,
 * and a server span like effect's HTTP tracer's (parent from `traceparent`).
 *
 * Lanes: `PaymentFetchLane` (`GET /api/v1/payments/{id}`), `PaymentCreateLane` (`POST /api/v1/payments`).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Duration, Effect, Exit, Redacted, type Tracer } from "effect"
import { type Headers, HttpServerResponse, HttpTraceContext } from "effect/http"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as ResponseMiddleware from "./ResponseMiddleware.ts"

/** How many requests each lane took in this process, by route: the lanes' tests check that a request took one. */
export const taken: Record<string, number> = {}

/** A lane's request handler: `true` when it took the request (and will answer it), `false` when the router must. */
export type LaneHandler = (request: IncomingMessage, response: ServerResponse) => boolean

/** The work of one request: its answer before the headers every answer carries; failures become 500s. */
export type LaneWork = (requestId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

/** The bearer credential as HttpApiSecurity.bearer reads it: anything but `Bearer <token>` is empty. */
export const bearer = (header: string | undefined) =>
  Redacted.make(header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : "")

/** A header as one string, as effect's request gives it. */
export const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  typeof value === "string" ? value : value?.join(", ")

/** Writes an answer made of effect's response values to Node's response: status, headers, the whole body. */
const writeAnswer = (nodeResponse: ServerResponse, response: HttpServerResponse.HttpServerResponse) => {
  if (nodeResponse.destroyed || nodeResponse.writableEnded) return
  nodeResponse.writeHead(response.status, response.headers)
  const body = response.body
  nodeResponse.end(body._tag === "Uint8Array" ? body.body : undefined)
}

/** The attributes effect's HTTP tracer gives a sampled server span that a lane's span carries too. */
const describe = (span: Tracer.Span, request: IncomingMessage, route: string, status: number) => {
  span.attribute("http.request.method", request.method ?? "")
  span.attribute("http.route", route)
  span.attribute("url.path", request.url ?? "")
  span.attribute("http.response.status_code", status)
  const agent = request.headers["user-agent"]
  if (agent !== undefined) span.attribute("user_agent.original", agent)
  if (request.socket.remoteAddress !== undefined) span.attribute("client.address", request.socket.remoteAddress)
}

/** Runs lane work as ResponseMiddleware runs a routed request; returns a function that serves one request. */
export const runner = Effect.gen(function* () {
  const { requestDeadline } = yield* ServerConfig
  const context = yield* Effect.context<never>()
  const run = Effect.runForkWith(context)
  const deadline = Duration.toMillis(requestDeadline)

  const answer = (request: IncomingMessage, route: string, work: LaneWork, span: Tracer.Span) =>
    Effect.suspend(() => {
      const requestId = ResponseMiddleware.newRequestId()
      const started = performance.now()
      if (span.sampled) span.attribute("kassa.request_id", requestId)
      const answered = work(requestId).pipe(
        Effect.catchCause(ResponseMiddleware.failureAnswer),
        Effect.annotateLogs({ request_id: requestId })
      )
      return ResponseMiddleware.within(answered, deadline, (_fiber, exit) =>
        Effect.flatMap(exit ?? ResponseMiddleware.timedOut(requestId, requestDeadline), (response) => {
          const method = request.method ?? ""
          Metrics.recordRequestUnsafe(context, method, route, response.status, Metrics.secondsSince(started))
          if (span.sampled) describe(span, request, route, response.status)
          return ResponseMiddleware.accessLog(requestId, method, request.url ?? "", response.status, started).pipe(
            Effect.as(HttpServerResponse.setHeaders(response, ResponseMiddleware.apiHeaders(requestId)))
          )
        })
      )
    })

  return (request: IncomingMessage, response: ServerResponse, route: string, work: LaneWork): void => {
    taken[route] = (taken[route] ?? 0) + 1
    // Node's header object is what effect's request wraps too; only the trace headers are read from it.
    const parent = HttpTraceContext.fromHeaders(request.headers as unknown as Headers.Headers)
    const traced = Effect.useSpan(
      `${request.method} ${route}`,
      { kind: "server", ...(parent._tag === "Some" ? { parent: parent.value } : {}) },
      (span) => Effect.withParentSpan(answer(request, route, work, span), span)
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
  }
})
