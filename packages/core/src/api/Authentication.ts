/**
 * Authentication of the merchant API: the middleware tag, its bearer scheme and the service it provides. The
 * implementation (key lookup, application status, IP allow-list, rate limit — decisions §5, in that order) lives in
 * the server; this module is the contract the server, the typed client and OpenAPI share.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { ApiKeyId, ApplicationId } from "../domain/Ids.ts"
import type { Mode } from "../domain/Mode.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"

/** Who is calling: the application of the API key, and the key's mode, which scopes everything the request does. */
export class CurrentApplication extends Context.Service<
  CurrentApplication,
  {
    readonly applicationId: ApplicationId
    readonly mode: Mode
    /** The key record (never the key), for logs and `last_used_at`. */
    readonly keyId: ApiKeyId
  }
>()("@kassa/core/api/Authentication/CurrentApplication") {}

/** `Authorization: Bearer pk_test_…` or `Bearer pk_live_…`, the whole key as issued. */
export const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotateMerge(
    OpenApi.annotations({
      description:
        "The application's API key, sent whole as issued: `pk_test_…` (test mode) or `pk_live_…` (live mode). " +
        "The key decides the mode of everything done with it.",
      format: "API key"
    })
  )
)

/**
 * Authenticates every `/api/v1` request and provides {@link CurrentApplication}. A missing header reaches the
 * implementation as an empty credential, which it answers with `Unauthenticated`.
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentApplication }>()(
  "@kassa/core/api/Authentication",
  {
    requiredForClient: true,
    security: { bearer },
    error: [
      ErrorEnvelope.Unauthenticated,
      ErrorEnvelope.InvalidApiKey,
      ErrorEnvelope.ApplicationDisabled,
      ErrorEnvelope.ApplicationPendingReview,
      ErrorEnvelope.ApplicationSuspended,
      ErrorEnvelope.IpNotAllowed,
      ErrorEnvelope.RateLimited
    ]
  }
) {}
