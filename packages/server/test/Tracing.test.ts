/**
 * OTLP traces and logs (issue 14 §1), exported by effect's OtlpTracer/OtlpLogger to an OTLP/HTTP receiver this test
 * starts (node:http, the JSON encoding effect sends): a server span per request, parented on the request's
 * `traceparent` and carrying its Request-Id; child spans for SQL statements and the provider call; a span per webhook
 * attempt whose id reaches the receiver in `traceparent`, linked to the request that caused its event; the request's
 * log line in the same trace. A call to Stripe (FakeStripe, through the SDK) carries its span's `traceparent`.
 */
import { randomUUID } from "node:crypto"
import { createServer, type Server } from "node:http"
import { ConfigProvider, Effect, Exit, Layer, Logger, Option, Redacted, References, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import * as Lane from "../src/http/Lane.ts"
import * as PaymentCreateLane from "../src/http/PaymentCreateLane.ts"
import * as Tracing from "../src/observability/Tracing.ts"
import { ProviderConnector, ProviderLinkId } from "../src/providers/ProviderConnector.ts"
import * as StripeConnector from "../src/providers/StripeConnector.ts"
import { startFakeStripe } from "./support/FakeStripe.ts"
import { createPayment, query, simulate } from "./support/PaymentFixtures.ts"
import { redisReachable, startRedisProxy } from "./support/TestRedis.ts"
import { databases, startServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

type AnyValue = { readonly stringValue?: string; readonly intValue?: number | string }
interface Attribute {
  readonly key: string
  readonly value: AnyValue
}
interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<Attribute>
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
}
interface LogRecord {
  readonly traceId?: string
  readonly spanId?: string
  readonly body?: AnyValue
  readonly attributes: ReadonlyArray<Attribute>
}

/** An OTLP/HTTP collector: keeps every span and log record it is sent. */
const startCollector = async () => {
  const spans: Array<Span> = []
  const logs: Array<LogRecord> = []
  const paths: Array<string> = []
  const server: Server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      paths.push(request.url ?? "")
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        resourceSpans?: ReadonlyArray<{ scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<Span> }> }>
        resourceLogs?: ReadonlyArray<{ scopeLogs: ReadonlyArray<{ logRecords: ReadonlyArray<LogRecord> }> }>
      }
      for (const resource of body.resourceSpans ?? [])
        for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      for (const resource of body.resourceLogs ?? [])
        for (const scope of resource.scopeLogs) logs.push(...scope.logRecords)
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("collector has no port")
  return {
    url: `http://127.0.0.1:${address.port}`,
    spans,
    logs,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const attribute = (attributes: ReadonlyArray<Attribute>, key: string) => {
  const value = attributes.find((entry) => entry.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : String(value.intValue))
}

const hex = (length: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(length / 2)), (byte) => byte.toString(16).padStart(2, "0")).join("")

