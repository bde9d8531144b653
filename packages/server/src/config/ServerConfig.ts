/**
 * The server's settings (decisions §9), read once at start through effect's Config. A bad value stops the
 * start with a message naming the setting; nothing starts half-configured.
 */
import { Config, Context, Effect, Layer, Option, type Redacted } from "effect"

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
  readonly environment: Environment
  /** Addresses and CIDR ranges whose `X-Forwarded-For` is believed (decisions §5). */
  readonly trustedProxies: ReadonlyArray<string>
}

const trimSlash = (url: string) => url.replace(/\/+$/, "")

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
  environment: Config.Literals(["development", "production"], "KASSA_ENV").pipe(Config.withDefault("development")),
  trustedProxies: Config.String("KASSA_TRUSTED_PROXIES").pipe(
    Config.withDefault(""),
    Config.map((value) =>
      value
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0)
    )
  )
}).pipe(
  Config.map(
    ({ baseUrl, ...rest }): ServerSettings => ({
      ...rest,
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
      }
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
      environment: "development",
      trustedProxies: [],
      ...overrides
    })
}
