/**
 * The outermost layer of every answer:
 * - requests no route takes get 404 / 405 (RouteFallback) — under `/api/v1` only after the same
 *   authentication as every endpoint, because decisions §5 puts 401/403/429 before routing;
 * - a `Request-Id` on every response, and on the request's log lines (decisions §5);
 * - a 500 that never shows internals: the cause is logged, the client sees `server_error` and the id;
 * - a deadline on every request (issue 11 §3): past `KASSA_REQUEST_DEADLINE` the client gets `server_error` (its one
 *   status, 500: the specification's "retry with the same key" answer) with `Retry-After` at once, and the work is interrupted behind the answer (a statement is cancelled, a wait
 *   for a pool connection given up), so a silent database cannot hold requests or pile up work;
 * - `X-Content-Type-Options: nosniff` on every answer, and `Cache-Control: no-store` on the merchant and operator
 *   APIs, whose answers carry payer data no cache may keep.
 */
import { ApiError, OperatorApi, PaymentsApi } from "@kassa/core"
import { Cause, Context, Duration, Effect, type Exit, type Fiber, type Option, Tracer, type Types } from "effect"
import { FindMyWay, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { bearerCredential, type CallerLog, CallerLogCell, MerchantAuth } from "../auth/Authentication.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as RouteFallback from "./RouteFallback.ts"

export const serverError = HttpServerResponse.jsonUnsafe(
  ApiError.toWire(new ApiError.ServerError({ message: "Something went wrong on our side. Retrying is safe." })),
  { status: 500 }
)

/** Seconds a client is told to wait after a request ran out of time. */
export const retryAfterSeconds = 5

const overDeadlineError = new ApiError.ServerError({
  message: "The server could not answer in time. Retrying is safe; wait a moment first."
})
const overDeadline = HttpServerResponse.jsonUnsafe(ApiError.toWire(overDeadlineError), {
  status: ApiError.statusOf(overDeadlineError),
  headers: { "retry-after": String(retryAfterSeconds) }
})

/**
 * A handler that gives up before the request's deadline (the health check, which must fail fast) dies with this;
 * it is answered like a request past its deadline.
 */
export class DeadlineExceeded extends Error {
  override readonly name = "DeadlineExceeded"
}

const isDeadlineExceeded = (cause: Cause.Cause<unknown>) =>
  cause.reasons.some((reason) => Cause.isDieReason(reason) && reason.defect instanceof DeadlineExceeded)

/**
 * Runs `effect` in its own fiber for at most `millis`, then `settle(fiber, exit)` — the exit, or `undefined` past the
 * deadline, when the fiber is interrupted behind the answer: cancelling a statement on a silent connection takes
 * seconds (the driver sends a cancel and drains it), and the answer must not wait for it. `settle` also sees the
 * fiber, whose context tells what it got to (the route it matched).
 *
 * One timer and an observer of the fiber, not `timeoutOption`'s race of fibers, and the interruption signalled
 * without a fiber of its own: this runs on every request (the race cost 50–100 µs of CPU a GET in `pnpm bench`).
 */
export const within = <A, E, R, B, E2>(
  effect: Effect.Effect<A, E, R>,
  millis: number,
  settle: (fiber: Fiber.Fiber<A, E>, exit: Exit.Exit<A, E> | undefined) => Effect.Effect<B, E2>
): Effect.Effect<B, E2, R> =>
  Effect.flatMap(Effect.forkDetach(effect), (fiber) =>
    Effect.callback<B, E2>((resume) => {
      let stopObserving: (() => void) | undefined
      const timer = setTimeout(() => {
        stopObserving?.()
        fiber.interruptUnsafe()
        resume(settle(fiber, undefined))
      }, millis)
      stopObserving = fiber.addObserver((exit) => {
        clearTimeout(timer)
        resume(settle(fiber, exit))
      })
      // The request itself interrupted (the client went away): so is its work.
      return Effect.sync(() => {
        clearTimeout(timer)
        stopObserving?.()
        fiber.interruptUnsafe()
      })
    })
  )

/** Runs `effect` for at most `deadline`: `None` past it, the work interrupted behind the answer. */
export const withDeadline = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  deadline: Duration.Duration
): Effect.Effect<Option.Option<A>, E, R> =>
  within(effect, Duration.toMillis(deadline), (_, exit) =>
    exit === undefined ? Effect.succeedNone : Effect.asSome(exit)
  )

/** The id a request is known by: in its `Request-Id` header, its log lines and its span. */
export const newRequestId = () => `req_${crypto.randomUUID().replaceAll("-", "")}`

/** A request past its deadline: logged, answered `server_error` with `Retry-After`. */
export const timedOut = (id: string, deadline: Duration.Duration) =>
  Effect.logWarning("Request exceeded its deadline; answered server_error").pipe(
    Effect.annotateLogs({ request_id: id, deadline: Duration.format(deadline) }),
    Effect.as(overDeadline)
  )

/**
 * The answer to a request whose work failed: a handler that gave up before the deadline is answered like one past
 * it, a 5xx is logged with its cause and answered `server_error` without internals, anything else as effect renders it.
 */
export const failureAnswer = (cause: Cause.Cause<unknown>) =>
  isDeadlineExceeded(cause)
    ? Effect.logWarning("Request gave up waiting; answered server_error", Cause.pretty(cause)).pipe(
        Effect.as(overDeadline)
      )
    : HttpServerError.causeResponse(cause).pipe(
        Effect.flatMap(([response]) =>
          response.status >= 500
            ? Effect.logError("Request failed", Cause.pretty(cause)).pipe(Effect.as(serverError))
            : Effect.succeed(response)
        )
      )