describe.each(databases)("tracing on %s", (database) => {
  let collector: Awaited<ReturnType<typeof startCollector>>
  let receiver: WebhookReceiver

  beforeAll(async () => {
    collector = await startCollector()
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
  })

  afterAll(async () => {
    await receiver?.close()
    await collector?.close()
  })

  it("exports a span per request from its traceparent, with SQL, provider and webhook spans, and its logs", async () => {
    const server = await startServer(database, { otlpUrl: Option.some(collector.url) }, { logLevel: "Info" })
    const shop = await server.createApplication({ webhook_url: receiver.url("/traced") })
    const traceId = hex(32)
    const parentId = hex(16)
    const created = await createPayment(server, shop.testKey, {}, { traceparent: `00-${traceId}-${parentId}-01` })
    expect(created.status).toBe(201)
    const requestId = created.headers.get("request-id")
    const paymentId = (created.body as { id: string }).id
    expect((await simulate(server, shop.testKey, paymentId, "paid")).status).toBe(200)
    const [webhook] = await receiver.waitFor(1, "/traced")
    // The attempt's span ends once the answer is read and recorded: wait for the record (bounded), then stop.
    for (let i = 0; i < 100; i++) {
      const rows = await query(server, (sql) => sql`SELECT 1 FROM delivery_attempts WHERE response_status = 200`)
      if (rows.length > 0) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    // Closing flushes what is left to export.
    await server.close()

    const inTrace = collector.spans.filter((span) => span.traceId === traceId)
    const root = inTrace.find((span) => span.parentSpanId === parentId)
    expect(root?.name).toBe("POST /api/v1/payments")
    expect(root?.kind).toBe(2) // SERVER
    expect(attribute(root?.attributes ?? [], "kassa.request_id")).toBe(requestId)
    expect(attribute(root?.attributes ?? [], "http.route")).toBe("/api/v1/payments")
    expect(attribute(root?.attributes ?? [], "http.response.status_code")).toBe("201")

    // Every other span of the trace descends from the request's span.
    const byId = new Map(inTrace.map((span) => [span.spanId, span]))
    const descends = (span: Span): boolean =>
      span.parentSpanId === root?.spanId ||
      (span.parentSpanId !== undefined && byId.has(span.parentSpanId) && descends(byId.get(span.parentSpanId) as Span))
    const children = inTrace.filter((span) => span !== root)
    expect(children.length).toBeGreaterThan(0)
    for (const span of children) expect(descends(span), span.name).toBe(true)
    const statements = children.filter((span) => attribute(span.attributes, "db.query.text") !== undefined)
    expect(statements.map((span) => attribute(span.attributes, "db.query.text")).join("\n")).toMatch(
      /INSERT INTO payments/
    )
    const opened = children.find((span) => span.name === "PaymentProvider.open")
    expect(attribute(opened?.attributes ?? [], "kassa.provider")).toBe("simulator")
    expect(attribute(opened?.attributes ?? [], "kassa.mode")).toBe("test")

    // The webhook attempt: its span's id is the traceparent the receiver got.
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(webhook?.headers.traceparent))
    expect(sent).not.toBeNull()
    const attempt = collector.spans.find((span) => span.spanId === sent?.[2])
    expect(attempt?.name).toBe("webhook.attempt")
    expect(attempt?.traceId).toBe(sent?.[1])
    expect(attribute(attempt?.attributes ?? [], "http.response.status_code")).toBe("200")
    // …linked to the request that caused its event (payment.paid: the simulate request, in its own trace).
    const simulateRoot = collector.spans.find(
      (span) => span.kind === 2 && span.name === "POST /api/v1/test/payments/:id/simulate"
    )
    expect(simulateRoot).toBeDefined()
    expect(attempt?.links?.map((link) => link.traceId)).toEqual([simulateRoot?.traceId])

    // The request's log line is exported too, in the request's trace.
    const line = collector.logs.find((record) => attribute(record.attributes, "request_id") === requestId)
    expect(line?.body?.stringValue).toBe("Sent HTTP response")
    expect(line?.traceId).toBe(traceId)
    expect(collector.paths).toEqual(expect.arrayContaining(["/v1/traces", "/v1/logs"]))
  }, 60_000)

  it("KASSA_OTLP_SAMPLE_RATIO=0 exports no trace started here, and still every trace a caller sampled", async () => {
    const server = await startServer(
      database,
      { otlpUrl: Option.some(collector.url), otlpSampleRatio: 0 },
      { logLevel: "Warn" }
    )
    const shop = await server.createApplication()
    const unsampled = await createPayment(server, shop.testKey)
    expect(unsampled.status).toBe(201)
    const traceId = hex(32)
    const continued = await createPayment(server, shop.testKey, {}, { traceparent: `00-${traceId}-${hex(16)}-01` })
    expect(continued.status).toBe(201)
    await server.close()
    const ids = [unsampled.headers.get("request-id"), continued.headers.get("request-id")]
    const roots = collector.spans.filter((span) => ids.includes(attribute(span.attributes, "kassa.request_id") ?? ""))
    expect(roots.map((span) => span.traceId)).toEqual([traceId])
    expect(collector.spans.filter((span) => span.traceId === traceId).length).toBeGreaterThan(1)
  })

  it("a fetch reads the database once: the key's statement carries the payment's read (issue 23)", async () => {
    const server = await startServer(database, { otlpUrl: Option.some(collector.url) })
    const shop = await server.createApplication()
    // The create uses the key, so the fetch finds `last_used_at` fresh and has nothing to write.
    const paymentId = ((await createPayment(server, shop.testKey)).body as { id: string }).id
    const traceId = hex(32)
    const fetched = await server.request(`/api/v1/payments/${paymentId}`, {
      key: shop.testKey,
      headers: { traceparent: `00-${traceId}-${hex(16)}-01` }
    })
    expect(fetched.status).toBe(200)
    await server.close()
    const statements = collector.spans
      .filter((span) => span.traceId === traceId)
      .flatMap((span) => attribute(span.attributes, "db.query.text") ?? [])
    expect(statements).toHaveLength(1)
    expect(statements[0]).toMatch(/row_to_json[\s\S]*FROM payments[\s\S]*FROM api_keys k/)
  })

  it("a request that starts a trace the sampler drops makes no span: its lines carry no trace, its events none", async () => {
    const server = await startServer(
      database,
      { otlpUrl: Option.some(collector.url), otlpSampleRatio: 0 },
      { logLevel: "Info" }
    )
    const shop = await server.createApplication({ webhook_url: receiver.url("/unsampled") })
    // Refused by the simulator: its event is written inside the provider call's (no-op) span.
    const refused = await createPayment(server, shop.testKey, {}, { "kassa-simulate": "provider_error" })
    expect(refused.status).toBe(502)
    const paymentId = (refused.body as { error: { payment_id: string } }).error.payment_id
    const fetched = await server.request(`/api/v1/payments/${paymentId}`, { key: shop.testKey })
    expect(fetched.status).toBe(200)
    const [event] = await query(server, (sql) => sql`SELECT trace_context FROM events WHERE payment_id = ${paymentId}`)
    await server.close()
    // Not the no-op span's "00-noop-noop-00": no trace at all.
    expect(event).toEqual({ trace_context: null })
    const ids = [refused.headers.get("request-id"), fetched.headers.get("request-id")]
    const lines = collector.logs.filter((record) => ids.includes(attribute(record.attributes, "request_id") ?? ""))
    expect(lines.map((record) => record.body?.stringValue)).toEqual(["Sent HTTP response", "Sent HTTP response"])
    for (const line of lines) expect(line.traceId ?? "").toBe("")
    expect(
      collector.spans.filter((span) => ids.includes(attribute(span.attributes, "kassa.request_id") ?? ""))
    ).toEqual([])
  })

  it("KASSA_OTLP_LOG_LEVEL=warn exports no request's own log line (it stays on stdout); its spans as before", async () => {
    const server = await startServer(
      database,
      { otlpUrl: Option.some(collector.url), otlpLogLevel: "Warn" },
      { logLevel: "Info" }
    )
    const shop = await server.createApplication()
    const created = await createPayment(server, shop.testKey)
    expect(created.status).toBe(201)
    await server.close()
    const requestId = created.headers.get("request-id")
    expect(collector.spans.some((span) => attribute(span.attributes, "kassa.request_id") === requestId)).toBe(true)
    expect(collector.logs.some((record) => attribute(record.attributes, "request_id") === requestId)).toBe(false)
  })

  it.runIf(redisReachable)(
    "a lane request's other log lines carry its Request-Id too, not only its access line (decisions §5)",
    async () => {
      // The rate-limit store goes silent after the start: the request that finds it out logs a warning from inside
      // its authentication, a line that names no request id itself.
      const proxy = await startRedisProxy()
      const server = await startServer(
        database,
        {
          otlpUrl: Option.some(collector.url),
          redisUrl: Option.some(Redacted.make(proxy.url()))
        },
        { logLevel: "Info" }
      )
      const shop = await server.createApplication()
      proxy.freeze()
      const takenBefore = Lane.taken[PaymentCreateLane.route] ?? 0
      const created = await createPayment(server, shop.testKey)
      expect(created.status).toBe(201)
      expect(Lane.taken[PaymentCreateLane.route]).toBe(takenBefore + 1)
      // Thawed before the stop, so it need not wait out the bound on the Redis client's close (2 s).
      proxy.thaw()
      await server.close()
      await proxy.close()
      const requestId = created.headers.get("request-id")
      const warning = collector.logs.find(
        (record) =>
          JSON.stringify(record.body).includes("Rate limit store (Redis) unavailable") &&
          attribute(record.attributes, "request_id") === requestId
      )
      expect(warning).toBeDefined()
    }
  )

  it("exports nothing when no OTLP endpoint is set", async () => {
    const before = collector.paths.length
    const server = await startServer(database)
    const shop = await server.createApplication()
    expect((await createPayment(server, shop.testKey)).status).toBe(201)
    await server.close()
    expect(collector.paths.length).toBe(before)
  })
})

