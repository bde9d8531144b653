/**
 * The server's settings (decisions §9), read once at start through effect's Config. A bad value stops the
 * start with a message naming the setting; nothing starts half-configured.
 */
import { readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { Config, Context, Duration, Effect, Layer, LogLevel, Option, Redacted } from "effect"
import { SourceError } from "effect/ConfigProvider"

export type Environment = "development" | "production"

export interface ServerSettings {
  readonly port: number
  readonly host: string
  /** Public address of this server, without a trailing slash; `checkout_url` and `docs_url` start with it. */
  readonly baseUrl: string
  /** PostgreSQL; none → the embedded PGlite database in {@link dataDir}. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  readonly secretKey: Option.Option<Redacted.Redacted<string>>
  /** The key being rotated out: what it hashed and sealed still opens, and is re-hashed / re-sealed under the new. */
  readonly secretKeyPrevious: Option.Option<Redacted.Redacted<string>>
  readonly environment: Environment
  /** Addresses and CIDR ranges whose `X-Forwarded-For` is believed (decisions §5). */
  readonly trustedProxies: ReadonlyArray<string>
  /** How long a request may take before it is answered 500 `server_error` with `Retry-After`. */
  readonly requestDeadline: Duration.Duration
  /** How long a client may take to send a whole request, headers and body (Node's `requestTimeout`). */
  readonly requestReceiveTimeout: Duration.Duration
  /** How long an idle keep-alive connection stays open; above load balancers' idle timeouts (60 s on AWS ALB). */
  readonly keepAliveTimeout: Duration.Duration
  /**
   * How long an answer may make no progress before its connection is closed (Node's `server.timeout`): a client that
   * stops reading would otherwise hold the connection, and what is queued for it, for good.
   */
  readonly sendTimeout: Duration.Duration
  /** PostgreSQL's `statement_timeout` and `idle_in_transaction_session_timeout` for the server's connections. */
  readonly databaseStatementTimeout: Duration.Duration
  /** Where the Stripe SDK sends its requests (protocol, host and port only): Stripe, or a fake in tests. */
  readonly stripeApiUrl: string
  /** Where the Mollie SDK sends its requests (protocol, host and port only): Mollie, or a fake in tests. */
  readonly mollieApiUrl: string
  /** Port of the separate `/metrics` listener; none → no metrics listener (never on the public port). */
  readonly metricsPort: Option.Option<number>
  /** Address the metrics listener binds (loopback unless the operator opens it). */
  readonly metricsHost: string
  /** OTLP/HTTP base URL (`/v1/traces` and `/v1/logs` are appended); none → no trace or log export. */
  readonly otlpUrl: Option.Option<string>
  /** Share of traces started here that are exported (0 to 1); a continued trace keeps its caller's decision. */
  readonly otlpSampleRatio: number
  /**
   * The least severe log line also sent over OTLP (stdout always has every line): `All` by default; `Warn` keeps each
   * request's own line (~1 KB) out of the collector. No CPU difference measured either way (issue 23).
   */
  readonly otlpLogLevel: LogLevel.LogLevel
  /** How long `/readyz` answers 503 at SIGTERM before the listener closes, so a load balancer stops sending. */
  readonly drainDelay: Duration.Duration
  /** Whether a start applies pending migrations (`KASSA_MIGRATE`, default true); off → `kassa migrate` does. */
  readonly migrate: boolean
  /** Production on the embedded database is refused unless this is set (`KASSA_ALLOW_EMBEDDED=1`). */
  readonly allowEmbedded: boolean
  /** Connections in the PostgreSQL pool of one process (at least 4: the delivery engine holds 2). */
  readonly databasePoolSize: number
  /**
   * How long finished deliveries, their attempts and the events of final payments (events: 30 days at least) are
   * kept; none → forever.
   */
  readonly retentionDeliveries: Option.Option<Duration.Duration>
  /** How long audit entries are kept; none → forever. */
  readonly retentionAudit: Option.Option<Duration.Duration>
  /** Webhook attempts in flight in one process. */
  readonly deliveryConcurrency: number
  /** Webhook attempts in flight to one URL from one process. */
  readonly deliveryConcurrencyPerUrl: number
  /** Server processes on the one port (`KASSA_WORKERS`, a number or `auto` = cores; default 1): see Cluster. */
  readonly workers: number
  /**
   * Client connections one process keeps open (Node's `server.maxConnections`); more are closed at once. `auto`: half
   * the process's open-file limit, at most 8,192 ({@link autoMaxConnections}).
   */
  readonly maxConnections: number
  /** Client connections one peer address keeps open (a trusted proxy's are bounded by `maxConnections` only). */
  readonly maxConnectionsPerAddress: number
}

const trimSlash = (url: string) => url.replace(/\/+$/, "")

/** This process's open-file limit (the soft limit, which Node raises to the hard one at start); none off Linux. */
export const openFileLimit = (): Option.Option<number> => {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((entry) => entry.startsWith("Max open files"))
    const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0]
    if (soft === "unlimited") return Option.some(Number.MAX_SAFE_INTEGER)
    const limit = Number(soft)
    return Number.isInteger(limit) && limit > 0 ? Option.some(limit) : Option.none()
  } catch {
    return Option.none()
  }
}

