/**
 * Authentication of every `/api/v1` request, in the order of decisions §5: 401 `unauthenticated` (no bearer
 * token) → 401 `invalid_api_key` → 403 application status → 403 `ip_not_allowed` → 429 `rate_limited`; only then
 * does the request reach routing and the endpoint, with {@link Authentication.CurrentApplication} provided.
 *
 * The key is looked up in the database on every request (no cache), so a revoked or rolled key fails on the very
 * next request in every process. The token is never logged and never part of an answer: refusals carry fixed
 * messages, logs carry the key's id.
 */
import { ApiError, type Application, Authentication } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Redacted } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { NetAddress } from "effect/net"
import { ApiKeyRepository, type Rider } from "../applications/ApiKeyRepository.ts"
import type { StoredApplication } from "../applications/ApplicationRepository.ts"
import { ClientAddress } from "./ClientAddress.ts"
import * as IpAllowList from "./IpAllowList.ts"
import * as RateLimit from "./RateLimit.ts"

/**
 * The credential of an `Authorization` header as HttpApiSecurity.bearer reads it: anything but `Bearer <token>` is an
 * empty credential (the route fallback and the lanes read it so too).
 */
export const bearerCredential = (header: string | undefined) =>
  Redacted.make(header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : "")

/** The `WWW-Authenticate` challenge a 401 carries (RFC 9110 §15.5.2: it names the scheme to use). */
export const challengeHeader = 'Bearer realm="kassa"'

const challenge = HttpEffect.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "www-authenticate", challengeHeader))
)

const unauthenticated = Effect.fail(
  new ApiError.Unauthenticated({ message: "No API key: send it in the header `Authorization: Bearer <API key>`." })
)

const invalidApiKey = Effect.fail(new ApiError.InvalidApiKey({ message: "The API key is unknown, revoked or rolled." }))

/** The refusal for an application that may not use the API, or none when it is active. */
const statusRefusal = (
  status: Application.ApplicationStatus
): Option.Option<ApiError.ApplicationPendingReview | ApiError.ApplicationSuspended | ApiError.ApplicationDisabled> => {
  switch (status) {
    case "active":
      return Option.none()
    case "pending_review":
      return Option.some(
        new ApiError.ApplicationPendingReview({
          message: "The application is not activated yet; its keys work once the review is complete."
        })
      )
    case "suspended":
      return Option.some(
        new ApiError.ApplicationSuspended({ message: "The application is suspended; contact the service operator." })
      )
    case "disabled":
      return Option.some(new ApiError.ApplicationDisabled({ message: "The application is switched off." }))
  }
}

/** Who a valid request speaks for. */
export type Caller = Authentication.CurrentApplication["Service"]

/**
 * The application as authentication just read it, for the rest of the same request: create reads its settings
 * without a second query. Server-side only; the contract's `CurrentApplication` carries the ids.
 */
export class AuthenticatedApplication extends Context.Service<AuthenticatedApplication, StoredApplication>()(
  "@kassa/server/auth/AuthenticatedApplication"
) {}

export type Refusal =
  | ApiError.Unauthenticated
  | ApiError.InvalidApiKey
  | ApiError.ApplicationPendingReview
  | ApiError.ApplicationSuspended
  | ApiError.ApplicationDisabled
  | ApiError.IpNotAllowed
  | ApiError.RateLimited

/** A key that passed every check before the rate limit, with the rate limit's decision (refused or not). */
export interface Verified {
  readonly caller: Caller
  readonly application: StoredApplication
  readonly decision: RateLimit.RateLimitDecision
  /** The value of the rider the key's statement carried (`ApiKeyRepository.Rider`), null without one. */
  readonly rider: unknown
}

/** The 429 of a decision that refused the request. */
export const rateLimited = (decision: RateLimit.RateLimitDecision) =>
  new ApiError.RateLimited({
    message: `Too many requests with this API key: at most ${decision.limit} a minute. Retry after ${decision.retryAfterSeconds} s.`,
    retryAfterSeconds: decision.retryAfterSeconds
  })

/**
 * The checks themselves, shared by the endpoints' middleware, the route fallback (an unknown `/api/v1` path is
 * answered 404 only after them) and the fetch lane (PaymentFetchLane). One instance per server, so all count against
 * the same rate-limit budget.
 */
export class MerchantAuth extends Context.Service<
  MerchantAuth,
  {
    /**
     * Every check up to and including counting the request; a refused count is the decision's, not a failure, so the
     * caller can put its headers on the 429. `clientAddress` is asked only when the application has an allow-list.
     */
    readonly verify: (
      credential: Redacted.Redacted<string>,
      clientAddress: () => Option.Option<NetAddress.IpAddress>,
      rider?: Rider
    ) => Effect.Effect<Verified, Exclude<Refusal, ApiError.RateLimited>>
    /** {@link verify} for a request of effect's HTTP server: the rate-limit headers and the 401 challenge set on its answer. */
    readonly check: (
      credential: Redacted.Redacted<string>
    ) => Effect.Effect<
      { readonly caller: Caller; readonly application: StoredApplication },
      Refusal,
      HttpServerRequest.HttpServerRequest
    >
  }
