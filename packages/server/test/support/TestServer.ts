/**
 * Black-box test harness: the real server, in this process, listening on a real socket, over the embedded
 * PGlite database or a fresh PostgreSQL database (created per server, dropped on close). Tests talk to it
 * with `fetch`; `run` reaches its services for fixtures and for checking what was stored.
 */

import { connect, createServer } from "node:net"
import { PgClient } from "@effect/sql-pg"
import { Application } from "@kassa/core"
import type { Context, Duration } from "effect"
import { Effect, Exit, Layer, Logger, type LogLevel, Option, Redacted, References, Scope } from "effect"
import type { HttpServer } from "effect/http"
import { ApiKeyRepository } from "../../src/applications/ApiKeyRepository.ts"
import {
  ApplicationRepository,
  type NewApplication,
  type StoredApplication
} from "../../src/applications/ApplicationRepository.ts"
import { ServerConfig, type ServerSettings } from "../../src/config/ServerConfig.ts"
import { MemoryImage } from "../../src/database/EmbeddedPostgres.ts"
import * as KassaServer from "../../src/KassaServer.ts"
import { Simulator } from "../../src/payments/Simulator.ts"
import * as StripeConnector from "../../src/providers/StripeConnector.ts"
import * as PasswordHash from "../../src/users/PasswordHash.ts"
import { PollInterval } from "../../src/webhooks/Dispatcher.ts"
import { memoryImage } from "./PgliteImage.ts"

export type DatabaseKind = "pglite" | "postgres"

/** PostgreSQL for tests: `KASSA_TEST_DATABASE_URL`, or the local default when something answers there. */
export const postgresUrl = process.env.KASSA_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** Whether something accepts TCP connections at the URL's host and port (`defaultPort` when it names none). */
export const reachable = (url: string, defaultPort = 5432) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port || defaultPort) })
    socket.setTimeout(1000)
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => {
      socket.destroy()
      resolve(false)
    })
  })

/** The databases every server test runs on: PGlite always, PostgreSQL when it is reachable. */
export const databases: ReadonlyArray<DatabaseKind> = (await reachable(postgresUrl))
  ? ["pglite", "postgres"]
  : ["pglite"]

/**
 * A port nobody uses right now, chosen below Linux's ephemeral range (32768–60999). A port the kernel handed out with
 * `listen(0)` can be handed out again to any outgoing connection — a PostgreSQL client, a `fetch` of another test —
 * before a server process that takes seconds to start binds it; one CI run lost a test to that. Below the range, each
 * vitest worker draws from its own slice (by `VITEST_POOL_ID`), so two workers never pick the same port in the
 * seconds between the check and a server's bind (a full run lost two tests to that), and a worker never hands out a
 * port twice. 10080 is left out: `fetch` refuses it (the Fetch standard's "bad ports").
 */
const slices = 4
const sliceSize = Math.floor(22_000 / slices)
const slice = (Math.max(1, Number(process.env.VITEST_POOL_ID ?? 1)) - 1) % slices
const handedOut = new Set<number>()

export const freePort = async (): Promise<number> => {
  for (;;) {
    const port = 10_000 + slice * sliceSize + Math.floor(Math.random() * sliceSize)
    if (port === 10_080 || handedOut.has(port)) continue
    const bound = await new Promise<boolean>((resolve) => {
      const server = createServer()
      server.once("error", () => resolve(false))
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
    })
    if (bound) {
      handedOut.add(port)
      return port
    }
  }
}

/** Runs one statement on the maintenance database (CREATE / DROP DATABASE). */
export const maintenance = (statement: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      yield* sql.unsafe(statement)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(postgresUrl), maxConnections: 1 })), Effect.scoped)
  )

type ServerServices = Layer.Success<typeof KassaServer.Services>

export interface TestApplication {
  readonly application: StoredApplication
  readonly webhookSecret: string
  readonly testKey: string
  readonly liveKey: string
}

export interface RunningServer {
  readonly database: DatabaseKind
  readonly baseUrl: string
  readonly adminToken: string
  /** Runs an effect against the server's own services (repositories, SqlClient, …). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, ServerServices>) => Promise<A>
  /** An active application with a test and a live key, created directly in the database. */
  readonly createApplication: (overrides?: Partial<NewApplication>) => Promise<TestApplication>
  /** `fetch` relative to the server; JSON bodies are serialized and sent with `Content-Type: application/json`. */
  readonly request: (
    path: string,
    init?: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> }
  ) => Promise<{ status: number; headers: Headers; body: unknown; text: string }>
  readonly close: () => Promise<void>
}

export const adminToken = "test-admin-token-0123456789abcdef"

/** A scrypt cost about a hundred times below production's (4 ms a hash instead of 400), for tests only. */
export const testPasswordCost: PasswordHash.Cost = { N: 2 ** 10, r: 8, p: 1 }