/**
 * `KASSA_MAX_CONNECTIONS=auto`: half the open-file limit, so that the other half is left for what the process opens
 * itself (its database pool, webhook and provider calls, Redis, the metrics and log exporters, files) and a flood
 * of idle connections can never take the descriptors those need; at most 8,192 — about 75 MB of idle sockets (~9 KB
 * each, issue 23) beside a heap of 256 MB (`npm start`), and far more than one process keeps busy (a core answers
 * ~2,000 requests a second; a load balancer in front holds tens) — and at least 64. Where the limit cannot be read
 * (not Linux), 4,096.
 */
export const autoMaxConnections = (limit: Option.Option<number>) =>
  Option.match(limit, {
    onNone: () => 4096,
    onSome: (files) => Math.max(64, Math.min(8192, Math.floor(files / 2)))
  })

/**
 * A retention window: "off" (keep forever) or a duration of at least a day ("90 days", "12 weeks", "2 years", a
 * year being 365 days). Shorter is refused: "90" (milliseconds) or "1 hour" is a typo that would prune history.
 */
export const parseRetention = (text: string): Option.Option<Option.Option<Duration.Duration>> => {
  const value = text.trim().toLowerCase()
  if (value === "off") return Option.some(Option.none())
  const years = /^(\d+) years?$/.exec(value)
  const parsed =
    years !== null ? Option.some(Duration.days(365 * Number(years[1]))) : Duration.fromInput(value as Duration.Input)
  return parsed.pipe(
    Option.filter((window) => Duration.isFinite(window) && Duration.isGreaterThanOrEqualTo(window, Duration.days(1))),
    Option.map(Option.some)
  )
}

const retention = (name: string, fallback: Duration.Duration) =>
  Config.String(name).pipe(
    Config.mapEffect((text) =>
      Option.match(parseRetention(text), {
        onNone: () =>
          Effect.fail(
            new Config.ConfigError(
              new SourceError({
                message: `${name} must be "off" or a duration of at least 1 day, such as "90 days" or "2 years" (got ${JSON.stringify(text)})`
              })
            )
          ),
        onSome: Effect.succeed
      })
    ),
    Config.withDefault(Option.some(fallback))
  )

/** A log level by name, any case (`warn`, `INFO`); `all` is every line, `none` no line. */
const logLevel = (name: string, fallback: LogLevel.LogLevel) =>
  Config.String(name).pipe(
    Config.mapEffect((text) => {
      const level = LogLevel.values.find((value) => value.toLowerCase() === text.trim().toLowerCase())
      return level === undefined
        ? Effect.fail(
            new Config.ConfigError(
              new SourceError({
                message: `${name} must be one of ${LogLevel.values.map((value) => value.toLowerCase()).join(", ")} (got ${JSON.stringify(text)})`
              })
            )
          )
        : Effect.succeed(level)
    }),
    Config.withDefault(fallback)
  )

