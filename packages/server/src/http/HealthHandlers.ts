/**
 * `GET /healthz`: 200 `{"status":"ok"}` once the database answers (decisions §1). It fails fast: a database that
 * does not answer within {@link healthTimeout} gets 503 `server_error` with `Retry-After` (ResponseMiddleware), so a
 * load balancer's check sees the stall instead of hanging on it.
 */
import { ApiError, MerchantApi } from "@kassa/core"
import { Duration, Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { ServerConfig } from "../config/ServerConfig.ts"
import { DeadlineExceeded, withDeadline } from "./ResponseMiddleware.ts"

/** Longest a health check waits for the database (shorter when the request deadline is). */
export const healthTimeout = Duration.seconds(2)

export const HealthHandlers = HttpApiBuilder.group(
  MerchantApi.MerchantApi,
  "health",
  Effect.fn(function* (handlers) {
    const sql = yield* SqlClient.SqlClient
    const { requestDeadline } = yield* ServerConfig
    const timeout = Duration.min(healthTimeout, requestDeadline)
    return handlers.handle("health", () =>
      withDeadline(sql`SELECT 1`, timeout).pipe(
        Effect.mapError(() => new ApiError.ServerError({ message: "The database does not answer." })),
        Effect.flatMap(
          Option.match({
            onSome: () => Effect.succeed({ status: "ok" as const }),
            onNone: () =>
              Effect.die(new DeadlineExceeded(`the database did not answer within ${Duration.format(timeout)}`))
          })
        )
      )
    )
  })
)
