/**
 * What the lanes share (issue 23): a lane answers one of the merchant API's most frequent requests below effect's
 * router, straight from Node's `request` event, because effect's HTTP server, router, HttpApi decoding and middleware
 * cost a request about a fifth of its CPU. A lane changes how a request is carried, never what it does: it answers
 * with the contract's bytes (each lane's test sends every request to the lane and to the router and compares), and it
 * keeps everything ResponseMiddleware gives every other request — the deadline, the 500 that shows no internals, the
 * request metrics, the access log line, `Request-Id` and the API headers — through ResponseMiddleware's own functions,
 * and a server span like effect's HTTP tracer's (parent from `traceparent`). A request that starts a trace the sampler
 * would drop (`Tracing.keepsNewTrace`) runs with effect's tracer off instead: no span at all, which spared a GET
 * ~15 % of its CPU in the issue's benchmark; a kept one is marked so the sampler does not draw again.
 *
 * Every lane is a merchant API request, so the runner also authenticates it as the API's middleware does
 * (`MerchantAuth.verify`, decisions §5's order, the same rate-limit budget): a refusal is answered here, a 429 with
 * the budget's headers; the lane's work gets the caller and answers with a response or a contract error, and every
 * answer after the count carries the budget's headers, as the router's do.
 *
 * Lanes: `PaymentFetchLane` (`GET /api/v1/payments/{id}`), `PaymentCreateLane` (`POST /api/v1/payments`).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { ApiError } from "@kassa/core"
import { Cause, Context, Duration, Effect, Exit, References, type Tracer } from "effect"
import { type Headers, HttpServerResponse, HttpTraceContext } from "effect/http"
import type { Rider } from "../applications/ApiKeyRepository.ts"
import {
  bearerCredential,
  callerAnnotations,
  challengeHeader,
  MerchantAuth,
  rateLimited,
  type Verified
} from "../auth/Authentication.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import * as RateLimit from "../auth/RateLimit.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as Tracing from "../observability/Tracing.ts"
import * as ResponseMiddleware from "./ResponseMiddleware.ts"
import * as RouteFallback from "./RouteFallback.ts"

// The lane's span is made here, so a stack trace would only point here (and cost a capture per request).
const noStackTrace = { captureStackTrace: false } as const

/** How many requests each lane took in this process, by route: the lanes' tests check that a request took one. */
export const taken: Record<string, number> = {}

/** A lane's request handler: `true` when it took the request (and will answer it), `false` when the router must. */
export type LaneHandler = (request: IncomingMessage, response: ServerResponse) => boolean

/**
 * The work of one authenticated request: its answer, or a contract error (rendered as the router renders it). `R`:
 * services it needs from the server's context, which the runner runs it in (none provided per request).
 */
export type LaneWork<R = never> = (
  verified: Verified
) => Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError.ApiError, R>

/** A refusal of authentication as the contract answers it; a 401 names the scheme to use. */
const refusalAnswer = (refusal: ApiError.ApiError) => {
  const response = RouteFallback.errorResponse(refusal)
  return refusal._tag === "Unauthenticated" || refusal._tag === "InvalidApiKey"
    ? HttpServerResponse.setHeader(response, "www-authenticate", challengeHeader)
    : response
}

/** A header as one string, as effect's request gives it. */
const headerText = (value: string | ReadonlyArray<string> | undefined) =>
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

/**
 * Runs lane work as ResponseMiddleware runs a routed request; returns a function that serves one request. The work
 * runs in the context the runner was made in, so it may need `R` from there.
 */
