/**
 * The database: PostgreSQL at `DATABASE_URL`, or the embedded PGlite in the data directory when it is
 * unset. Either way the server gets the same `SqlClient` (`@effect/sql-pg`) and a migrated schema.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgMigrator } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ServerConfig, type ServerSettings } from "../config/ServerConfig.ts"
import * as Columns from "./Columns.ts"
import { EmbeddedPostgres } from "./EmbeddedPostgres.ts"
import initial from "./migrations/0001_initial.ts"
import deliveryEngine from "./migrations/0002_delivery_engine.ts"
import dashboards from "./migrations/0003_dashboards.ts"
import scale from "./migrations/0004_scale.ts"
import live from "./migrations/0005_live.ts"
import liveCheckout from "./migrations/0006_live_checkout.ts"
import retention from "./migrations/0007_retention.ts"
import traceContext from "./migrations/0008_trace_context.ts"
import providerReads from "./migrations/0009_provider_reads.ts"
import dropProviderAccount from "./migrations/0010_drop_provider_account.ts"
import providerNeutralColumns from "./migrations/0011_provider_neutral_columns.ts"
import mollieLinks from "./migrations/0012_mollie_links.ts"
import discrepancyResolution from "./migrations/0013_discrepancy_resolution.ts"
import eventsApi from "./migrations/0014_events_api.ts"
import dailyStats from "./migrations/0015_daily_stats.ts"
import paymentSearch from "./migrations/0016_payment_search.ts"
import settlementSource from "./migrations/0017_settlement_source.ts"
import checkoutBranding from "./migrations/0018_checkout_branding.ts"
import * as ObservedPgClient from "./ObservedPgClient.ts"

/** Migrations in code, so a built server carries them (no files to find at run time). */
export const migrations = PgMigrator.fromRecord({
  "0001_initial": initial,
  "0002_delivery_engine": deliveryEngine,
  "0003_dashboards": dashboards,
  "0004_scale": scale,
  "0005_live": live,
  "0006_live_checkout": liveCheckout,
  "0007_retention": retention,
  "0008_trace_context": traceContext,
  "0009_provider_reads": providerReads,
  "0010_drop_provider_account": dropProviderAccount,
  "0011_provider_neutral_columns": providerNeutralColumns,
  "0012_mollie_links": mollieLinks,
  "0013_discrepancy_resolution": discrepancyResolution,
  "0014_events_api": eventsApi,
  "0015_daily_stats": dailyStats,
  "0016_payment_search": paymentSearch,
  "0017_settlement_source": settlementSource,
  "0018_checkout_branding": checkoutBranding
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
export const embeddedClient = Layer.unwrap(
  Effect.gen(function* () {
    const embedded = yield* EmbeddedPostgres
    return ObservedPgClient.layer({
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
      onSome: (url) =>
        ObservedPgClient.layer({
          ...clientOptions,
          ...networkOptions(config),
          url,
          maxConnections: config.databasePoolSize
        }),
      onNone: () => embeddedClient.pipe(Layer.provide(EmbeddedPostgres.layer(config.dataDir)))
    })
    // Migrated at start unless KASSA_MIGRATE=false (`kassa serve --no-migrate`); either way the schema must then be
    // exactly this build's, or the start stops.
    const ready = Layer.effectDiscard(
      Effect.gen(function* () {
        if (config.migrate) yield* migrate
        yield* requireCurrentSchema
      })
    )
    return Layer.provideMerge(ready, client)
  })
)

/** The SqlClient for the configured database, not migrated (`kassa migrate`). */
export const clientLayer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    return Option.match(config.databaseUrl, {
      onSome: (url) =>
        ObservedPgClient.layer({
          ...clientOptions,
          ...networkOptions(config),
          url,
          maxConnections: config.databasePoolSize
        }),
      onNone: () => embeddedClient.pipe(Layer.provide(EmbeddedPostgres.layer(config.dataDir)))
    })
  })
)

const migrationTable = "kassa_migrations"

/** Ids and names of the migrations this build carries, oldest first. */
export const knownMigrations = migrations.pipe(
  Effect.map((loaded) => loaded.map(([id, name]) => ({ id, name }))),
  Effect.orDie
)

/**
 * Applies the pending migrations; returns those applied here. Effect's migrator takes
 * `LOCK TABLE kassa_migrations IN ACCESS EXCLUSIVE MODE` in its transaction, so a second process starting at the
 * same time waits (bounded by the statement timeout) for the first to commit, then finds nothing left to apply.
 */
export const migrate = PgMigrator.run({ loader: migrations, table: migrationTable }).pipe(
  Effect.map((applied) => applied.map(([id, name]) => ({ id, name }))),
  Effect.provide(NodeServices.layer)
)

/** Whether the migrations' table exists (its name, as `to_regclass` answers it). */
const MigrationTableRow = Schema.Struct({ found: Schema.NullOr(Schema.String) })

/** The newest migration recorded; null while none is. */
const LatestMigrationRow = Schema.Struct({ latest: Columns.NullableInteger })

/** The newest migration recorded in the database; 0 on a database never migrated. */
export const appliedVersion = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const table = yield* Columns.first(MigrationTableRow)(sql`SELECT to_regclass(${migrationTable})::text AS found`)
  if (Option.isNone(table) || table.value.found === null) return 0
  const latest = yield* Columns.first(LatestMigrationRow)(
    sql`SELECT max(migration_id) AS latest FROM ${sql(migrationTable)}`
  )
  return Option.match(latest, { onNone: () => 0, onSome: (row) => row.latest ?? 0 })
}).pipe(
  // A row that does not decode is a broken database; a failing database stays the caller's error to report.
  Effect.catchTag("SchemaError", Effect.die)
)

/**
 * The database's schema is not this build's: behind (migrations not applied, the server started with
 * KASSA_MIGRATE=false) or ahead (a newer Kassa migrated it). Either way this build does not serve it.
 */
export class SchemaNotCurrent extends Schema.TaggedError<SchemaNotCurrent>()("SchemaNotCurrent", {
  applied: Schema.Number,
  known: Schema.Number
}) {
  override get message() {
    return this.applied < this.known
      ? `the database schema is behind this build (migration ${this.applied}, this build needs ${this.known}): run \`kassa migrate\` (or start without KASSA_MIGRATE=false / --no-migrate)`
      : `the database schema is ahead of this build (migration ${this.applied}, this build knows up to ${this.known}): a newer Kassa migrated it; run that version (older builds do not serve a newer schema)`
  }
}

/** Fails with {@link SchemaNotCurrent} unless the database is at exactly this build's newest migration. */
export const requireCurrentSchema = Effect.gen(function* () {
  const known = (yield* knownMigrations).reduce((latest, { id }) => Math.max(latest, id), 0)
  const applied = yield* appliedVersion
  if (applied !== known) return yield* new SchemaNotCurrent({ applied, known })
})
