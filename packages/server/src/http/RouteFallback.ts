/**
 * Answers for requests no route takes (decisions §5): a known path with another method gets 405
 * `http_error` with an `Allow` header, anything else 404 `not_found`, both in the error envelope. HttpRouter
 * itself answers both with an empty 404.
 */
import { ApiError } from "@kassa/core"
import { Effect } from "effect"
import { FindMyWay, HttpServerError, HttpServerResponse } from "effect/http"

export interface KnownRoute {
  readonly method: string
  readonly path: string
}

/** Recovers `RouteNotFound` into the contract's 404 or 405, given every route the server serves. */
export const make = (routes: ReadonlyArray<KnownRoute>) => {
  // Path-only index: which methods each known path accepts.
  const index = FindMyWay.make<Set<string>>()
  const byPath = new Map<string, Set<string>>()
  for (const { method, path } of routes) {
    const methods = byPath.get(path)
    if (methods === undefined) {
      const created = new Set([method.toUpperCase()])
      byPath.set(path, created)
      index.on("GET", path as `/${string}`, created)
    } else {
      methods.add(method.toUpperCase())
    }
  }
  return <A, E, R>(effect: Effect.Effect<A | HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.catch(effect, (error) => {
      if (!HttpServerError.isHttpServerError(error) || error.reason._tag !== "RouteNotFound") return Effect.fail(error)
      const url = error.reason.request.url
      const hit = index.find("GET", url.split("?")[0] ?? url)
      if (hit !== undefined) {
        const allow = [...hit.handler].sort().join(", ")
        const wire = ApiError.toWire(new ApiError.HttpError({ message: `Use ${allow} on this path.`, httpStatus: 405 }))
        return Effect.succeed(HttpServerResponse.jsonUnsafe(wire, { status: 405, headers: { allow } }))
      }
      const wire = ApiError.toWire(new ApiError.NotFound({ message: "No such path." }))
      return Effect.succeed(HttpServerResponse.jsonUnsafe(wire, { status: 404 }))
    })
}
