/**
 * The composition root: every route, middleware and service of the reference server, wired to the
 * configured database and served by Node's HTTP server. Rules live in @kassa/core; this file only says
 * which adapter serves which part of the contract.
 */

import { type IncomingMessage, Server, type ServerOptions, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
// Deep imports: the package index loads every Node integration (Redis, WebSocket, …), ~37 MB a process.
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { ApiError, InvalidRequest, MerchantApi } from "@kassa/core"
import { ByteSize, Duration, Effect, Layer, Option, Schema } from "effect"
import { HttpIncomingMessage, HttpMiddleware, HttpRouter, type HttpServerRequest } from "effect/http"
import { HttpApi, HttpApiBuilder } from "effect/http-api"
import { ApiKeyRepository } from "./applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "./applications/ApplicationRepository.ts"
import * as Authentication from "./auth/Authentication.ts"
import { ClientAddress } from "./auth/ClientAddress.ts"
import { ServerConfig } from "./config/ServerConfig.ts"
import * as DashboardRoutes from "./dashboard/DashboardRoutes.ts"
import * as DashboardServices from "./dashboard/DashboardServices.ts"
import * as Database from "./database/Database.ts"
import * as CheckoutRoutes from "./http/CheckoutRoutes.ts"
import * as ConnectionLimits from "./http/ConnectionLimits.ts"
import * as DocsRoutes from "./http/DocsRoutes.ts"
import { EventsHandlers } from "./http/EventsHandlers.ts"
import { HealthHandlers, ProbeRoutes, probeRoutes } from "./http/HealthHandlers.ts"
import * as MetricsServer from "./http/MetricsServer.ts"
import * as PaymentCreateLane from "./http/PaymentCreateLane.ts"
import * as PaymentFetchLane from "./http/PaymentFetchLane.ts"
import { PaymentsHandlers } from "./http/PaymentsHandlers.ts"
import * as ProviderWebhookRoutes from "./http/ProviderWebhookRoutes.ts"
import * as ResponseMiddleware from "./http/ResponseMiddleware.ts"
import * as RouteFallback from "./http/RouteFallback.ts"
import { TestHandlers } from "./http/TestHandlers.ts"
import * as LedgerServices from "./ledger/LedgerServices.ts"
import * as LiveServices from "./live/LiveServices.ts"
import { Readiness, type ReadinessState } from "./observability/Readiness.ts"
import * as Tracing from "./observability/Tracing.ts"
import * as OperatorHandlers from "./operator/OperatorHandlers.ts"
import * as PaymentServices from "./payments/PaymentServices.ts"
import { Simulator } from "./payments/Simulator.ts"
import * as ProviderServices from "./providers/ProviderServices.ts"
import { Retention } from "./retention/Retention.ts"
import * as PooledRandom from "./security/PooledRandom.ts"
import { ServerSecrets } from "./security/ServerSecrets.ts"
import { DailyStats } from "./stats/DailyStats.ts"
import * as WebhookServices from "./webhooks/WebhookServices.ts"

/** Every path the server answers, for 405 `Allow` (RouteFallback). Pages add theirs here. */
const knownRoutes = (): ReadonlyArray<RouteFallback.KnownRoute> => {
  const routes: Array<RouteFallback.KnownRoute> = [
    ...probeRoutes,
    ...DocsRoutes.routes,
    ...CheckoutRoutes.routes,
    ...ProviderWebhookRoutes.routes,
    ...DashboardRoutes.routes,
    ...OperatorHandlers.knownRoutes()
  ]
  HttpApi.reflect(MerchantApi.MerchantApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      routes.push({ method: endpoint.method, path: endpoint.path })
    }
  })
  return routes
}

/** The merchant API, served from the core's contract; `/openapi.json` (DocsRoutes) comes from the same definition. */
const MerchantRoutes = HttpApiBuilder.layer(MerchantApi.MerchantApi).pipe(
  Layer.provide([HealthHandlers, PaymentsHandlers, EventsHandlers, TestHandlers]),
  Layer.provide([Authentication.layer, InvalidRequest.layer])
)

const Routes = Layer.mergeAll(
  MerchantRoutes,
  OperatorHandlers.layer,
  Layer.unwrap(Effect.map(ServerConfig, (config) => DocsRoutes.layerWith(config.baseUrl))),
  CheckoutRoutes.layer,
  ProviderWebhookRoutes.layer,
  DashboardRoutes.layer,
  ProbeRoutes,
  ResponseMiddleware.layer(knownRoutes())
)

/**
 * Services the routes use, over one database connection pool, with the given test-mode simulator (tests may record
 * what it is asked). Each layer below provides the ones above it: payments → live → ledger → webhooks → … .
 */
