/**
 * A server process to kill with SIGKILL and start again on the same database, for the live crash tests
 * (LiveCrash.test.ts for Stripe, LiveCrashMollie.test.ts for Mollie): an installation (a scratch PostgreSQL database,
 * or an embedded database's data directory) seeded with one application and a live key before the first start, and
 * the process on it, started on demand.
 *
 * On PostgreSQL the killed process's transactions and advisory locks end with its connections. On the embedded
 * database (PGlite in the data directory, served by pglite-socket inside the server process) kill -9 takes the
 * database's process with it; PGlite serves one process, so statements from the test (`direct`) kill the server first
 * and read the data directory itself: exactly what a restart finds. The next request starts the server again.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeCrypto } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Application } from "@kassa/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository, type NewApplication } from "../../src/applications/ApplicationRepository.ts"
import { ServerConfig } from "../../src/config/ServerConfig.ts"
import * as Database from "../../src/database/Database.ts"
import { ServerSecrets } from "../../src/security/ServerSecrets.ts"
import { seedDataDir } from "./PgliteImage.ts"
import { scratchDatabase } from "./ScratchDatabase.ts"
import { type SpawnedServer, spawnServer, untilHealthy } from "./ServerProcess.ts"
import type { DatabaseKind } from "./TestServer.ts"

export type Statements<A> = (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>

/** The seeded application's fields (over Application.defaults, active). */
export type SeedApplication = Partial<NewApplication> & { readonly name: string }

/** Where a test's server processes keep their data, seeded with an application before the first start. */
export interface Installation {
  readonly adminToken: string
  /** A server process's settings here (besides its port, base URL and provider URLs). */
  readonly env: Record<string, string>
  /** An active application with one live key, made through the repositories. */
  readonly application: { readonly id: string; readonly key: string }
  /** Runs statements on the database from this process: on PGlite only while no server runs (it serves one). */
  readonly direct: <A>(statements: Statements<A>) => Promise<A>
  readonly exclusive: boolean
  readonly remove: () => Promise<void>
}

/** A database of its own on the PostgreSQL server. */
const onPostgres = async (prefix: string, application: SeedApplication, webhookSecret: string) => {
  const db = scratchDatabase(prefix)
  await db.create()
  return {
    adminToken: db.adminToken,
    env: db.serverEnv(),
    application: await db.seedApplication(application, { mode: "live", webhookSecret }),
    direct: <A>(statements: Statements<A>) =>
      db.run(
        Effect.gen(function* () {
          return yield* statements(yield* PgClient.PgClient)
        })
      ),
    exclusive: false,
    remove: db.drop
  } satisfies Installation
}

/** A data directory of its own, holding a migrated database (PgliteImage: the tests are not about a first start). */
const onPglite = async (prefix: string, application: SeedApplication, webhookSecret: string) => {
  const label = prefix.replaceAll("_", "-")
  const dataDir = mkdtempSync(join(tmpdir(), `kassa-${label}-embedded-`))
  await seedDataDir(dataDir)
  const adminToken = `${label}-embedded-admin-token-0123456789`
  const secretKey = `${label}-embedded-secret-key-0123456789`
  /** The data directory opened in this process. */
  const embedded = <A>(
    effect: Effect.Effect<A, unknown, SqlClient.SqlClient | ApplicationRepository | ApiKeyRepository>
  ) =>
    Effect.runPromise(
      effect.pipe(
        Effect.provide(
          Layer.mergeAll(ApplicationRepository.layer, ApiKeyRepository.layer).pipe(
            Layer.provideMerge(Database.layer),
            Layer.provideMerge(ServerSecrets.layer),
            Layer.provideMerge(NodeCrypto.layer),
            Layer.provide(
              ServerConfig.layerWith({
                databaseUrl: Option.none(),
                dataDir,
                adminToken: Option.some(Redacted.make(adminToken)),
                secretKey: Option.some(Redacted.make(secretKey))
              })
            )
          )
        ),
        Effect.scoped
      )
    )
  const seeded = await embedded(
    Effect.gen(function* () {
      const made = yield* (yield* ApplicationRepository).create(
        { ...Application.defaults, status: "active", ...application },
        webhookSecret
      )
      const issued = yield* (yield* ApiKeyRepository).issue(made.id, "live")
      return { id: made.id, key: issued.key }
    })
  )
  return {
    adminToken,
    // No DATABASE_URL (whatever this process has): the embedded database in `dataDir`.
    env: {
      KASSA_DATA_DIR: dataDir,
      KASSA_ADMIN_TOKEN: adminToken,
      KASSA_SECRET_KEY: secretKey,
      KASSA_ENV: "development"
    },
    application: seeded,
    direct: <A>(statements: Statements<A>) =>
      embedded(
        Effect.gen(function* () {
          return yield* statements(yield* SqlClient.SqlClient)
        })
      ),
    exclusive: true,
    remove: async () => rmSync(dataDir, { recursive: true, force: true })
  } satisfies Installation
}

/** An installation on `database`, named after `prefix` (`live_crash`), with `application` seeded in it. */
export const install = (
  database: DatabaseKind,
  options: { readonly prefix: string; readonly application: SeedApplication; readonly webhookSecret: string }
): Promise<Installation> =>
  database === "postgres"
    ? onPostgres(options.prefix, options.application, options.webhookSecret)
    : onPglite(options.prefix, options.application, options.webhookSecret)

export interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: Headers
}

export interface CallInit {
  readonly method?: string
  readonly key: string
  readonly body?: unknown
  readonly headers?: object
}

export interface CrashableServer {
  /** Starts `node src/main.ts` on the installation unless it runs. */
  readonly up: () => Promise<void>
  /** `kill -9`, resolved once the process is gone. */
  readonly kill: () => Promise<void>
  /** A request to the server (started first if it is down), its answer read whole. */
  readonly request: (path: string, init: CallInit) => Promise<Answer>
  /**
   * Statements on the database as the next start finds it: on PGlite the server is killed first (kill -9, a crash
   * even when it is idle); on PostgreSQL they run beside it.
   */
  readonly direct: <A>(statements: Statements<A>) => Promise<A>
}

/** The server process on `installation`, listening on `port`, with `env` (the provider URLs) over its settings. */
export const crashableServer = (
  installation: () => Installation,
  port: () => number,
  env: () => Record<string, string>
): CrashableServer => {
  let server: SpawnedServer | undefined

  const up = async () => {
    if (server !== undefined) return
    const child = spawnServer({
      ...installation().env,
      KASSA_PORT: String(port()),
      KASSA_BASE_URL: `http://127.0.0.1:${port()}`,
      ...env()
    })
    try {
      await untilHealthy(child, port(), 90_000)
    } catch (error) {
      child.child.kill("SIGKILL")
      throw error
    }
    server = child
  }

  const kill = async () => {
    const child = server?.child
    server = undefined
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once("exit", resolve))
    child.kill("SIGKILL")
    await exited
  }

  const request = async (path: string, init: CallInit): Promise<Answer> => {
    await up()
    const response = await fetch(`http://127.0.0.1:${port()}${path}`, {
      method: init.method ?? "GET",
      redirect: "manual",
      headers: {
        authorization: `Bearer ${init.key}`,
        accept: "application/json",
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        ...init.headers
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    return { status: response.status, text: await response.text(), headers: response.headers }
  }

  const direct = async <A>(statements: Statements<A>) => {
    if (installation().exclusive) await kill()
    return installation().direct(statements)
  }

  return { up, kill, request, direct }
}
