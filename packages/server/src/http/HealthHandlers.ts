/**
 * `GET /healthz`: 200 `{"status":"ok"}` once the database answers (decisions §1). It fails fast: a database that
 * does not answer within {@link healthTimeout} gets 500 `server_error` with `Retry-After` (ResponseMiddleware), so a
 * load balancer's check sees the stall instead of hanging on it.
 */
import { ApiError, MerchantApi } from "@kassa/core"
import { Duration, Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Columns from "../database/Columns.ts"
import * as Database from "../database/Database.ts"
import { Readiness } from "../observability/Readiness.ts"
import { DeadlineExceeded, withDeadline } from "./ResponseMiddleware.ts"

/** The newest migration applied (NULL on an empty table). */
const LatestMigration = Schema.Struct({ latest: Columns.NullableInteger })

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

/** `/readyz` answers: `{"status":"ready"}`, or 503 with what is wrong (for an operator reading a probe's log). */
const probeAnswer = (status: number, body: { readonly status: string; readonly reason?: string }) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { "cache-control": "no-store" } })

/** The newest migration this build carries: a database behind it is not ready for this code. */
const latestMigration = Database.migrations.pipe(
  Effect.map((loaded) => loaded.reduce((latest, [id]) => Math.max(latest, id), 0)),
  Effect.orDie
)

/**
 * Probes beside `/healthz` (issue 14 §1), for orchestrators:
 * - `GET /livez`: 200 while the process runs its event loop; no database, so a database outage never gets a
 *   healthy process restarted.
 * - `GET /readyz`: 200 when the database answers within {@link healthTimeout}, its schema is this build's newest
 *   migration, and no stop has begun; 503 `{"status":"not_ready","reason":…}` otherwise. During a SIGTERM drain it
 *   answers 503 while requests in flight finish (and for `KASSA_DRAIN_DELAY` before the listener closes).
 */
export const ProbeRoutes = Layer.unwrap(
  Effect.gen(function* () {
    const latest = yield* latestMigration
    return HttpRouter.addAll([
      HttpRouter.route("GET", "/livez", Effect.succeed(probeAnswer(200, { status: "live" }))),
      HttpRouter.route(
        "GET",
        "/readyz",
        Effect.gen(function* () {
          const readiness = yield* Readiness
          if (readiness.draining) return probeAnswer(503, { status: "not_ready", reason: "draining" })
          const sql = yield* SqlClient.SqlClient
          const { requestDeadline } = yield* ServerConfig
          const applied = yield* withDeadline(
            Columns.first(LatestMigration)(sql`SELECT max(migration_id) AS latest FROM kassa_migrations`),
            Duration.min(healthTimeout, requestDeadline)
          ).pipe(Effect.option, Effect.map(Option.flatten))
          if (Option.isNone(applied)) return probeAnswer(503, { status: "not_ready", reason: "database" })
          if ((Option.getOrUndefined(applied.value)?.latest ?? 0) < latest) {
            return probeAnswer(503, { status: "not_ready", reason: "schema_behind" })
          }
          return probeAnswer(200, { status: "ready" })
        })
      )
    ])
  })
)

export const probeRoutes: ReadonlyArray<{ readonly method: string; readonly path: string }> = [
  { method: "GET", path: "/livez" },
  { method: "GET", path: "/readyz" }
]
