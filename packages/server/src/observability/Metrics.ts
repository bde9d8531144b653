/**
 * The server's metrics, as effect `Metric`s (rendered by effect's `PrometheusMetrics` on the metrics listener,
 * MetricsServer). Names follow Prometheus: `kassa_` prefix, `_total` counters, `_seconds` histograms. Labels take
 * only values from small fixed sets — a route template, a status code, a mode, an outcome — never an id, a key, an
 * e-mail address or an amount, so a series count stays bounded and a scrape carries no payer data.
 */
import type { Mode } from "@kassa/core"
import { type Context, Effect, Metric } from "effect"

/** Request latencies: 5 ms to 15 s (the default request deadline). */
const httpBoundaries = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15]
/** Webhook and provider calls: 10 ms to the 10 s webhook limit. */
const callBoundaries = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export const httpRequests = Metric.counter("kassa_http_requests_total", {
  description: "HTTP requests answered, by method, route template and status",
  incremental: true
})
export const httpRequestDuration = Metric.histogram("kassa_http_request_duration_seconds", {
  description: "Time to answer an HTTP request, by method, route template and status",
  boundaries: httpBoundaries
})

export const connectionsRefused = Metric.counter("kassa_http_connections_refused_total", {
  description:
    "Client connections closed as they arrived, by reason (max_connections, max_connections_per_address) or failed accepts (accept_error: EMFILE, ENFILE)",
  incremental: true
})

/** Why a connection was refused: the process's cap, one address's cap, or the accept itself failed (out of files). */
export type ConnectionRefusal = "max_connections" | "max_connections_per_address" | "accept_error"

/** Counts one refused connection (or failed accept), in the registry of `context`, from outside any fiber. */
export const recordConnectionRefusedUnsafe = (context: Context.Context<never>, reason: ConnectionRefusal) =>
  counterOf(connectionsRefused, { reason }).updateUnsafe(1, context)

export const paymentsCreated = Metric.counter("kassa_payments_created_total", {
  description: "Payments created, by mode and outcome (accepted: pending; refused: stored failed)",
  incremental: true
})
export const paymentsSettled = Metric.counter("kassa_payments_settled_total", {
  description: "Payments that reached a final status, by mode and outcome (the status reached)",
  incremental: true
})
export const refunds = Metric.counter("kassa_refunds_total", {
  description: "Refunds recorded, by mode and outcome (the refund's status)",
  incremental: true
})

export const webhookDeliveries = Metric.counter("kassa_webhook_deliveries_total", {
  description: "Webhook deliveries finished, by outcome (succeeded, failed)",
  incremental: true
})
export const webhookAttempts = Metric.counter("kassa_webhook_attempts_total", {
  description: "Webhook attempts, by kind (scheduled, manual) and outcome (success, http_status, or the error code)",
  incremental: true
})
export const webhookAttemptDuration = Metric.histogram("kassa_webhook_attempt_duration_seconds", {
  description: "Time of one webhook attempt, by outcome",
  boundaries: callBoundaries
})
export const webhookBacklogDue = Metric.gauge("kassa_webhook_backlog_due", {
  description: "Pending deliveries whose next attempt is due now (read at scrape time)"
})
export const webhookBacklogOverdue = Metric.gauge("kassa_webhook_backlog_overdue", {
  description: "Pending deliveries due for more than a minute: the engine is behind (read at scrape time)"
})

export const providerCalls = Metric.counter("kassa_provider_calls_total", {
  description: "Calls to a payment provider (or the test-mode simulator), by provider, operation and outcome",
  incremental: true
})
export const providerCallDuration = Metric.histogram("kassa_provider_call_duration_seconds", {
  description: "Time of one payment provider call, by provider, operation and outcome",
  boundaries: callBoundaries
})

export const databasePoolInUse = Metric.gauge("kassa_database_pool_in_use", {
  description: "Database connections lent out of this process's pool (read at scrape time)"
})
export const databasePoolWaiting = Metric.gauge("kassa_database_pool_waiting", {
  description: "Fibers waiting for a connection of this process's pool (read at scrape time)"
})
export const databasePoolMax = Metric.gauge("kassa_database_pool_max", {
  description: "Connections this process's pool may open (KASSA_DATABASE_POOL_SIZE; 1 on the embedded database)"
})

export const eventLoopLagP99 = Metric.gauge("kassa_event_loop_lag_p99_seconds", {
  description: "99th percentile of the event loop's delay since the previous scrape"
})
export const eventLoopLagMax = Metric.gauge("kassa_event_loop_lag_max_seconds", {
  description: "Longest event loop delay since the previous scrape"
})

