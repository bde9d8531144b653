/**
 * Authentication of the operator API: the middleware tag and its bearer scheme, `Authorization: Bearer
 * <KASSA_ADMIN_TOKEN>` (decisions §8). The implementation (the token check, the per-address throttle of wrong tokens,
 * the audit trail) lives in the server; this module is the contract the server, `kassa admin` and OpenAPI share.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"

/** `Authorization: Bearer <KASSA_ADMIN_TOKEN>`: the server's admin token, never an application's API key. */
export const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotateMerge(
    OpenApi.annotations({
      description: "The server's admin token (`KASSA_ADMIN_TOKEN`), never an application's API key.",
      format: "admin token"
    })
  )
)

/**
 * Authenticates every operator API request. A missing, empty or wrong token is 401 `unauthenticated` (an API key
 * too: `invalid_api_key` would suggest some key could work here); an address locked for wrong tokens is 429.
 */
export class AdminAuthentication extends HttpApiMiddleware.Service<AdminAuthentication>()(
  "@kassa/core/api/AdminAuthentication",
  {
    requiredForClient: true,
    security: { bearer },
    error: [ErrorEnvelope.Unauthenticated, ErrorEnvelope.RateLimited]
  }
) {}
