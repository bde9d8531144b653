/**
 * `KASSA_WORKERS=N` / `kassa serve --workers N`: N server processes on one port, with `node:cluster`.
 *
 * The primary only prepares and supervises: it reads the settings, refuses the embedded database (one process's
 * files, one connection), applies the migrations once, makes sure the development secrets file exists once (each
 * worker generating its own would give each a different secret key), then forks N workers with KASSA_MIGRATE=false.
 * It opens no HTTP listener and keeps no database connection; the kernel's connections are handed to the workers
 * round-robin by Node's cluster module. Workers share everything through PostgreSQL (and Redis when set), exactly as
 * separate processes on separate machines do: the demo seed runs under a table lock, so one worker seeds and prints
 * the banner; every worker's dispatcher claims due deliveries with `FOR UPDATE SKIP LOCKED`, so they share the
 * webhook work without sending one twice. The sign-in and admin-token throttles stay per process (as across machines).
 *
 * Each worker gets its own metrics port (KASSA_METRICS_PORT + its index, 0-based) so that a scrape reads one
 * process, not whichever the cluster picked. A worker that dies is replaced under the same index, after a back-off
 * that doubles while workers keep dying young (a crash loop does not spin). SIGTERM/SIGINT pass to every worker
 * (each drains as one process does); the primary exits 0 once all have exited, or kills the rest and exits 1 after
 * a bound.
 *
 * The primary's own lines (a worker replaced, the drain, migrations applied) go through the same logger as the
 * workers' (Logging): JSON lines on stdout in production, annotated `process: "primary"` and its pid.
 */
import cluster, { type Worker } from "node:cluster"
import { join } from "node:path"
import { Console, Duration, Effect, Layer, Option, Redacted } from "effect"
import * as Logging from "./config/Logging.ts"
import { ServerConfig } from "./config/ServerConfig.ts"
import * as Database from "./database/Database.ts"
import * as Launch from "./Launch.ts"
import { ServerSecrets } from "./security/ServerSecrets.ts"

/** `--workers` > 1 on the embedded database: it is one process's files behind one connection. */
export class EmbeddedSingleProcess extends Error {
  override readonly name = "EmbeddedSingleProcess"
}

/** A worker that lived at least this long was not crash-looping: the back-off starts over. */
const healthyLifetimeMs = 10_000
const firstBackoffMs = 250
const maxBackoffMs = 30_000
/** Node's graceful close gives requests 10 s; the drain delay comes before it; then the database closes. */
const shutdownGraceMs = 10_000 + 20_000

/** The next delay before replacing a worker, given how many died young in a row. */
export const backoffMs = (youngDeaths: number) =>
  youngDeaths === 0 ? 0 : Math.min(maxBackoffMs, firstBackoffMs * 2 ** (youngDeaths - 1))

/** A line of the primary's, from outside its fibers (the supervisor's Node callbacks). */
type Log = (level: "Info" | "Warn", message: string) => void

/** Forks and supervises `count` workers until SIGTERM/SIGINT; resolves with the primary's exit code. */
const supervise = (
  count: number,
  env: Record<string, string>,
  metricsPort: Option.Option<number>,
  drainMs: number,
  log: Log
) =>
  new Promise<number>((resolve) => {
    const byWorker = new Map<Worker, { index: number; startedAt: number }>()
    let youngDeaths = 0
    let stopping = false
    const fork = (index: number) => {
      const worker = cluster.fork({
        ...env,
        ...Option.match(metricsPort, {
          onNone: () => ({}),
          onSome: (port) => ({ KASSA_METRICS_PORT: String(port + index) })
        })
      })
      byWorker.set(worker, { index, startedAt: Date.now() })
    }
    cluster.on("exit", (worker, code, signal) => {
      const entry = byWorker.get(worker)
      byWorker.delete(worker)
      if (stopping) {
        if (byWorker.size === 0) resolve(0)
        return
      }
      if (entry === undefined) return
      youngDeaths = Date.now() - entry.startedAt < healthyLifetimeMs ? youngDeaths + 1 : 0
      const delay = backoffMs(youngDeaths)
      log(
        "Warn",
        `worker ${worker.process.pid} (index ${entry.index}) exited (${signal ?? code}); replacing in ${delay} ms`
      )
      setTimeout(() => {
        if (!stopping) fork(entry.index)
      }, delay).unref()
    })
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return
      stopping = true
      log("Info", `${signal}: draining ${byWorker.size} worker(s)`)
      if (byWorker.size === 0) return resolve(0)
      for (const worker of byWorker.keys()) worker.process.kill("SIGTERM")
      // Nothing waits without a bound: workers still running after the grace are killed, and that is a failure.
      setTimeout(() => {
        log("Warn", `workers still running after ${drainMs + shutdownGraceMs} ms: killing them`)
        for (const worker of byWorker.keys()) worker.process.kill("SIGKILL")
        resolve(1)
      }, drainMs + shutdownGraceMs).unref()
    }
    process.once("SIGTERM", stop)
    process.once("SIGINT", stop)
    for (let index = 0; index < count; index++) fork(index)
  })

/** The primary: checks, migrates once, secrets once, then forks and supervises; exits when the workers have. */
const primary = Effect.gen(function* () {
  const config = yield* ServerConfig
  const context = yield* Effect.context<never>()
  const log: Log = (level, message) => Effect.runForkWith(context)(Effect.logWithLevel(level)(message))
  if (Option.isNone(config.databaseUrl)) {
    return yield* Effect.die(
      new EmbeddedSingleProcess(
        `${config.workers} workers (KASSA_WORKERS, kassa serve --workers) need DATABASE_URL (PostgreSQL): the embedded database is one process with one connection; run one worker on it`
      )
    )
  }
  if (config.migrate) {
    const { applied } = yield* Launch.migrate
    if (applied.length > 0) log("Info", `applied migrations ${applied.map(({ name }) => name).join(", ")}`)
  } else {
    yield* Database.requireCurrentSchema.pipe(Effect.provide(Database.clientLayer))
  }
  const secrets = yield* Effect.provide(
    Effect.gen(function* () {
      return yield* ServerSecrets
    }),
    ServerSecrets.layer
  )
  if (secrets.generatedAdminToken) {
    // Workers find the file and do not show it: this is its one showing.
    yield* Console.log(
      `Kassa's admin token was generated on this start (kept in ${join(config.dataDir, "secrets.json")}); shown this once: ${Redacted.value(secrets.adminToken)}`
    )
  }
  // Uninterruptible: the runtime's own SIGTERM handler must not end the primary before its workers have drained.
  const code = yield* Effect.uninterruptible(
    Effect.promise(() =>
      supervise(
        config.workers,
        { KASSA_MIGRATE: "false" },
        config.metricsPort,
        Duration.toMillis(config.drainDelay),
        log
      )
    )
  )
  if (code !== 0) return yield* Effect.die(new Error("workers did not stop within the bound"))
}).pipe(
  Effect.annotateLogs({ process: "primary", pid: process.pid }),
  Effect.provide(Logging.layer),
  Effect.provide(ServerConfig.layer)
)

/**
 * What `main.ts` and `kassa serve` run: in a cluster worker, or with one worker, the server as one process
 * (`Launch.layer`); otherwise the primary. Settings come from the ConfigProvider in context.
 */
export const run = Effect.gen(function* () {
  if (cluster.isWorker) return yield* Layer.launch(Launch.layer)
  const config = yield* Effect.provide(
    Effect.gen(function* () {
      return yield* ServerConfig
    }),
    ServerConfig.layer
  )
  if (config.workers <= 1) return yield* Layer.launch(Launch.layer)
  return yield* primary
})