/** Seconds since `started` (a `performance.now()` reading). */
export const secondsSince = (started: number) => (performance.now() - started) / 1000

// One metric per series (metric and label values), made on first use and kept: label values come from small fixed
// sets (see above), so these maps stay small. `Metric.withAttributes` on every update instead copies the context and
// computes the series key again each time (the request metrics alone cost ~10 % of a GET that way). A series is found
// by its label values one map level each, not by a key string joined on every update (~1 % of a request): the values
// are mostly constants (routes, methods, modes, cached number strings) whose hashes V8 keeps.
type Level = Map<string, unknown>
const counters: Level = new Map()
const histograms: Level = new Map()

/** The series of metric `id` with these label values (always given in the same order for one metric). */
const seriesOf = <S>(root: Level, id: string, attributes: Readonly<Record<string, string>>, make: () => S): S => {
  let level = root
  let value = id
  for (const label in attributes) {
    let next = level.get(value) as Level | undefined
    if (next === undefined) {
      next = new Map()
      level.set(value, next)
    }
    level = next
    value = attributes[label] as string
  }
  let series = level.get(value) as S | undefined
  if (series === undefined) {
    series = make()
    level.set(value, series)
  }
  return series
}

/** `counter`'s series with these label values (always given in the same order for one counter). */
const counterOf = (counter: Metric.Counter<number>, attributes: Readonly<Record<string, string>>) =>
  seriesOf(counters, counter.id, attributes, () =>
    Metric.counter(counter.id, { description: counter.description, incremental: true, attributes })
  )

/** `histogram`'s series with these label values; `boundaries` are the histogram's own. */
const histogramOf = (
  histogram: Metric.Histogram<number>,
  boundaries: ReadonlyArray<number>,
  attributes: Readonly<Record<string, string>>
) =>
  seriesOf(histograms, histogram.id, attributes, () =>
    Metric.histogram(histogram.id, { description: histogram.description, boundaries, attributes })
  )

/** Updates series from inside an effect, in its fiber's registry. */
const updating = (update: (context: Context.Context<never>) => void) =>
  Effect.withFiber((fiber) => {
    update(fiber.context)
    return Effect.void
  })

/**
 * Counts one answered request and its latency, in the registry of `context`. `route` is the template
 * (`/api/v1/payments/:id`), never the path. On every request: no effect to run and no series key computed again.
 */
export const recordRequestUnsafe = (
  context: Context.Context<never>,
  method: string,
  route: string,
  status: number,
  seconds: number
) => {
  const attributes = { method, route, status: String(status) }
  counterOf(httpRequests, attributes).updateUnsafe(1, context)
  histogramOf(httpRequestDuration, httpBoundaries, attributes).updateUnsafe(seconds, context)
}

/** {@link recordRequestUnsafe} as an effect. */
export const recordRequest = (method: string, route: string, status: number, seconds: number) =>
  updating((context) => recordRequestUnsafe(context, method, route, status, seconds))

export const recordPaymentCreated = (mode: Mode.Mode, outcome: "accepted" | "refused") =>
  updating((context) => counterOf(paymentsCreated, { mode, outcome }).updateUnsafe(1, context))

/** Counts a payment that reached a final status (paid, failed, cancelled, expired); other statuses are not counted. */
export const recordPaymentSettled = (mode: Mode.Mode, status: string) =>
  status === "pending" || status === "refunded"
    ? Effect.void
    : updating((context) => counterOf(paymentsSettled, { mode, outcome: status }).updateUnsafe(1, context))

export const recordRefund = (mode: Mode.Mode, outcome: string) =>
  updating((context) => counterOf(refunds, { mode, outcome }).updateUnsafe(1, context))

export const recordDelivery = (outcome: "succeeded" | "failed") =>
  updating((context) => counterOf(webhookDeliveries, { outcome }).updateUnsafe(1, context))

export const recordAttempt = (kind: string, outcome: string, seconds: number) =>
  updating((context) => {
    counterOf(webhookAttempts, { kind, outcome }).updateUnsafe(1, context)
    histogramOf(webhookAttemptDuration, callBoundaries, { outcome }).updateUnsafe(seconds, context)
  })

export const recordProviderCall = (provider: string, operation: string, outcome: string, seconds: number) => {
  const attributes = { provider, operation, outcome }
  return updating((context) => {
    counterOf(providerCalls, attributes).updateUnsafe(1, context)
    histogramOf(providerCallDuration, callBoundaries, attributes).updateUnsafe(seconds, context)
  })
}
