/**
 * The server's side of the operator API's `AdminAuthentication` middleware (the tag is the core's contract), and its
 * audit trail: every successful change made with the admin token is
 * recorded (actor "admin token", the endpoint, the path, the client address).
 *
 * Authentication of the operator API: `Authorization: Bearer <KASSA_ADMIN_TOKEN>` (decisions §8). A missing header,
 * an empty token and a wrong token are all 401 `unauthenticated`; API keys are not admin tokens, so a `pk_…` key
 * gets the same answer (`invalid_api_key` would suggest that some API key could work here).
 *
 * Wrong tokens are throttled per client address (issue #11) by the core's LoginThrottle address rule, the one sign-in
 * uses: 30 wrong tokens within 15 minutes lock the address for 15 minutes, and every request from it, right token or
 * not, is then 429 `rate_limited` with `Retry-After`, whatever the token, so a locked address learns nothing. The states live in this process's memory, like sign-in's (SignInThrottle's reasons).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { AdminAuthentication, ApiError, type Ids, LoginThrottle } from "@kassa/core"
import { DateTime, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { AuditLog, AuditSubject, type OperatorApiAction } from "../audit/AuditLog.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"
import { BoundedMap } from "../support/BoundedMap.ts"
import { addressKey } from "../users/SignInThrottle.ts"

// Fixed-length digests, so the comparison takes the same time whatever the token's length or first wrong byte.
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

export const layer = Layer.effect(
  AdminAuthentication.AdminAuthentication,
  Effect.gen(function* () {
    const { adminToken } = yield* ServerSecrets
    const expected = digest(Redacted.value(adminToken))
    const audit = yield* AuditLog
    const clientAddress = yield* ClientAddress
    // Per client address (IPv6 by /64); bounded: an address with no wrong token for a window is dropped first.
    const failures = new BoundedMap<string, LoginThrottle.AddressState>(50_000)

    /** Refuses an address the rule has locked, before its token is looked at. */
    const admitted = (address: string) =>
      Effect.flatMap(DateTime.now, (now) => {
        const admission = LoginThrottle.admit({
          address: failures.get(address) ?? LoginThrottle.initialAddress,
          pair: LoginThrottle.initialPair,
          inFlight: 0,
          now
        })
        if (admission._tag !== "Blocked") return Effect.void
        const retryAfterSeconds = Math.max(
          1,
          Math.ceil((DateTime.toEpochMillis(admission.until) - DateTime.toEpochMillis(now)) / 1000)
        )
        return Effect.fail(
          new ApiError.RateLimited({
            message: `Too many wrong admin tokens from this address. Retry after ${retryAfterSeconds} s.`,
            retryAfterSeconds
          })
        )
      })

    const wrongToken = (address: string) =>
      Effect.flatMap(DateTime.now, (now) => {
        const next = LoginThrottle.addressAfterFailure(failures.get(address) ?? LoginThrottle.initialAddress, now)
        failures.set(address, next)
        return Effect.fail(new ApiError.Unauthenticated({ message: "The admin token is not valid." }))
      })

    // Changes only (reads are not actions); the application is the one the path names, or the one the handler
    // named (AuditSubject) when the path does not.
    const recorded = <E, R>(
      httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
      action: OperatorApiAction,
      method: string
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> => {
      if (method === "GET") return httpEffect
      return Effect.suspend(() => {
        let named: Ids.ApplicationId | null = null
        const subject = AuditSubject.of({
          name: (applicationId) =>
            Effect.sync(() => {
              named = applicationId
            })
        })
        return Effect.tap(Effect.provideService(httpEffect, AuditSubject, subject), (response) =>
          response.status >= 400
            ? Effect.void
            : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
                const path = new URL(request.url, "http://kassa.invalid").pathname
                const inPath = /\/(?:applications|memberships)\/([0-9a-f-]{36})/.exec(path)?.[1] as
                  | Ids.ApplicationId
                  | undefined
                return audit.record(
                  { label: "admin token", userId: null, ip: clientAddress.text(request) },
                  { action, applicationId: inPath ?? named, target: path }
                )
              })
        )
      })
    }

    /** The request with `token`: refused while the address is locked, then the token checked. */
    const checked = <E, R>(
      httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
      token: string,
      action: OperatorApiAction,
      method: string
    ) =>
      Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (
          request
        ): Effect.Effect<
          HttpServerResponse.HttpServerResponse,
          E | ApiError.Unauthenticated | ApiError.RateLimited,
          R | HttpServerRequest.HttpServerRequest
        > => {
          const address = addressKey(clientAddress.text(request))
          // A missing token is no guess: it is answered, not counted.
          if (token.length === 0)
            return Effect.andThen(
              admitted(address),
              Effect.fail(
                new ApiError.Unauthenticated({ message: "Send the admin token as `Authorization: Bearer <token>`." })
              )
            )
          // Compared whatever the address's state: the answer to a locked address does not depend on the result.
          return timingSafeEqual(digest(token), expected)
            ? Effect.andThen(admitted(address), recorded(httpEffect, action, method))
            : Effect.andThen(admitted(address), wrongToken(address))
        }
      )

    return AdminAuthentication.AdminAuthentication.of({
      bearer: (httpEffect, { credential, endpoint, group }) =>
        checked(
          httpEffect,
          Redacted.value(credential),
          `operator_api.${group.identifier.replace(/^operator/, "").toLowerCase()}.${endpoint.identifier}`,
          endpoint.method
        )
    })
  })
)