>()("@kassa/server/auth/MerchantAuth") {
  static readonly layer = Layer.effect(
    MerchantAuth,
    Effect.gen(function* () {
      const keys = yield* ApiKeyRepository
      const clientAddress = yield* ClientAddress
      const rateLimit = yield* RateLimit.RateLimit

      // On every request: untraced (a traced Effect.fn captures a stack trace and opens a span on each call), and
      // combinators rather than a generator, whose every step is one more turn of the fiber's loop.
      type Verifying = Effect.Effect<Verified, Exclude<Refusal, ApiError.RateLimited>>
      const verify = (
        credential: Redacted.Redacted<string>,
        addressOf: () => Option.Option<NetAddress.IpAddress>,
        rider?: Rider
      ): Verifying =>
        Effect.suspend((): Verifying => {
          // A missing header, another scheme or `Bearer ` with nothing after it all arrive as an empty credential.
          const token = Redacted.value(credential)
          if (token.length === 0) return unauthenticated
          return Effect.flatMap(keys.authenticate(token, rider), (found): Verifying => {
            if (Option.isNone(found)) return invalidApiKey
            const { key, application } = found.value
            const checked = Effect.suspend((): Verifying => {
              const refused = statusRefusal(application.status)
              if (Option.isSome(refused)) return Effect.fail(refused.value)
              // Without an allow-list every address may call: the client's address is then not worked out at all.
              if (application.ip_allowlist.length > 0 && !IpAllowList.allows(application.ip_allowlist, addressOf())) {
                return Effect.fail(
                  new ApiError.IpNotAllowed({
                    message: "Requests from this address are not allowed for this application."
                  })
                )
              }
              return Effect.map(
                rateLimit.consume(key.id, application.rate_limit_per_minute),
                (decision): Verified => ({
                  caller: { applicationId: application.id, mode: key.mode, keyId: key.id },
                  application,
                  decision,
                  rider: found.value.rider
                })
              )
            })
            // `last_used_at` is kept to the minute: the row just read says whether this request needs to write it.
            return Effect.flatMap(DateTime.now, (now) =>
              key.last_used_at === null ||
              DateTime.toEpochMillis(now) - DateTime.toEpochMillis(key.last_used_at) >= 60_000
                ? Effect.andThen(keys.touch(key.id), checked)
                : checked
            )
          })
        })

      const check = (credential: Redacted.Redacted<string>) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          verify(credential, () => clientAddress.of(request)).pipe(
            Effect.tapError((refusal) =>
              refusal._tag === "Unauthenticated" || refusal._tag === "InvalidApiKey" ? challenge : Effect.void
            ),
            Effect.flatMap(({ caller, application, decision }) =>
              // On the final response, whatever the endpoint answers (success, error or 500).
              HttpEffect.appendPreResponseHandler((_request, response) =>
                Effect.succeed(HttpServerResponse.setHeaders(response, RateLimit.headers(decision)))
              ).pipe(
                Effect.andThen(
                  decision.allowed ? Effect.succeed({ caller, application }) : Effect.fail(rateLimited(decision))
                )
              )
            )
          )
        )

      return MerchantAuth.of({ verify, check })
    })
  ).pipe(Layer.provide([RateLimit.RateLimit.layer, ClientAddress.layer]))
}

/** The caller's log annotations: on every line of an authenticated request's work. */
export const callerAnnotations = (caller: Verified["caller"]) => ({
  application_id: caller.applicationId,
  api_key_id: caller.keyId,
  mode: caller.mode
})

/** A request's caller, as log annotations, once it is authenticated. */
export interface CallerLog {
  annotations: Record<string, unknown> | undefined
}

/**
 * Where the `Authentication` middleware leaves the caller's log annotations for the request's outer middleware
 * (ResponseMiddleware), which renders a failed request's 500 outside the middleware's `annotateLogs`: that line then
 * carries the caller too, as a lane's does. One cell per routed request, provided by ResponseMiddleware.
 */
export const CallerLogCell = Context.Reference<CallerLog | undefined>(
  "@kassa/server/auth/Authentication/CallerLogCell",
  { defaultValue: () => undefined }
)

/** The core contract's `Authentication` middleware, served by {@link MerchantAuth}. */
export const layer = Layer.effect(
  Authentication.Authentication,
  Effect.gen(function* () {
    const auth = yield* MerchantAuth
    return Authentication.Authentication.of({
      bearer: (httpEffect, { credential }) =>
        auth.check(credential).pipe(
          Effect.flatMap(({ caller, application }) =>
            Effect.withFiber((fiber) => {
              const annotations = callerAnnotations(caller)
              const cell = fiber.getRef(CallerLogCell)
              if (cell !== undefined) cell.annotations = annotations
              return httpEffect.pipe(
                Effect.provideService(Authentication.CurrentApplication, caller),
                Effect.provideService(AuthenticatedApplication, application),
                Effect.annotateLogs(annotations)
              )
            })
          )
        )
    })
  })
)