export const servicesWith = (simulator: Layer.Layer<Simulator>) =>
  Layer.mergeAll(PaymentServices.layerWith(simulator), DashboardServices.layer, Retention.layer, DailyStats.layer).pipe(
    // Live mode's use cases (issue 12): live creates, the provider's answers, refunds, the reconciler.
    Layer.provideMerge(LiveServices.layer),
    // Payment rows, the event outbox, idempotency records and the write kernel.
    Layer.provideMerge(LedgerServices.layer),
    // The webhook engine: its dispatcher fibers, and the wake-up the event outbox calls after a commit.
    Layer.provideMerge(WebhookServices.layer),
    Layer.provideMerge(Authentication.MerchantAuth.layer),
    Layer.provideMerge(ClientAddress.layer),
    // Live providers (issue 12): the connector, provider links and linking.
    Layer.provideMerge(ProviderServices.layer),
    Layer.provideMerge(Layer.mergeAll(ApplicationRepository.layer, ApiKeyRepository.layer)),
    Layer.provideMerge(Database.layer),
    Layer.provideMerge(Readiness.layer),
    Layer.provideMerge(ServerSecrets.layer),
    // Node's crypto, with its SecureRandom replaced by one drawing its bytes in batches (PooledRandom).
    Layer.provideMerge(Layer.merge(NodeCrypto.layer, PooledRandom.layer))
  )

/** Services the routes use, with the production simulator. */
export const Services = servicesWith(Simulator.layer)