/** Reads the settings from the environment (or any ConfigProvider). */
export const settings: Config.Config<ServerSettings> = Config.all({
  port: Config.Port("KASSA_PORT").pipe(Config.withDefault(4000)),
  host: Config.NonEmptyString("KASSA_HOST").pipe(Config.withDefault("127.0.0.1")),
  baseUrl: Config.option(Config.URL("KASSA_BASE_URL")),
  databaseUrl: Config.option(Config.Redacted("DATABASE_URL")),
  dataDir: Config.NonEmptyString("KASSA_DATA_DIR").pipe(Config.withDefault("./.kassa")),
  redisUrl: Config.option(Config.Redacted("KASSA_REDIS_URL")),
  adminToken: Config.option(Config.Redacted("KASSA_ADMIN_TOKEN")),
  secretKey: Config.option(Config.Redacted("KASSA_SECRET_KEY")),
  secretKeyPrevious: Config.option(Config.Redacted("KASSA_SECRET_KEY_PREVIOUS")),
  environment: Config.Literals(["development", "production"], "KASSA_ENV").pipe(Config.withDefault("development")),
  trustedProxies: Config.String("KASSA_TRUSTED_PROXIES").pipe(
    Config.withDefault(""),
    Config.map((value) =>
      value
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0)
    )
  ),
  requestDeadline: Config.Duration("KASSA_REQUEST_DEADLINE").pipe(Config.withDefault(Duration.seconds(15))),
  requestReceiveTimeout: Config.Duration("KASSA_REQUEST_RECEIVE_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(30))
  ),
  keepAliveTimeout: Config.Duration("KASSA_KEEP_ALIVE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(65))),
  sendTimeout: Config.Duration("KASSA_SEND_TIMEOUT").pipe(Config.withDefault(Duration.minutes(2))),
  databaseStatementTimeout: Config.Duration("KASSA_DATABASE_STATEMENT_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(30))
  ),
  stripeApiUrl: Config.NonEmptyString("KASSA_STRIPE_API_URL").pipe(Config.withDefault("https://api.stripe.com")),
  mollieApiUrl: Config.NonEmptyString("KASSA_MOLLIE_API_URL").pipe(Config.withDefault("https://api.mollie.com")),
  metricsPort: Config.option(Config.Port("KASSA_METRICS_PORT")),
  metricsHost: Config.NonEmptyString("KASSA_METRICS_HOST").pipe(Config.withDefault("127.0.0.1")),
  // KASSA_OTLP_URL wins over OpenTelemetry's standard variable when both are set.
  otlpUrl: Config.all([
    Config.option(Config.URL("KASSA_OTLP_URL")),
    Config.option(Config.URL("OTEL_EXPORTER_OTLP_ENDPOINT"))
  ]).pipe(
    Config.map(([own, standard]) =>
      Option.map(
        Option.orElse(own, () => standard),
        (url) => trimSlash(url.toString())
      )
    )
  ),
  otlpSampleRatio: Config.Number("KASSA_OTLP_SAMPLE_RATIO").pipe(Config.withDefault(1)),
  otlpLogLevel: logLevel("KASSA_OTLP_LOG_LEVEL", "All"),
  drainDelay: Config.Duration("KASSA_DRAIN_DELAY").pipe(Config.withDefault(Duration.zero)),
  migrate: Config.Boolean("KASSA_MIGRATE").pipe(Config.withDefault(true)),
  allowEmbedded: Config.Boolean("KASSA_ALLOW_EMBEDDED").pipe(Config.withDefault(false)),
  databasePoolSize: Config.Int("KASSA_DATABASE_POOL_SIZE").pipe(Config.withDefault(20)),
  retentionDeliveries: retention("KASSA_RETENTION_DELIVERIES", Duration.days(90)),
  retentionAudit: retention("KASSA_RETENTION_AUDIT", Duration.days(730)),
  deliveryConcurrency: Config.Int("KASSA_DELIVERY_CONCURRENCY").pipe(Config.withDefault(256)),
  deliveryConcurrencyPerUrl: Config.Int("KASSA_DELIVERY_CONCURRENCY_PER_URL").pipe(Config.withDefault(16)),
  // "auto" is this machine's cores; anything else must be a whole number (checked in `problems`).
  workers: Config.String("KASSA_WORKERS").pipe(
    Config.withDefault("1"),
    Config.map((value) => (value.trim() === "auto" ? availableParallelism() : Number(value.trim())))
  ),
  maxConnections: Config.String("KASSA_MAX_CONNECTIONS").pipe(
    Config.withDefault("auto"),
    Config.map((value) => (value.trim() === "auto" ? autoMaxConnections(openFileLimit()) : Number(value.trim())))
  ),
  maxConnectionsPerAddress: Config.Int("KASSA_MAX_CONNECTIONS_PER_ADDRESS").pipe(Config.withDefault(256))
}).pipe(
  Config.map(
    ({ baseUrl, ...rest }): ServerSettings => ({
      ...rest,
      stripeApiUrl: trimSlash(rest.stripeApiUrl),
      mollieApiUrl: trimSlash(rest.mollieApiUrl),
      baseUrl: Option.match(baseUrl, {
        onNone: () => `http://localhost:${rest.port}`,
        onSome: (url) => trimSlash(url.toString())
      })
    })
  )
)