/** Starts the real server on a free port over the given database. */
export const startServer = async (
  database: DatabaseKind,
  overrides: Partial<ServerSettings> = {},
  options: {
    readonly logLevel?: LogLevel.LogLevel
    /** Where the server's log lines go (effect's default logger unless set), for tests about what gets logged. */
    readonly logger?: Logger.Logger<unknown, unknown>
    /** The delivery engine's polling backstop (1 s in production). */
    readonly pollInterval?: Duration.Duration
    /** The test-mode simulator (the production one unless a test records what it is asked). */
    readonly simulator?: Layer.Layer<Simulator>
    /** Rewrites the PostgreSQL URL the server connects to (e.g. through a TCP proxy a test can freeze). */
    readonly rewriteDatabaseUrl?: (url: URL) => URL
    /**
     * The cost of new password hashes (the production cost unless set): a test that signs in often and is not about
     * the hasher's pace may use {@link testPasswordCost}. A production server refuses anything but the production cost.
     */
    readonly passwordCost?: PasswordHash.Cost
    /**
     * The bound of the server's Stripe calls (10 s unless set): for tests that wait for a call Stripe never answers.
     * A production server refuses any other value.
     */
    readonly stripeCallTimeout?: Duration.Duration
  } = {}
): Promise<RunningServer> => {
  const port = await freePort()
  const dbName = `kassa_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  if (database === "postgres") await maintenance(`CREATE DATABASE ${dbName}`)
  const rewrite = options.rewriteDatabaseUrl ?? ((url: URL) => url)
  const databaseUrl =
    database === "postgres"
      ? Option.some(Redacted.make(rewrite(Object.assign(new URL(postgresUrl), { pathname: `/${dbName}` })).toString()))
      : Option.none()
  const dataDir = overrides.dataDir ?? "memory://"
  const config = ServerConfig.layerWith({
    port,
    host: "127.0.0.1",
    baseUrl: `http://127.0.0.1:${port}`,
    dataDir,
    databaseUrl,
    adminToken: Option.some(Redacted.make(adminToken)),
    secretKey: Option.some(Redacted.make("test-secret-key-0123456789abcdef")),
    ...overrides
  })
  const scope = Effect.runSync(Scope.make())
  // Request lines of every test server would drown the test output: warnings and errors only, unless a test
  // is about what gets logged.
  const quiet = Layer.succeed(References.MinimumLogLevel, options.logLevel ?? "Warn")
  const logger = options.logger === undefined ? Layer.empty : Logger.layer([options.logger])
  const poll = options.pollInterval === undefined ? Layer.empty : Layer.succeed(PollInterval, options.pollInterval)
  const cost =
    options.passwordCost === undefined ? Layer.empty : Layer.succeed(PasswordHash.HashCost, options.passwordCost)
  const stripeBound =
    options.stripeCallTimeout === undefined
      ? Layer.empty
      : Layer.succeed(StripeConnector.CallTimeout, options.stripeCallTimeout)
  // A throw-away PGlite starts from the migrated image instead of a new cluster (PgliteImage: ~2 s instead of 5).
  const image =
    database === "pglite" && dataDir === "memory://" ? Layer.succeed(MemoryImage, await memoryImage()) : Layer.empty
  const context = (await Effect.runPromise(
    Layer.buildWithScope(
      KassaServer.layerWith({ simulator: options.simulator ?? Simulator.layer }).pipe(
        Layer.provide(config),
        Layer.provide(Layer.mergeAll(quiet, logger, poll, cost, stripeBound, image))
      ),
      scope
    )
  )) as Context.Context<ServerServices | HttpServer.HttpServer>
  const run = <A, E>(effect: Effect.Effect<A, E, ServerServices>) => Effect.runPromise(Effect.provide(effect, context))
  const baseUrl = `http://127.0.0.1:${port}`

  const createApplication = (overrides: Partial<NewApplication> = {}) =>
    run(
      Effect.gen(function* () {
        const applications = yield* ApplicationRepository
        const keys = yield* ApiKeyRepository
        const webhookSecret = `whsec_${"A".repeat(16)}${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
        const application = yield* applications.create(
          {
            ...Application.defaults,
            name: "Test shop",
            status: "active",
            return_url_host: "shop.example",
            ...overrides
          },
          webhookSecret
        )
        const testKey = yield* keys.issue(application.id, "test")
        const liveKey = yield* keys.issue(application.id, "live")
        return { application, webhookSecret, testKey: testKey.key, liveKey: liveKey.key }
      })
    )

  const request: RunningServer["request"] = async (path, init = {}) => {
    const headers: Record<string, string> = { accept: "application/json", ...init.headers }
    if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`
    let body: string | undefined
    if (init.body !== undefined) {
      body = typeof init.body === "string" ? init.body : JSON.stringify(init.body)
      headers["content-type"] ??= "application/json"
    }
    const response = await fetch(`${baseUrl}${path}`, { method: init.method ?? "GET", headers, body: body ?? null })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined
    } catch {
      parsed = text
    }
    return { status: response.status, headers: response.headers, body: parsed, text }
  }

  const close = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (database === "postgres") await maintenance(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
  }

  return { database, baseUrl, adminToken, run, createApplication, request, close }
}