/** The server could not bind its address: the start stops with a message naming the address and the settings. */
export class ListenError extends Schema.TaggedError<ListenError>()("ListenError", {
  address: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot listen on ${this.address} (${this.reason}); choose another KASSA_PORT or KASSA_HOST`
  }
}

/**
 * A connection idle when the stop begins is closed only after this grace: a keep-alive client may have sent its next
 * request a moment ago (it crosses the close on the wire), and a connection closed under a request that has arrived
 * is reset. One that gets a request meanwhile is answered with `Connection: close`; half a second covers a round
 * trip to almost any client (and adds at most that to a stop). Closing idle connections at once reset 5 of 3,274
 * requests of looping clients (issue 23).
 */
const idleCloseGraceMs = 500

/**
 * Node's HTTP server, draining gracefully: once `close` is called (shutdown), it accepts no connection, and every
 * answer still to be sent carries `Connection: close`, so a keep-alive client does not send its next request down a
 * connection that is about to close, and the connection closes once its answer is sent. Connections idle at that
 * moment are closed after {@link idleCloseGraceMs}, with what arrived on them meanwhile answered. Without this the
 * in-flight answers promised `keep-alive`, and the request a client sent right after one was reset.
 */
class DrainingServer extends Server {
  private draining = false
  private readonly unanswered = new Set<ServerResponse>()
  /** Turns not-ready (`/readyz` 503) the moment the stop begins. */
  private readonly readiness: ReadinessState
  /** The listener closes this long after, so a load balancer probing `/readyz` stops sending first. */
  private readonly drainDelay: number

  /** Requests it answers itself, below effect's router (http/Lane.ts); false hands one to the router. */
  private readonly lane: (request: IncomingMessage, response: ServerResponse) => boolean

  constructor(
    options: ServerOptions,
    readiness: ReadinessState,
    drainDelay: number,
    lane: (request: IncomingMessage, response: ServerResponse) => boolean
  ) {
    super(options)
    this.readiness = readiness
    this.drainDelay = drainDelay
    this.lane = lane
  }

  /** Every request is seen here first: counted for the drain, then answered by the lane or by effect's server. */
  // biome-ignore lint/suspicious/noExplicitAny: Node's own signature for `emit`.
  override emit(event: string, ...args: Array<any>): boolean {
    if (event === "request") {
      const [request, response] = args as [IncomingMessage, ServerResponse]
      if (this.draining) response.shouldKeepAlive = false
      this.unanswered.add(response)
      response.once("close", () => this.unanswered.delete(response))
      if (this.lane(request, response)) return true
    }
    return super.emit(event, ...args)
  }

  override close(callback?: (error?: Error) => void): this {
    this.readiness.draining = true
    const close = () => {
      this.draining = true
      for (const response of this.unanswered) if (!response.headersSent) response.shouldKeepAlive = false
      // Stops accepting; Node's own close would also close the idle connections at once (below).
      super.close(callback)
      setTimeout(() => super.closeIdleConnections(), idleCloseGraceMs).unref()
    }
    if (this.drainDelay > 0) setTimeout(close, this.drainDelay).unref()
    else close()
    return this
  }

  /** Node's `close` calls this; while draining the idle connections are closed after the grace, not at once. */
  override closeIdleConnections(): void {
    if (!this.draining) super.closeIdleConnections()
  }
}

/**
 * Node's own refusals (a request it cannot parse: 400, headers too large: 431, a request not received in time: 408)
 * answered in the error envelope, like every other error, instead of Node's bare status line.
 */
const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex & { bytesWritten?: number }) => {
  // Nothing to answer on a connection that is gone or has already started an answer.
  if (error.code === "ECONNRESET" || !socket.writable || (socket.bytesWritten ?? 0) > 0) {
    socket.destroy()
    return
  }
  const status = error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400
  const message =
    status === 431
      ? "The request headers are too large."
      : status === 408
        ? "The request was not received in time."
        : "The request is not valid HTTP."
  const body = JSON.stringify(ApiError.toWire(new ApiError.HttpError({ message, httpStatus: status })))
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      "Content-Type: application/json\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "X-Content-Type-Options: nosniff\r\n" +
      "Cache-Control: no-store\r\n" +
      "Connection: close\r\n\r\n" +
      body
  )
}

const millis = (duration: Duration.Duration) => Math.max(1, Math.round(Duration.toMillis(duration)))

/**
 * The HTTP server on the configured host and port, its connections capped (ConnectionLimits). In-flight requests get
 * 10 s to finish on shutdown.
 *
 * Timeouts: a whole request (headers and body) must arrive within `KASSA_REQUEST_RECEIVE_TIMEOUT` (Node's 300 s
 * default would let a client hold a connection and a request for five minutes with a body it never sends); idle
 * keep-alive connections stay open `KASSA_KEEP_ALIVE_TIMEOUT` (65 s), longer than load balancers keep theirs (AWS
 * ALB 60 s), so the balancer, not the server, closes an idle connection and never sends a request down one the
 * server is closing. Since Node 18 `headersTimeout` counts from a request's first byte, not from the idle time
 * before it, so it need not exceed the keep-alive timeout (and Node refuses one above `requestTimeout`).
 */
const HttpServerLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    const readiness = yield* Readiness
    // The logger and metrics registry that connection refusals are reported to (ConnectionLimits).
    const context = yield* Effect.context<never>()
    const fetchLane = yield* PaymentFetchLane.make
    const createLane = yield* PaymentCreateLane.make
    const lane = (request: IncomingMessage, response: ServerResponse) =>
      fetchLane(request, response) || createLane(request, response)
    const receive = millis(config.requestReceiveTimeout)
    const createServer = () => {
      const server = new DrainingServer(
        {
          requestTimeout: receive,
          headersTimeout: receive,
          keepAliveTimeout: millis(config.keepAliveTimeout),
          // How often Node checks the two timeouts above (30 s by default, which would double them).
          connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.round(receive / 4)))
        },
        readiness,
        Duration.toMillis(config.drainDelay),
        lane
      )
      // An answer that makes no progress for this long (a client that stopped reading) closes its connection; idle
      // keep-alive connections follow keepAliveTimeout instead, which Node sets while a connection waits.
      server.timeout = millis(config.sendTimeout)
      server.on("clientError", answerClientError)
      ConnectionLimits.attach(server, config, context)
      return server
    }
    const server = NodeHttpServer.layer(createServer, {
      port: config.port,
      host: config.host,
      gracefulShutdownTimeout: "10 seconds"
    })
    // Node's EADDRINUSE with a stack says little to an operator; the handler fails, so it provides nothing.
    return server.pipe(
      Layer.catchTag("ServeError", (error) =>
        Layer.effectContext<Layer.Success<typeof server>, ListenError, never>(
          Effect.fail(
            new ListenError({
              address: `${config.host}:${config.port}`,
              reason: error.cause instanceof Error ? error.cause.message : String(error.cause)
            })
          )
        )
      )
    )
  })
)

/** Bodies over 1 MiB are refused with 413 `http_error` (decisions §2; rendered by the core's InvalidRequest). */
const BodyLimit = Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.mebibytes(1))

/**
 * Traces (issue 14 §1): server spans named by route template, OTLP export when configured. Metrics use effect's
 * process-wide registry: a registry provided here would miss updates made from fibers outside the server's own.
 */
const Observability = Layer.mergeAll(
  // Without an exporter no span leaves the process, so its name is not worth a route lookup on every request.
  Layer.effect(
    HttpMiddleware.SpanNameGenerator,
    Effect.gen(function* () {
      const config = yield* ServerConfig
      if (Option.isNone(config.otlpUrl)) return (request: HttpServerRequest.HttpServerRequest) => request.method
      const templateOf = ResponseMiddleware.routeTemplates(knownRoutes())
      return (request: HttpServerRequest.HttpServerRequest) =>
        `${request.method} ${templateOf(request.method, request.url.split("?")[0] ?? request.url)}`
    })
  ),
  Tracing.layer
)

/** The whole server, given its settings (`ServerConfig`) and a test-mode simulator. */
export const layerWith = (options: { readonly simulator: Layer.Layer<Simulator> }) =>
  // Paths match exactly as written (RouteFallback.exactPaths).
  HttpRouter.serve(Routes, { disableLogger: true, routerConfig: RouteFallback.exactPaths }).pipe(
    Layer.provide(BodyLimit),
    // HttpServer stays visible so tests can read the bound address.
    Layer.provideMerge(HttpServerLive),
    Layer.provideMerge(MetricsServer.layer),
    Layer.provideMerge(servicesWith(options.simulator)),
    Layer.provide(Observability)
  )

/** The whole server, given its settings (`ServerConfig`). */
export const layer = layerWith({ simulator: Simulator.layer })