/** A production start without its secrets is refused with a message that says what to set. */
export class MissingProductionSetting extends Error {
  override readonly name = "MissingProductionSetting"
}

/** A setting that parses but cannot be right (a short secret, a base URL that is no web address). */
export class InvalidSetting extends Error {
  override readonly name = "InvalidSetting"
}

/** Shortest admin token and secret key production accepts: 32 characters, what `openssl rand -base64 24` gives. */
export const minimumSecretLength = 32

/** Why the settings cannot serve, one message per bad setting; empty when they can. */
export const problems = (loaded: ServerSettings): ReadonlyArray<string> => {
  const found: Array<string> = []
  // checkout_url, docs_url and every redirect start with the base URL: anything but an absolute web address
  // (`javascript:…`, `file:…`) would put the scheme in front of payers.
  const base = URL.parse(loaded.baseUrl)
  if (base === null || (base.protocol !== "http:" && base.protocol !== "https:") || base.hostname === "") {
    found.push(`KASSA_BASE_URL must be an absolute http:// or https:// address (got ${JSON.stringify(loaded.baseUrl)})`)
  }
  // The provider SDKs take a protocol, a host and a port (Mollie's adds its own `/v2/…` paths): a path or query
  // would be dropped without a word, and the secret key must not travel in clear text to a real provider.
  for (const [name, value, example, provider] of [
    ["KASSA_STRIPE_API_URL", loaded.stripeApiUrl, "https://api.stripe.com", "Stripe"],
    ["KASSA_MOLLIE_API_URL", loaded.mollieApiUrl, "https://api.mollie.com", "Mollie"]
  ] as const) {
    const url = URL.parse(value)
    if (
      url === null ||
      (url.protocol !== "http:" && url.protocol !== "https:") ||
      url.hostname === "" ||
      url.pathname !== "/" ||
      url.search !== "" ||
      url.username !== ""
    ) {
      found.push(`${name} must be an https:// address with no path, such as ${example} (got ${JSON.stringify(value)})`)
    } else if (loaded.environment === "production" && url.protocol !== "https:") {
      found.push(`${name} must be https:// in production: the ${provider} secret key travels with every call`)
    }
  }
  if (loaded.environment === "production") {
    for (const [name, value] of [
      ["KASSA_ADMIN_TOKEN", loaded.adminToken],
      ["KASSA_SECRET_KEY", loaded.secretKey],
      ["KASSA_SECRET_KEY_PREVIOUS", loaded.secretKeyPrevious]
    ] as const) {
      if (Option.isSome(value) && Redacted.value(value.value).length < minimumSecretLength) {
        found.push(
          `${name} must be at least ${minimumSecretLength} characters in production (e.g. openssl rand -base64 32)`
        )
      }
    }
  }
  for (const [name, value] of [
    ["KASSA_REQUEST_DEADLINE", loaded.requestDeadline],
    ["KASSA_REQUEST_RECEIVE_TIMEOUT", loaded.requestReceiveTimeout],
    ["KASSA_KEEP_ALIVE_TIMEOUT", loaded.keepAliveTimeout],
    ["KASSA_SEND_TIMEOUT", loaded.sendTimeout],
    ["KASSA_DATABASE_STATEMENT_TIMEOUT", loaded.databaseStatementTimeout]
  ] as const) {
    // Zero would switch the bound off in Node and PostgreSQL alike; nothing may wait without one.
    if (!Duration.isFinite(value) || Duration.toMillis(value) < 1) {
      found.push(`${name} must be a positive, finite duration such as "30 seconds"`)
    }
  }
  if (!(loaded.otlpSampleRatio >= 0 && loaded.otlpSampleRatio <= 1)) {
    found.push(`KASSA_OTLP_SAMPLE_RATIO must be a number from 0 to 1, such as 0.1 (got ${loaded.otlpSampleRatio})`)
  }
  // Node's graceful close gives in-flight requests 10 s; the drain delay comes before it and must stay short.
  if (!Duration.isFinite(loaded.drainDelay) || Duration.toMillis(loaded.drainDelay) > 60_000) {
    found.push(`KASSA_DRAIN_DELAY must be a finite duration of at most 60 seconds, such as "5 seconds"`)
  }
  for (const [name, value, minimum, maximum] of [
    // The delivery engine holds two of the pool's connections while it runs (its owner lock and LISTEN): with
    // fewer than two left, requests wait for a connection that never frees (a pool of 2 was seen to hang).
    // PostgreSQL's default max_connections is 100; a pool above 1,000 is a typo, not a plan.
    ["KASSA_DATABASE_POOL_SIZE", loaded.databasePoolSize, 4, 1000],
    ["KASSA_DELIVERY_CONCURRENCY", loaded.deliveryConcurrency, 1, 10_000],
    ["KASSA_DELIVERY_CONCURRENCY_PER_URL", loaded.deliveryConcurrencyPerUrl, 1, 10_000],
    ["KASSA_WORKERS", loaded.workers, 1, 256],
    ["KASSA_MAX_CONNECTIONS", loaded.maxConnections, 1, 1_000_000],
    ["KASSA_MAX_CONNECTIONS_PER_ADDRESS", loaded.maxConnectionsPerAddress, 1, 1_000_000]
  ] as const) {
    if (!(Number.isInteger(value) && value >= minimum && value <= maximum)) {
      found.push(`${name} must be a whole number from ${minimum} to ${maximum} (got ${value})`)
    }
  }
  if (loaded.deliveryConcurrencyPerUrl > loaded.deliveryConcurrency) {
    found.push(
      `KASSA_DELIVERY_CONCURRENCY_PER_URL (${loaded.deliveryConcurrencyPerUrl}) cannot exceed KASSA_DELIVERY_CONCURRENCY (${loaded.deliveryConcurrency})`
    )
  }
  return found
}

