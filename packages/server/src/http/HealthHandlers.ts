/** `GET /healthz`: 200 `{"status":"ok"}` once the database answers (decisions §1). */
import { ApiError, MerchantApi } from "@kassa/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"

export const HealthHandlers = HttpApiBuilder.group(
  MerchantApi.MerchantApi,
  "health",
  Effect.fn(function* (handlers) {
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("health", () =>
      sql`SELECT 1`.pipe(
        Effect.as({ status: "ok" as const }),
        Effect.mapError(() => new ApiError.ServerError({ message: "The database does not answer." }))
      )
    )
  })
)
