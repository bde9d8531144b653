/**
 * The outermost layer of every answer: the route fallback (404/405), a `Request-Id` on every response
 * with the same id on the request's log lines (decisions §5), and a 500 that never shows internals —
 * the cause is logged, the client sees only `server_error` and the request id to quote.
 */
import { ApiError } from "@kassa/core"
import { Cause, Effect, type Types } from "effect"
import { HttpRouter, HttpServerError, HttpServerResponse } from "effect/http"
import * as RouteFallback from "./RouteFallback.ts"

const serverError = HttpServerResponse.jsonUnsafe(
  ApiError.toWire(new ApiError.ServerError({ message: "Something went wrong on our side. Retrying is safe." })),
  { status: 500 }
)

export const layer = (routes: ReadonlyArray<RouteFallback.KnownRoute>) => {
  const recover = RouteFallback.make(routes)
  return HttpRouter.middleware(
    // Every failure is answered here; the declared `unhandled` only satisfies the router's typing.
    (effect): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled> =>
      Effect.gen(function* () {
        const id = `req_${crypto.randomUUID().replaceAll("-", "")}`
        const response = yield* recover(effect).pipe(
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
        return HttpServerResponse.setHeader(response, "request-id", id)
      }),
    { global: true }
  )
}
