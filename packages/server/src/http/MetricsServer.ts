/**
 * `GET /metrics` in Prometheus text format, on its own listener (`KASSA_METRICS_PORT`, bound to
 * `KASSA_METRICS_HOST`, loopback by default), so the public port never serves it by accident; no listener when the
 * port is unset. Rendering is effect's `PrometheusMetrics`; this module adds what is read at scrape time: the
 * delivery backlog (one indexed count), the database pool's occupancy (ObservedPgClient) and the event loop's delay
 * (`monitorEventLoopDelay`).
 */
import { createServer } from "node:http"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Duration, Effect, Layer, Metric, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { ServerConfig } from "../config/ServerConfig.ts"
import { DatabasePool } from "../database/ObservedPgClient.ts"
import * as Metrics from "../observability/Metrics.ts"
import { DeliveryRepository } from "../webhooks/DeliveryRepository.ts"
import { withDeadline } from "./ResponseMiddleware.ts"

/** Where the metrics listener is bound; none when it is off. Tests read the port from here. */
export class MetricsListener extends Context.Service<
  MetricsListener,
  { readonly address: Option.Option<{ readonly host: string; readonly port: number }> }
>()("@kassa/server/http/MetricsListener") {}

/** Longest a scrape waits for the backlog count. */
export const backlogTimeout = Duration.seconds(2)

const contentType = "text/plain; version=0.0.4; charset=utf-8"

export const layer = Layer.effect(
  MetricsListener,
  Effect.gen(function* () {
    const config = yield* ServerConfig
    if (Option.isNone(config.metricsPort)) return MetricsListener.of({ address: Option.none() })
    const deliveries = yield* DeliveryRepository
    const pool = yield* DatabasePool
    const loopDelay = monitorEventLoopDelay({ resolution: 10 })
    loopDelay.enable()
    yield* Effect.addFinalizer(() => Effect.sync(() => loopDelay.disable()))

    /** Gauges read now: the backlog (a failed read leaves the last values) and the loop delay since the last scrape. */
    const refresh = Effect.gen(function* () {
      // Bounded like a health check: a database that does not answer leaves the last values, it never holds a scrape.
      const backlog = yield* withDeadline(deliveries.backlog, backlogTimeout).pipe(
        Effect.option,
        Effect.map(Option.flatten)
      )
      if (Option.isSome(backlog)) {
        yield* Metric.update(Metrics.webhookBacklogDue, backlog.value.due)
        yield* Metric.update(Metrics.webhookBacklogOverdue, backlog.value.overdue)
      }
      const occupancy = pool.occupancy()
      yield* Metric.update(Metrics.databasePoolInUse, occupancy.inUse)
      yield* Metric.update(Metrics.databasePoolWaiting, occupancy.waiting)
      yield* Metric.update(Metrics.databasePoolMax, occupancy.max)
      // Nanoseconds; an empty histogram reports NaN/0, which would read as "no lag" anyway.
      const p99 = loopDelay.count > 0 ? loopDelay.percentile(99) / 1e9 : 0
      const max = loopDelay.count > 0 ? loopDelay.max / 1e9 : 0
      loopDelay.reset()
      yield* Metric.update(Metrics.eventLoopLagP99, p99)
      yield* Metric.update(Metrics.eventLoopLagMax, max)
    })

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = request.url.split("?")[0]
      if (path !== "/metrics") return HttpServerResponse.text("Not found\n", { status: 404 })
      if (request.method !== "GET" && request.method !== "HEAD") {
        return HttpServerResponse.text("Use GET\n", { status: 405, headers: { allow: "GET" } })
      }
      yield* refresh
      return HttpServerResponse.text(yield* PrometheusMetrics.format(), { contentType })
    })

    const server = yield* NodeHttpServer.make(() => createServer(), {
      port: config.metricsPort.value,
      host: config.metricsHost,
      gracefulShutdownTimeout: "1 second"
    }).pipe(Effect.orDie)
    // Scrapes are not traced: a span every 15 s per scraper would be noise in every trace view.
    yield* server.serve(app).pipe(Effect.withTracerEnabled(false))
    const address = server.address
    return MetricsListener.of({
      address: Option.some({
        host: config.metricsHost,
        port: address._tag === "UnixPathAddress" ? config.metricsPort.value : address.port
      })
    })
  })
)
