/**
 * The outermost layer of every answer:
 * - requests no route takes get 404 / 405 (RouteFallback) — under `/api/v1` only after the same
 *   authentication as every endpoint, because decisions §5 puts 401/403/429 before routing;
 * - a `Request-Id` on every response, and on the request's log lines (decisions §5);
 * - a 500 that never shows internals: the cause is logged, the client sees `server_error` and the id.
 */
import { ApiError, PaymentsApi } from "@kassa/core"
import { Cause, Effect, Redacted, type Types } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { MerchantAuth } from "../auth/Authentication.ts"
import * as RouteFallback from "./RouteFallback.ts"

const serverError = HttpServerResponse.jsonUnsafe(
  ApiError.toWire(new ApiError.ServerError({ message: "Something went wrong on our side. Retrying is safe." })),
  { status: 500 }
)

/** The bearer token as HttpApiSecurity.bearer reads it: anything but `Bearer <token>` is an empty credential. */
const bearerCredential = (request: HttpServerRequest.HttpServerRequest) => {
  const header = request.headers.authorization ?? ""
  return Redacted.make(/^bearer /i.test(header) ? header.slice(7).trim() : "")
}

export const layer = (routes: ReadonlyArray<RouteFallback.KnownRoute>) =>
  HttpRouter.middleware(
    Effect.gen(function* () {
      const fallback = RouteFallback.make(routes)
      const auth = yield* MerchantAuth

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
          const response = yield* effect.pipe(
            Effect.catch((error) =>
              HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"
                ? unrouted(request)
                : Effect.fail(error)
            ),
            Effect.catchCause((cause) =>
              HttpServerError.causeResponse(cause).pipe(
                Effect.flatMap(([response]) =>
                  response.status >= 500
                    ? Effect.logError("Request failed", Cause.pretty(cause)).pipe(Effect.as(serverError))
                    : Effect.succeed(response)
                )
              )
            ),
            Effect.annotateLogs({ request_id: id })
          )
          // One line per request, with the id the client sees (the router's own request log is off).
          yield* Effect.logInfo("Sent HTTP response").pipe(
            Effect.annotateLogs({
              request_id: id,
              "http.method": request.method,
              "http.path": request.url.split("?")[0] ?? request.url,
              "http.status": response.status,
              duration_ms: Math.round(performance.now() - started)
            })
          )
          return HttpServerResponse.setHeader(response, "request-id", id)
        })
    }),
    { global: true }
  )