describe("KASSA_OTLP_LOG_LEVEL", () => {
  it("passes on the lines at the level or above, every line at All, and is read in any case", async () => {
    const seen: Array<string> = []
    const inner = Logger.make<unknown, void>(
      (options) => void seen.push(`${options.logLevel} ${String(options.message)}`)
    )
    const logAll = Effect.gen(function* () {
      yield* Effect.logDebug("debug")
      yield* Effect.logInfo("info")
      yield* Effect.logWarning("warn")
      yield* Effect.logError("error")
    }).pipe(Effect.provideService(References.MinimumLogLevel, "All"))
    for (const [minimum, expected] of [
      ["Warn", ["Warn warn", "Error error"]],
      ["Info", ["Info info", "Warn warn", "Error error"]],
      ["All", ["Debug debug", "Info info", "Warn warn", "Error error"]]
    ] as const) {
      seen.length = 0
      await Effect.runPromise(logAll.pipe(Effect.provide(Logger.layer([Tracing.atLeast(inner, minimum)]))))
      expect(seen, minimum).toEqual(expected)
    }
    const read = (value?: string) =>
      Effect.runPromiseExit(
        Effect.map(ServerConfig, (loaded) => loaded.otlpLogLevel).pipe(
          Effect.provide(ServerConfig.layer),
          Effect.provide(
            ConfigProvider.layer(
              ConfigProvider.fromEnvRecord(value === undefined ? {} : { KASSA_OTLP_LOG_LEVEL: value })
            )
          )
        )
      ).then((exit) => (Exit.isSuccess(exit) ? exit.value : String(exit.cause)))
    expect(await read()).toBe("All")
    expect(await read("info")).toBe("Info")
    expect(await read(" NONE ")).toBe("None")
    expect(await read("loud")).toContain(
      "KASSA_OTLP_LOG_LEVEL must be one of all, fatal, error, warn, info, debug, trace, none"
    )
  })
})