export class ServerConfig extends Context.Service<ServerConfig, ServerSettings>()("@kassa/server/ServerConfig") {
  static readonly layer = Layer.effect(
    ServerConfig,
    Effect.gen(function* () {
      const loaded = yield* settings
      if (loaded.environment === "production") {
        const missing = [
          ...(Option.isNone(loaded.adminToken) ? ["KASSA_ADMIN_TOKEN"] : []),
          ...(Option.isNone(loaded.secretKey) ? ["KASSA_SECRET_KEY"] : [])
        ]
        if (missing.length > 0) {
          return yield* Effect.die(
            new MissingProductionSetting(
              `KASSA_ENV=production needs ${missing.join(" and ")}: set ${missing.length > 1 ? "them" : "it"} to a long random value (e.g. openssl rand -base64 32)`
            )
          )
        }
        // The embedded database is one process's files with one connection: no replication, no backups by the
        // database, no second server. Production runs on it only when the operator says so.
        if (Option.isNone(loaded.databaseUrl) && !loaded.allowEmbedded) {
          return yield* Effect.die(
            new MissingProductionSetting(
              "KASSA_ENV=production needs DATABASE_URL (PostgreSQL): the embedded database is for development; set KASSA_ALLOW_EMBEDDED=1 to run production on it anyway"
            )
          )
        }
      }
      const invalid = problems(loaded)
      if (invalid.length > 0) return yield* Effect.die(new InvalidSetting(invalid.join("; ")))
      return loaded
    })
  )

  /** Fixed settings, for tests. */
  static readonly layerWith = (overrides: Partial<ServerSettings>) =>
    Layer.succeed(ServerConfig, {
      port: 0,
      host: "127.0.0.1",
      baseUrl: "http://localhost:4000",
      databaseUrl: Option.none(),
      dataDir: "./.kassa",
      redisUrl: Option.none(),
      adminToken: Option.none(),
      secretKey: Option.none(),
      secretKeyPrevious: Option.none(),
      environment: "development",
      trustedProxies: [],
      requestDeadline: Duration.seconds(15),
      requestReceiveTimeout: Duration.seconds(30),
      keepAliveTimeout: Duration.seconds(65),
      sendTimeout: Duration.minutes(2),
      databaseStatementTimeout: Duration.seconds(30),
      stripeApiUrl: "https://api.stripe.com",
      mollieApiUrl: "https://api.mollie.com",
      metricsPort: Option.none(),
      metricsHost: "127.0.0.1",
      otlpUrl: Option.none(),
      otlpSampleRatio: 1,
      otlpLogLevel: "All",
      drainDelay: Duration.zero,
      migrate: true,
      allowEmbedded: false,
      databasePoolSize: 20,
      retentionDeliveries: Option.some(Duration.days(90)),
      retentionAudit: Option.some(Duration.days(730)),
      deliveryConcurrency: 256,
      deliveryConcurrencyPerUrl: 16,
      workers: 1,
      maxConnections: 8192,
      maxConnectionsPerAddress: 256,
      ...overrides
    })
}
