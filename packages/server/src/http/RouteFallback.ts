/**
 * Answers for requests no route takes (decisions §5): a known path with another method gets 405
 * `http_error` with an `Allow` header, anything else 404 `not_found`, both in the error envelope. HttpRouter
 * itself answers both with an empty 404.
 */
import { ApiError } from "@kassa/core"
import { FindMyWay, HttpServerResponse } from "effect/http"

export interface KnownRoute {
  readonly method: string
  readonly path: string
}

/** The error envelope of an error, with the headers its code implies. */
export const errorResponse = (error: ApiError.ApiError): HttpServerResponse.HttpServerResponse => {
  const headers: Record<string, string> = {}
  if (error._tag === "RateLimited") headers["retry-after"] = String(error.retryAfterSeconds)
  if (error._tag === "Unauthenticated" || error._tag === "InvalidApiKey") headers["www-authenticate"] = "Bearer"
  return HttpServerResponse.jsonUnsafe(ApiError.toWire(error), { status: ApiError.statusOf(error), headers })
}

/**
 * How every path is matched — by the router (KassaServer) and by the indexes that must agree with it (this module's,
 * ResponseMiddleware's route templates): exactly as written. Effect's router ignores case, merges `//` and drops a
 * trailing `/` by default, so `/API/V1/…`, `//admin/…` or `/healthz/` would slip past a proxy's path rules.
 */
export const exactPaths = { caseSensitive: true, ignoreDuplicateSlashes: false, ignoreTrailingSlash: false } as const

/** The 404 or 405 for a request no route took, given every route the server serves. */
export const make = (routes: ReadonlyArray<KnownRoute>) => {
  // Path-only index: which methods each known path accepts, matched as the router matches.
  const index = FindMyWay.make<Set<string>>(exactPaths)
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
  return (url: string): HttpServerResponse.HttpServerResponse => {
    const hit = index.find("GET", url.split("?")[0] ?? url)
    if (hit === undefined) return errorResponse(new ApiError.NotFound({ message: "No such path." }))
    const allow = [...hit.handler].sort().join(", ")
    return HttpServerResponse.setHeader(
      errorResponse(new ApiError.HttpError({ message: `Use ${allow} on this path.`, httpStatus: 405 })),
      "allow",
      allow
    )
  }
}