describe("the tracer off (an unsampled lane request)", () => {
  /** A line logged and the traceparent read inside a span "child"; the span each line was logged under. */
  const observed = <R>(
    around: (child: Effect.Effect<string | undefined>) => Effect.Effect<string | undefined, never, R>
  ) => {
    const spans: Array<Tracer.AnySpan | undefined> = []
    const capture = Logger.make<unknown, void>((options) => void spans.push(options.fiber.cache.span))
    const child = Effect.log("line").pipe(Effect.andThen(Tracing.currentTraceparent), Effect.withSpan("child"))
    return around(child).pipe(
      Effect.provide(Logger.layer([Tracing.withoutNoopSpans(capture)])),
      Effect.map((traceparent) => ({ traceparent, spans }))
    )
  }

  it("no traceparent and no span for a log line under the no-op spans; a real parent above them is used", async () => {
    const off = await Effect.runPromise(
      observed((child) => child.pipe(Effect.withSpan("inner"), Effect.withTracerEnabled(false)))
    )
    expect(off).toEqual({ traceparent: undefined, spans: [undefined] })

    // A kept span, then the tracer off below it: the traceparent and the line's span are the kept span's.
    const below = await Effect.runPromise(
      observed((child) =>
        Effect.flatMap(Effect.currentSpan, (kept) =>
          child.pipe(
            Effect.withTracerEnabled(false),
            Effect.tap((traceparent) =>
              Effect.sync(() => expect(traceparent).toBe(`00-${kept.traceId}-${kept.spanId}-01`))
            )
          )
        ).pipe(Effect.orDie, Effect.withSpan("kept"))
      )
    )
    expect(below.spans.map((span) => span?._tag === "Span" && span.name)).toEqual(["kept"])
    expect(below.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)

    // The tracer on: the current span, as before.
    const on = await Effect.runPromise(observed((child) => child))
    expect(on.spans.map((span) => span?._tag === "Span" && span.name)).toEqual(["child"])
    expect(on.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
  })

  it("a root kept beforehand is not drawn again; without an endpoint no new trace is kept", () => {
    const made: Array<boolean> = []
    const inner = Tracer.make({
      span: (options) => {
        made.push(options.sampled)
        return Tracer.nativeTracer.span(options)
      }
    })
    const never = Tracing.sampled(inner, 0.5, () => 0.9)
    const program = Effect.void.pipe(Effect.withSpan("root", { annotations: Tracing.keptRoot }))
    Effect.runSync(program.pipe(Effect.withTracer(never)))
    Effect.runSync(Effect.void.pipe(Effect.withSpan("drawn"), Effect.withTracer(never)))
    expect(made).toEqual([true, false])
    const url = Option.some("http://collector")
    expect(Tracing.keepsNewTrace({ otlpUrl: Option.none(), otlpSampleRatio: 1 })).toBe(false)
    expect(Tracing.keepsNewTrace({ otlpUrl: url, otlpSampleRatio: 1 }, () => 0.999)).toBe(true)
    expect(Tracing.keepsNewTrace({ otlpUrl: url, otlpSampleRatio: 0.1 }, () => 0.05)).toBe(true)
    expect(Tracing.keepsNewTrace({ otlpUrl: url, otlpSampleRatio: 0.1 }, () => 0.1)).toBe(false)
    expect(Tracing.keepsNewTrace({ otlpUrl: url, otlpSampleRatio: 0 }, () => 0)).toBe(false)
  })
})

describe("tracing of provider calls", () => {
  it("a call to Stripe carries its span's traceparent", async () => {
    const fake = await startFakeStripe()
    try {
      const link = {
        id: ProviderLinkId.make(randomUUID()),
        secretKey: Effect.succeed(Redacted.make(fake.secretKey)),
        endpointSecret: Effect.succeed(Redacted.make("whsec_unused"))
      }
      const traceId = await Effect.runPromise(
        Effect.gen(function* () {
          const connector = yield* ProviderConnector
          // An unknown session: Stripe answers 404, which is all this needs (the request was made).
          yield* Effect.exit(connector.read(link, "cs_test_unknown"))
          return (yield* Effect.currentSpan).traceId
        }).pipe(
          Effect.withSpan("caller"),
          Effect.provide(StripeConnector.layer.pipe(Layer.provide(ServerConfig.layerWith({ stripeApiUrl: fake.url }))))
        )
      )
      expect(fake.requests.map((request) => request.traceparent)).toEqual([
        expect.stringMatching(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
      ])
    } finally {
      await fake.close()
    }
  })
})