/** The one line logged per request, with the id the client sees (the router's own request log is off). */
export const accessLog = (id: string, method: string, path: string, status: number, started: number) =>
  Effect.logInfo("Sent HTTP response").pipe(
    Effect.annotateLogs({
      request_id: id,
      "http.method": method,
      "http.path": path,
      "http.status": status,
      duration_ms: Math.round(performance.now() - started)
    })
  )

/** The template of the route the router matched in `fiber`'s context (`/api/v1/payments/:id`), if it did. */
const matchedRoute = (fiber: Fiber.Fiber<unknown, unknown>) =>
  Context.getOrUndefined(fiber.context, HttpRouter.RouteContext)?.route.path

export const apiHeaders = (id: string) => ({
  "request-id": id,
  "x-content-type-options": "nosniff",
  "cache-control": "no-store"
})
const pageHeaders = (id: string) => ({ "request-id": id, "x-content-type-options": "nosniff" })

const isApiPath = (path: string) =>
  path.startsWith(`${PaymentsApi.apiPrefix}/`) ||
  path.startsWith(`${OperatorApi.operatorPrefix}/`) ||
  path === OperatorApi.operatorPrefix

/**
 * The route template a request will match (`/api/v1/payments/:id`), for span names, which are given before the
 * router runs: never the raw path, whose ids would make a name per payment. Requests no route takes are `unmatched`.
 * (Metric labels take the template from the router itself, after it matched.)
 */
export const routeTemplates = (routes: ReadonlyArray<RouteFallback.KnownRoute>) => {
  const index = FindMyWay.make<string>(RouteFallback.exactPaths)
  const seen = new Set<string>()
  for (const { method, path } of routes) {
    const key = `${method.toUpperCase()} ${path}`
    if (seen.has(key)) continue
    seen.add(key)
    index.on(method.toUpperCase() as "GET", path as `/${string}`, path)
  }
  return (method: string, path: string): string =>
    (index.find(method, path) ?? (method === "HEAD" ? index.find("GET", path) : undefined))?.handler ?? "unmatched"
}

export const layer = (routes: ReadonlyArray<RouteFallback.KnownRoute>) =>
  HttpRouter.middleware(
    Effect.gen(function* () {
      const fallback = RouteFallback.make(routes)
      const auth = yield* MerchantAuth
      const { requestDeadline } = yield* ServerConfig

      const unrouted = (request: HttpServerRequest.HttpServerRequest) => {
        const answer = Effect.sync(() => fallback(request.url))
        if (!request.url.startsWith(`${PaymentsApi.apiPrefix}/`)) return answer
        return auth.check(bearerCredential(request.headers.authorization)).pipe(
          Effect.andThen(answer),
          Effect.catch((refusal) => Effect.succeed(RouteFallback.errorResponse(refusal)))
        )
      }

      const deadline = Duration.toMillis(requestDeadline)

      // Every failure is answered here; the declared `unhandled` only satisfies the router's typing.
      return (
        effect
      ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
        Effect.withFiber((parent) => {
          const id = newRequestId()
          const started = performance.now()
          const request = Context.getUnsafe(parent.context, HttpServerRequest.HttpServerRequest)
          // The request's span (effect's HTTP tracer, a parent taken from `traceparent`) carries the id the client
          // sees; an unsampled span is never exported, so it is not annotated.
          const span = Context.getOrUndefined(parent.context, Tracer.ParentSpan)
          const annotated = span?._tag === "Span" && span.sampled ? span : undefined
          annotated?.attribute("kassa.request_id", id)
          // The route label comes from the router that took the request (its RouteContext, read as the routed work
          // ends, before an enclosing step restores the context), so the path is matched once.
          let route: string | undefined
          const routed = Effect.onExit(effect, () =>
            Effect.withFiber((fiber) => {
              route = matchedRoute(fiber)
              return Effect.void
            })
          )
          // An authenticated request's caller, left here by the Authentication middleware: a failure is rendered
          // (and logged) outside that middleware's annotations, and its line carries the caller as a lane's does.
          const caller: CallerLog = { annotations: undefined }
          const answered = routed.pipe(
            Effect.catch((error) =>
              HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"
                ? unrouted(request)
                : Effect.fail(error)
            ),
            Effect.catchCause((cause) =>
              caller.annotations === undefined
                ? failureAnswer(cause)
                : Effect.annotateLogs(failureAnswer(cause), caller.annotations)
            ),
            Effect.annotateLogs({ request_id: id }),
            Effect.provideService(CallerLogCell, caller)
          )
          return within(answered, deadline, (fiber, exit) => {
            // A request past its deadline counts under the route it reached: its work is still in it.
            const label = route ?? matchedRoute(fiber) ?? "unmatched"
            const answer = exit === undefined ? timedOut(id, requestDeadline) : exit
            return Effect.flatMap(answer, (response) => {
              const query = request.url.indexOf("?")
              const path = query === -1 ? request.url : request.url.slice(0, query)
              Metrics.recordRequestUnsafe(
                parent.context,
                request.method,
                label,
                response.status,
                Metrics.secondsSince(started)
              )
              if (label === "unmatched") annotated?.attribute("http.route", label)
              return accessLog(id, request.method, path, response.status, started).pipe(
                Effect.as(HttpServerResponse.setHeaders(response, isApiPath(path) ? apiHeaders(id) : pageHeaders(id)))
              )
            })
          })
        })
    }),
    { global: true }
  )
