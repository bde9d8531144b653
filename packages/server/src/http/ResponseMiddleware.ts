/**
 * The outermost layer of every answer:
 * - requests no route takes get 404 / 405 (RouteFallback) — under `/api/v1` only after the same
 *   authentication as every endpoint, because decisions §5 puts 401/403/429 before routing;
 * - a `Request-Id` on every response, and on the request's log lines (decisions §5);
 * - a 500 that never shows internals: the cause is logged, the client sees `server_error` and the id;
 * - a deadline on every request (issue 11 §3): past `KASSA_REQUEST_DEADLINE` the client gets 503 `server_error`
 *   with `Retry-After` at once, and the work is interrupted behind the answer (a statement is cancelled, a wait
 *   for a pool connection given up), so a silent database cannot hold requests or pile up work;
 * - `X-Content-Type-Options: nosniff` on every answer, and `Cache-Control: no-store` on the merchant and operator
 *   APIs, whose answers carry payer data no cache may keep.
 */
import { ApiError, PaymentsApi } from "@kassa/core"
import { Cause, Duration, Effect, type Exit, Fiber, Option, Redacted, type Types } from "effect"
import { FindMyWay, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { MerchantAuth } from "../auth/Authentication.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import { operatorPrefix } from "../operator/OperatorApi.ts"
import * as RouteFallback from "./RouteFallback.ts"

const serverError = HttpServerResponse.jsonUnsafe(
  ApiError.toWire(new ApiError.ServerError({ message: "Something went wrong on our side. Retrying is safe." })),
  { status: 500 }
)

/** Seconds a client is told to wait after a request ran out of time. */
export const retryAfterSeconds = 5

const overDeadline = HttpServerResponse.jsonUnsafe(
  ApiError.toWire(
    new ApiError.ServerError({ message: "The server could not answer in time. Retrying is safe; wait a moment first." })
  ),
  { status: 503, headers: { "retry-after": String(retryAfterSeconds) } }
)

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
 * Runs `effect` for at most `deadline`: `None` past it. The work runs in its own fiber so the answer does not
 * wait for the interruption to complete — cancelling a statement on a silent connection takes seconds (the
 * driver sends a cancel and drains it) — and it is interrupted behind the answer.
 */
export const withDeadline = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  deadline: Duration.Duration
): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkDetach(effect)
    const interrupt = Effect.forkDetach(Fiber.interrupt(fiber))
    const millis = Duration.toMillis(deadline)
    // One timer and an observer of the fiber, not `timeoutOption`'s race of fibers: this runs on every request, and
    // the race cost 50–100 µs of CPU a GET (an A/B of two builds in `pnpm bench`).
    const exit = yield* Effect.callback<Option.Option<Exit.Exit<A, E>>>((resume) => {
      let stopObserving: (() => void) | undefined
      const timer = setTimeout(() => {
        stopObserving?.()
        resume(Effect.succeedNone)
      }, millis)
      stopObserving = fiber.addObserver((exit) => {
        clearTimeout(timer)
        resume(Effect.succeedSome(exit))
      })
      return Effect.sync(() => {
        clearTimeout(timer)
        stopObserving?.()
      })
    }).pipe(Effect.onInterrupt(() => interrupt))
    if (Option.isNone(exit)) {
      yield* interrupt
      return Option.none()
    }
    return Option.some(yield* exit.value)
  })

const isApiPath = (path: string) =>
  path.startsWith(`${PaymentsApi.apiPrefix}/`) || path.startsWith(`${operatorPrefix}/`) || path === operatorPrefix

/** The bearer token as HttpApiSecurity.bearer reads it: anything but `Bearer <token>` is an empty credential. */
const bearerCredential = (request: HttpServerRequest.HttpServerRequest) => {
  const header = request.headers.authorization ?? ""
  return Redacted.make(/^bearer /i.test(header) ? header.slice(7).trim() : "")
}

/**
 * The route template a request matched (`/api/v1/payments/:id`), for metric labels and span names: never the raw
 * path, whose ids would make a series per payment. Requests no route takes are `unmatched`.
 */
export const routeTemplates = (routes: ReadonlyArray<RouteFallback.KnownRoute>) => {
  const index = FindMyWay.make<string>({ caseSensitive: true, ignoreDuplicateSlashes: false })
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
      const templateOf = routeTemplates(routes)
      const auth = yield* MerchantAuth
      const { requestDeadline } = yield* ServerConfig

      const unrouted = (request: HttpServerRequest.HttpServerRequest) => {
        const answer = Effect.sync(() => fallback(request.url))
        if (!request.url.startsWith(`${PaymentsApi.apiPrefix}/`)) return answer
        return auth.check(bearerCredential(request)).pipe(
          Effect.andThen(answer),
          Effect.catch((refusal) => Effect.succeed(RouteFallback.errorResponse(refusal)))
        )
      }

      // Every failure is answered here; the declared `unhandled` only satisfies the router's typing.
      return (
        effect
      ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
        Effect.gen(function* () {
          const id = `req_${crypto.randomUUID().replaceAll("-", "")}`
          const started = performance.now()
          const request = yield* HttpServerRequest.HttpServerRequest
          const path = request.url.split("?")[0] ?? request.url
          const route = templateOf(request.method, path)
          // The request's span (effect's HTTP tracer, a parent taken from `traceparent`) carries the id the client sees.
          yield* Effect.annotateCurrentSpan({ "kassa.request_id": id, "http.route": route })
          const answered = effect.pipe(
            Effect.catch((error) =>
              HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"
                ? unrouted(request)
                : Effect.fail(error)
            ),
            Effect.catchCause((cause) =>
              isDeadlineExceeded(cause)
                ? Effect.logWarning("Request gave up waiting; answered 503", Cause.pretty(cause)).pipe(
                    Effect.as(overDeadline)
                  )
                : HttpServerError.causeResponse(cause).pipe(
                    Effect.flatMap(([response]) =>
                      response.status >= 500
                        ? Effect.logError("Request failed", Cause.pretty(cause)).pipe(Effect.as(serverError))
                        : Effect.succeed(response)
                    )
                  )
            ),
            Effect.annotateLogs({ request_id: id })
          )
          const response = yield* withDeadline(answered, requestDeadline).pipe(
            Effect.flatMap(
              Option.match({
                onSome: Effect.succeed,
                onNone: () =>
                  Effect.logWarning("Request exceeded its deadline; answered 503").pipe(
                    Effect.annotateLogs({ request_id: id, deadline: Duration.format(requestDeadline) }),
                    Effect.as(overDeadline)
                  )
              })
            )
          )
          yield* Metrics.recordRequest(request.method, route, response.status, Metrics.secondsSince(started))
          // One line per request, with the id the client sees (the router's own request log is off).
          yield* Effect.logInfo("Sent HTTP response").pipe(
            Effect.annotateLogs({
              request_id: id,
              "http.method": request.method,
              "http.path": path,
              "http.status": response.status,
              duration_ms: Math.round(performance.now() - started)
            })
          )
          return HttpServerResponse.setHeaders(response, {
            "request-id": id,
            "x-content-type-options": "nosniff",
            ...(isApiPath(path) ? { "cache-control": "no-store" } : {})
          })
        })
    }),
    { global: true }
  )
