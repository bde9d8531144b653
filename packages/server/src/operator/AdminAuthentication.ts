/**
 * Authentication of the operator API, and its audit trail: every successful change made with the admin token is
 * recorded (actor "admin token", the endpoint, the path, the client address).
 *
 * Authentication of the operator API: `Authorization: Bearer <KASSA_ADMIN_TOKEN>` (decisions §8). A missing header,
 * an empty token and a wrong token are all 401 `unauthenticated`; API keys are not admin tokens, so a `pk_…` key
 * gets the same answer (`invalid_api_key` would suggest that some API key could work here).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { ApiError, ErrorEnvelope, type Ids } from "@kassa/core"
import { Effect, Layer, Redacted } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { AuditLog, AuditSubject } from "../dashboard/AuditLog.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

export const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotateMerge(
    OpenApi.annotations({
      description: "The server's admin token (`KASSA_ADMIN_TOKEN`), never an application's API key.",
      format: "admin token"
    })
  )
)

export class AdminAuthentication extends HttpApiMiddleware.Service<AdminAuthentication>()(
  "@kassa/server/operator/AdminAuthentication",
  { requiredForClient: true, security: { bearer }, error: ErrorEnvelope.Unauthenticated }
) {}

// Fixed-length digests, so the comparison takes the same time whatever the token's length or first wrong byte.
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

export const layer = Layer.effect(
  AdminAuthentication,
  Effect.gen(function* () {
    const { adminToken } = yield* ServerSecrets
    const expected = digest(Redacted.value(adminToken))
    const audit = yield* AuditLog
    const clientAddress = yield* ClientAddress

    // Changes only (reads are not actions); the application is the one the path names, or the one the handler
    // named (AuditSubject) when the path does not.
    const recorded = <E, R>(
      httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
      action: string,
      method: string
    ) => {
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

    return AdminAuthentication.of({
      bearer: (httpEffect, { credential, endpoint, group }) => {
        const token = Redacted.value(credential)
        if (token.length === 0) {
          return Effect.fail(
            new ApiError.Unauthenticated({ message: "Send the admin token as `Authorization: Bearer <token>`." })
          )
        }
        return timingSafeEqual(digest(token), expected)
          ? recorded(
              httpEffect,
              `operator_api.${group.identifier.replace(/^operator/, "").toLowerCase()}.${endpoint.identifier}`,
              endpoint.method
            )
          : Effect.fail(new ApiError.Unauthenticated({ message: "The admin token is not valid." }))
      }
    })
  })
)
