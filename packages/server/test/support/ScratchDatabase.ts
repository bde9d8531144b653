/**
 * A scratch PostgreSQL database for tests that run the server as processes (`node src/main.ts`, see
 * ServerProcess.ts) rather than in this process like TestServer.ts: the database (`kassa_<prefix>_<random>`), its
 * data dir, the admin token and secret key the processes start with, an application seeded through the repositories,
 * and one-connection queries for checking what the processes stored.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeCrypto } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Application, type Mode } from "@kassa/core"
import { Array as Arr, Effect, Layer, Option, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository, type NewApplication } from "../../src/applications/ApplicationRepository.ts"
import { ServerConfig } from "../../src/config/ServerConfig.ts"
import * as Database from "../../src/database/Database.ts"
import { ServerSecrets } from "../../src/security/ServerSecrets.ts"
import { maintenance, postgresUrl } from "./TestServer.ts"

export interface ScratchDatabase {
  readonly name: string
  readonly url: string
  readonly dataDir: string
  readonly adminToken: string
  readonly secretKey: string
  /** CREATE DATABASE; call it in beforeAll. */
  readonly create: () => Promise<void>
  /** The environment a server process on this database starts with, plus `extra`. */
  readonly serverEnv: (extra?: Record<string, string>) => Record<string, string>
  /**
   * An active application (Application.defaults under `fields`) with one key of `mode`, made through the
   * repositories. It migrates the database first unless `migrate` is false (a server process migrated it already).
   */
  readonly seedApplication: (
    fields: Partial<NewApplication> & { readonly name: string },
    options: { readonly mode: Mode.Mode; readonly webhookSecret: string; readonly migrate?: boolean }
  ) => Promise<{ readonly id: string; readonly key: string }>
  /** Rows of one statement, over one connection of its own. */
  readonly query: <A extends object>(
    run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>
  ) => Promise<ReadonlyArray<A>>
  /** Any effect on the database, over one connection of its own. */
  readonly run: <A>(effect: Effect.Effect<A, unknown, PgClient.PgClient>) => Promise<A>
  /**
   * Writes `count` payment.paid events of the payment, each with a pending delivery due now, straight into the outbox
   * tables in one transaction (as the payment code writes them one change at a time; the commit's NOTIFY wakes the
   * delivery engines); answers their ids.
   */
  readonly insertPaidEvents: (options: {
    readonly applicationId: string
    readonly paymentId: string
    readonly count: number
  }) => Promise<ReadonlyArray<string>>
  /** DROP DATABASE (closing whatever is still connected) and remove the data dir; call it in afterAll. */
  readonly drop: () => Promise<void>
}

/** Names the database, makes its data dir and picks its tokens; nothing touches PostgreSQL before `create`. */
export const scratchDatabase = (prefix: string): ScratchDatabase => {
  const name = `kassa_${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  const url = Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString()
  const label = prefix.replaceAll("_", "-")
  const dataDir = mkdtempSync(join(tmpdir(), `kassa-${label}-`))
  const adminToken = `${label}-admin-token-0123456789abcdef`
  const secretKey = `${label}-secret-key-0123456789abcdef`

  const run = <A>(effect: Effect.Effect<A, unknown, PgClient.PgClient>) =>
    Effect.runPromise(
      effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.scoped)
    )

  const query = <A extends object>(run_: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
    run(
      Effect.gen(function* () {
        return yield* run_(yield* PgClient.PgClient)
      })
    )

  const seedApplication: ScratchDatabase["seedApplication"] = (fields, options) => {
    const fixture = Layer.mergeAll(ApplicationRepository.layer, ApiKeyRepository.layer).pipe(
      Layer.provideMerge(Database.layer),
      Layer.provideMerge(ServerSecrets.layer),
      Layer.provideMerge(NodeCrypto.layer),
      Layer.provide(
        ServerConfig.layerWith({
          databaseUrl: Option.some(Redacted.make(url)),
          adminToken: Option.some(Redacted.make(adminToken)),
          secretKey: Option.some(Redacted.make(secretKey)),
          dataDir,
          migrate: options.migrate ?? true
        })
      )
    )
    return Effect.runPromise(
      Effect.gen(function* () {
        const application = yield* (yield* ApplicationRepository).create(
          { ...Application.defaults, status: "active", ...fields },
          options.webhookSecret
        )
        const issued = yield* (yield* ApiKeyRepository).issue(application.id, options.mode)
        return { id: application.id, key: issued.key }
      }).pipe(Effect.provide(fixture))
    )
  }

  const insertPaidEvents: ScratchDatabase["insertPaidEvents"] = ({ applicationId, paymentId, count }) =>
    run(
      Effect.gen(function* () {
        const sql = yield* PgClient.PgClient
        const now = new Date()
        const events = Array.from({ length: count }, () => {
          const id = `evt_${crypto.randomUUID()}`
          return {
            id,
            application_id: applicationId,
            payment_id: paymentId,
            mode: "test",
            event: "payment.paid",
            body: JSON.stringify({ id, event: "payment.paid", created_at: now.toISOString(), data: { id: paymentId } }),
            created_at: now
          }
        })
        const deliveries = events.map((event) => ({
          id: crypto.randomUUID(),
          event_id: event.id,
          application_id: applicationId,
          status: "pending",
          next_attempt_at: now,
          created_at: now,
          updated_at: now
        }))
        if (!Arr.isArrayNonEmpty(events) || !Arr.isArrayNonEmpty(deliveries)) return []
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO events ${sql.insert(events)}`
            yield* sql`INSERT INTO deliveries ${sql.insert(deliveries)}`
          })
        )
        return events.map((event) => event.id)
      })
    )

  return {
    name,
    url,
    dataDir,
    adminToken,
    secretKey,
    create: () => maintenance(`CREATE DATABASE ${name}`),
    serverEnv: (extra = {}) => ({
      DATABASE_URL: url,
      KASSA_ADMIN_TOKEN: adminToken,
      KASSA_SECRET_KEY: secretKey,
      KASSA_ENV: "development",
      KASSA_DATA_DIR: dataDir,
      ...extra
    }),
    seedApplication,
    query,
    run,
    insertPaidEvents,
    drop: async () => {
      await maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}
