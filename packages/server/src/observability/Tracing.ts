/**
 * Traces and logs over OTLP/HTTP (JSON), with effect's own exporters (`effect/observability` OtlpTracer and
 * OtlpLogger) when `KASSA_OTLP_URL` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set; nothing otherwise (effect's native
 * tracer then keeps spans in memory only, for `traceparent`). Effect's HTTP server already makes a span per request
 * from the incoming `traceparent`, and its SQL client a child span per statement; this module only picks the
 * exporter, and `traceparent` is how outgoing calls (webhooks, the payment provider) carry the current span on.
 */
import { AsyncLocalStorage } from "node:async_hooks"
import { Context, Effect, Layer, Logger, LogLevel, Option, Tracer } from "effect"
import { FetchHttpClient, HttpTraceContext } from "effect/http"
import { OtlpExporter, OtlpLogger, OtlpSerialization, OtlpTracer } from "effect/observability"
import type Stripe from "stripe"
import { ServerConfig } from "../config/ServerConfig.ts"

export const serviceName = "kassa"

/**
 * Marks a root span whose trace was already kept by {@link keepsNewTrace} (the lanes decide before they make any
 * span): the sampler keeps it instead of drawing again.
 */
export const KeptRoot = Context.Reference<boolean>("@kassa/server/observability/KeptRoot", {
  defaultValue: () => false
})

/** The annotations of a root span {@link keepsNewTrace} kept. */
export const keptRoot = Context.make(KeptRoot, true)

/**
 * Head sampling: a trace that starts here is kept with probability `ratio`; a trace continued from a `traceparent`
 * keeps the caller's decision (effect already leaves a span unsampled under an unsampled parent). Unsampled spans
 * are still made (ids for `traceparent`), not exported.
 */
export const sampled = (inner: Tracer.Tracer, ratio: number, random: () => number = Math.random): Tracer.Tracer =>
  ratio >= 1
    ? inner
    : Tracer.make({
        span: (options) =>
          inner.span({
            ...options,
            sampled:
              options.sampled &&
              (Option.isSome(options.parent) || Context.get(options.annotations, KeptRoot) || random() < ratio)
          }),
        context: inner.context
      })

/**
 * Whether a trace started here would be exported: never without an endpoint, else with the sample ratio. A lane asks
 * before it makes a span, and runs a request whose trace would be dropped with effect's tracer off (issue 23: the
 * spans of such a request cost it ~15 % of its CPU and were never seen); a kept one gets {@link keptRoot}.
 */
export const keepsNewTrace = (
  config: { readonly otlpUrl: Option.Option<string>; readonly otlpSampleRatio: number },
  random: () => number = Math.random
) => Option.isSome(config.otlpUrl) && (config.otlpSampleRatio >= 1 || random() < config.otlpSampleRatio)

/**
 * The span a trace would continue from: as effect picks a parent, a span made with the tracer off (a no-op span,
 * marked `DisablePropagation`, with no real ids) is passed over for its parent.
 */
export const propagated = (span: Tracer.AnySpan | undefined): Tracer.AnySpan | undefined =>
  span !== undefined && span._tag === "Span" && Context.get(span.annotations, Tracer.DisablePropagation)
    ? propagated(Option.getOrUndefined(span.parent))
    : span

/**
 * `inner` with a line logged under a no-op span (the tracer off) given no span: effect's OTLP logger would otherwise
 * send the no-op span's ids, which are not hex, as the line's trace.
 */
export const withoutNoopSpans = <M>(inner: Logger.Logger<M, void>): Logger.Logger<M, void> =>
  Logger.make((options) => {
    const span = options.fiber.cache.span
    if (span === undefined || propagated(span) === span) return inner.log(options)
    const cache = { ...options.fiber.cache, span: propagated(span) }
    inner.log({ ...options, fiber: Object.create(options.fiber, { cache: { value: cache } }) as typeof options.fiber })
  })

/**
 * The lines of `minimum` severity or above, passed on to `inner`: the OTLP log exporter sits behind this, so an
 * operator can keep the per-request lines (stdout has them all) out of the collector.
 */
export const atLeast = <M>(inner: Logger.Logger<M, void>, minimum: LogLevel.LogLevel): Logger.Logger<M, void> =>
  minimum === "All"
    ? inner
    : Logger.make((options) => {
        if (LogLevel.isGreaterThanOrEqualTo(options.logLevel, minimum)) inner.log(options)
      })

/**
 * Exporters for the configured endpoint; an empty layer without one. Log lines keep going to stdout as well; over OTLP
 * only those at `KASSA_OTLP_LOG_LEVEL` or above.
 */
export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    if (Option.isNone(config.otlpUrl)) return Layer.empty
    const base = config.otlpUrl.value
    const resource = {
      serviceName,
      attributes: { "deployment.environment.name": config.environment }
    }
    const tracer = Layer.effect(
      Tracer.Tracer,
      Effect.map(OtlpTracer.make({ url: `${base}/v1/traces`, resource }), (otlp) =>
        sampled(otlp, config.otlpSampleRatio)
      )
    ).pipe(Layer.provideMerge(OtlpExporter.layerFlusher))
    const logs = Logger.layer(
      config.otlpLogLevel === "None"
        ? []
        : [
            Effect.map(OtlpLogger.make({ url: `${base}/v1/logs`, resource }), (otlp) =>
              atLeast(withoutNoopSpans(otlp), config.otlpLogLevel)
            )
          ],
      { mergeWithExisting: true }
    ).pipe(Layer.provideMerge(OtlpExporter.layerFlusher))
    return Layer.mergeAll(tracer, logs).pipe(
      Layer.provide(OtlpSerialization.layerJson),
      Layer.provide(FetchHttpClient.layer)
    )
  })
)

/**
 * The W3C `traceparent` of the current span, for an outgoing request; none outside a span, nor under the no-op spans
 * of a request run with the tracer off.
 */
export const currentTraceparent: Effect.Effect<string | undefined> = Effect.withFiber((fiber) => {
  const span = propagated(fiber.cache.span)
  return Effect.succeed(span?._tag === "Span" ? HttpTraceContext.toHeaders(span).traceparent : undefined)
})

/** The `traceparent` of the span that started an SDK call, for the SDK's HTTP client below to send. */
const outgoing = new AsyncLocalStorage<string>()

/**
 * `run` (a call into an SDK that makes its own HTTP requests) with the current span's `traceparent` carried to
 * {@link carryingTraceparent}'s client: an SDK's per-request options would need it at every call site, and
 * AsyncLocalStorage follows the SDK's own promises to the request it makes.
 */
export const withTraceparent = <A>(run: () => Promise<A>): Effect.Effect<() => Promise<A>> =>
  Effect.map(currentTraceparent, (traceparent) =>
    traceparent === undefined ? run : () => outgoing.run(traceparent, run)
  )

/** The Stripe SDK's HTTP client, sending the `traceparent` {@link withTraceparent} carried, if any. */
export const carryingTraceparent = (inner: Stripe.HttpClient): Stripe.HttpClient => ({
  getClientName: () => inner.getClientName(),
  makeRequest: (host, port, path, method, headers, data, protocol, timeout) => {
    const traceparent = outgoing.getStore()
    return inner.makeRequest(
      host,
      port,
      path,
      method,
      traceparent === undefined ? headers : { ...headers, traceparent },
      data,
      protocol,
      timeout
    )
  }
})
