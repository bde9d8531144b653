/**
 * Authentication of the operator API: `Authorization: Bearer <KASSA_ADMIN_TOKEN>` (decisions §8). A missing header,
 * an empty token and a wrong token are all 401 `unauthenticated`; API keys are not admin tokens, so a `pk_…` key
 * gets the same answer (`invalid_api_key` would suggest that some API key could work here).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { ApiError, ErrorEnvelope } from "@kassa/core"
import { Effect, Layer, Redacted } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
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
    return AdminAuthentication.of({
      bearer: (httpEffect, { credential }) => {
        const token = Redacted.value(credential)
        if (token.length === 0) {
          return Effect.fail(
            new ApiError.Unauthenticated({ message: "Send the admin token as `Authorization: Bearer <token>`." })
          )
        }
        return timingSafeEqual(digest(token), expected)
          ? httpEffect
          : Effect.fail(new ApiError.Unauthenticated({ message: "The admin token is not valid." }))
      }
    })
  })
)