export const runnerWith = <R = never>() =>
  Effect.gen(function* () {
    const auth = yield* MerchantAuth
    const clientAddress = yield* ClientAddress
    const config = yield* ServerConfig
    const { requestDeadline } = config
    const context = yield* Effect.context<R>()
    const untraced = Context.add(context, References.TracerEnabled, false)
    const baseAnnotations = Context.get(context, References.CurrentLogAnnotations)
    const deadline = Duration.toMillis(requestDeadline)

    /**
     * The request authenticated and counted, then its work; every answer after the count carries the budget, which is
     * also handed to `counted` for an answer made outside (past the deadline, as the router's carries it too).
     */
    const authenticated = (
      request: IncomingMessage,
      work: LaneWork<R>,
      rider: Rider | undefined,
      counted: (budget: Record<string, string>) => void
    ) =>
      auth
        .verify(
          bearerCredential(request.headers.authorization),
          () => clientAddress.ofPeer(request.socket.remoteAddress, headerText(request.headers["x-forwarded-for"])),
          rider
        )
        .pipe(
          Effect.flatMap((verified) => {
            const { caller, decision } = verified
            const answer = decision.allowed
              ? work(verified).pipe(
                  Effect.catch((error) => Effect.succeed(RouteFallback.errorResponse(error))),
                  // A 500 of the work carries the budget too, as the router's answers do.
                  Effect.catchCause(ResponseMiddleware.failureAnswer),
                  Effect.annotateLogs(callerAnnotations(caller))
                )
              : Effect.succeed(RouteFallback.errorResponse(rateLimited(decision)))
            const budget = RateLimit.headers(decision)
            counted(budget)
            return Effect.map(answer, (response) => HttpServerResponse.setHeaders(response, budget))
          }),
          Effect.catch((refusal) => Effect.succeed(refusalAnswer(refusal)))
        )

    /** The answer past the deadline; with the budget's headers once the request was counted. */
    const overDeadline = (requestId: string, budget: Record<string, string> | undefined) => {
      const timedOut = ResponseMiddleware.timedOut(requestId, requestDeadline)
      return budget === undefined
        ? timedOut
        : Effect.map(timedOut, (response) => HttpServerResponse.setHeaders(response, budget))
    }

    const answer = (
      request: IncomingMessage,
      route: string,
      work: LaneWork<R>,
      rider: Rider | undefined,
      span: Tracer.Span | undefined,
      requestId: string
    ) =>
      Effect.suspend(() => {
        const started = performance.now()
        if (span?.sampled) span.attribute("kassa.request_id", requestId)
        let budget: Record<string, string> | undefined
        const answered = authenticated(request, work, rider, (headers) => {
          budget = headers
        }).pipe(Effect.catchCause(ResponseMiddleware.failureAnswer))
        return ResponseMiddleware.within(answered, deadline, (_fiber, exit) =>
          Effect.flatMap(exit ?? overDeadline(requestId, budget), (response) => {
            const method = request.method ?? ""
            Metrics.recordRequestUnsafe(context, method, route, response.status, Metrics.secondsSince(started))
            if (span?.sampled) describe(span, request, route, response.status)
            return ResponseMiddleware.accessLog(requestId, method, request.url ?? "", response.status, started).pipe(
              Effect.as(HttpServerResponse.setHeaders(response, ResponseMiddleware.apiHeaders(requestId)))
            )
          })
        )
      })

    /** Serves one request; `rider`: a read the key's statement carries for `work` (`ApiKeyRepository.Rider`). */
    return (
      request: IncomingMessage,
      response: ServerResponse,
      route: string,
      work: LaneWork<R>,
      rider?: Rider
    ): void => {
      taken[route] = (taken[route] ?? 0) + 1
      const requestId = ResponseMiddleware.newRequestId()
      // Node's header object is what effect's request wraps too; only the trace headers are read from it.
      const parent = HttpTraceContext.fromHeaders(request.headers as unknown as Headers.Headers)
      const underSpan = (options: Tracer.SpanOptionsNoTrace) =>
        Effect.useSpan(`${request.method} ${route}`, { kind: "server", ...options }, (span) =>
          Effect.withParentSpan(answer(request, route, work, rider, span, requestId), span, noStackTrace)
        )
      // The request's log lines carry its id, and a request whose new trace the sampler would drop runs with effect's
      // tracer off: both set in the context its fiber starts with, rather than by `Effect.annotateLogs` and
      // `Effect.withTracerEnabled` (each a change of the fiber's context and back, on every request).
      const traced =
        parent._tag === "Some"
          ? underSpan({ parent: parent.value })
          : Tracing.keepsNewTrace(config)
            ? underSpan({ annotations: Tracing.keptRoot })
            : undefined
      const fiber = Effect.runForkWith(
        Context.add(traced === undefined ? untraced : context, References.CurrentLogAnnotations, {
          ...baseAnnotations,
          request_id: requestId
        })
      )(traced ?? answer(request, route, work, rider, undefined, requestId))
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

/** {@link runnerWith} for work that needs nothing of the server's context. */
export const runner = runnerWith()
