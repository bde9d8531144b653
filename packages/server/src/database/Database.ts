/**
 * The database: PostgreSQL at `DATABASE_URL`, or the embedded PGlite in the data directory when it is
 * unset. Either way the server gets the same `SqlClient` (`@effect/sql-pg`) and a migrated schema.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option } from "effect"
import { ServerConfig, type ServerSettings } from "../config/ServerConfig.ts"
import { EmbeddedPostgres } from "./EmbeddedPostgres.ts"
import initial from "./migrations/0001_initial.ts"
import deliveryEngine from "./migrations/0002_delivery_engine.ts"
import dashboards from "./migrations/0003_dashboards.ts"
import scale from "./migrations/0004_scale.ts"
import live from "./migrations/0005_live.ts"
import liveCheckout from "./migrations/0006_live_checkout.ts"

/** Migrations in code, so a built server carries them (no files to find at run time). */
export const migrations = PgMigrator.fromRecord({
  "0001_initial": initial,
  "0002_delivery_engine": deliveryEngine,
  "0003_dashboards": dashboards,
  "0004_scale": scale,
  "0005_live": live,
  "0006_live_checkout": liveCheckout
})

const clientOptions = {
  // Rows arrive with snake_case column names unchanged: they are the wire names of the payment object.
  applicationName: "kassa",
  transformJson: false
} as const

/**
 * Bounds on every wait for the network database (issue 11 §3): a statement the server runs longer than the
 * setting is cancelled by PostgreSQL, and so is a transaction left idle (a stuck fiber must not hold locks and a
 * pool slot). Opening a connection gives up after 5 s, and TCP keepalive notices a peer that went away without a
 * word. Requests are bounded on top of this by their deadline (ResponseMiddleware), which also bounds their wait
 * for a pool connection: `@effect/sql-pg`'s pool has no acquire timeout of its own, and interrupting the waiter
 * is how it is given up.
 */
const networkOptions = (config: ServerSettings) => {
  const statementTimeout = String(Math.round(Duration.toMillis(config.databaseStatementTimeout)))
  return {
    connectTimeout: "5 seconds",
    keepAlive: "30 seconds",
    startupParameters: {
      statement_timeout: statementTimeout,
      idle_in_transaction_session_timeout: statementTimeout
    }
  } as const
}

/** A client for the embedded database: exactly one connection (see EmbeddedPostgres). */
const embeddedClient = Layer.unwrap(
  Effect.gen(function* () {
    const embedded = yield* EmbeddedPostgres
    return PgClient.layer({
      ...clientOptions,
      host: embedded.host,
      port: embedded.port,
      username: "postgres",
      database: "postgres",
      // PGlite compiles its WebAssembly at start; on a busy machine the first connection can take seconds.
      connectTimeout: "60 seconds",
      maxConnections: 1,
      minConnections: 1
    })
  })
)

/** The SqlClient for the configured database, migrated. */
export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    const client = Option.match(config.databaseUrl, {
      onSome: (url) => PgClient.layer({ ...clientOptions, ...networkOptions(config), url, maxConnections: 20 }),
      onNone: () => embeddedClient.pipe(Layer.provide(EmbeddedPostgres.layer(config.dataDir)))
    })
    const migrated = PgMigrator.layer({ loader: migrations, table: "kassa_migrations" }).pipe(
      Layer.provide(NodeServices.layer)
    )
    return Layer.provideMerge(migrated, client)
  })
)
