/**
 * What the by-hand benchmarks share: the scratch database on KASSA_BENCH_DATABASE_URL (created, dropped), starting a
 * server process, waiting for it to answer, reading its CPU time and RSS from /proc, seeding an application with a
 * test key through the repositories, creating the payment a bench reads, the small statistics (median,
 * percentile), an OTLP sink that discards and a `/metrics` scraper. Only logic that is the same in every bench lives
 * here; where benches differ (what answer counts as up, how long to wait, what a vanished process reads as), the
 * difference is a parameter.
 *
 * Not imported by bench/baseline.ts nor baseline-postgres.ts: the baselines are servers whose RSS is measured, so
 * they keep to their own imports.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { openSync, readFileSync } from "node:fs"
import { Agent, createServer, request as httpRequest } from "node:http"
import { join } from "node:path"
import { NodeCrypto } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Application } from "@kassa/core"
import { Effect, Layer, Redacted } from "effect"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { ServerSecrets } from "../src/security/ServerSecrets.ts"

/** The server package's directory: where server processes run. */
export const root = join(import.meta.dirname, "..")
/** The database the scratch database is created from (and dropped through). */
export const maintenanceUrl = process.env.KASSA_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
/**
 * The Node flags of `npm start` (the heap settings in package.json's start script): servers are benched with them, so
 * the figures are those of the server as operators start it. `override` (a bench's KASSA_BENCH_NODE_FLAGS, space
 * separated) replaces them, to compare settings.
 */
export const startFlags = (override?: string): ReadonlyArray<string> =>
  override === undefined
    ? (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start
        .split(" ")
        .filter((word) => word.startsWith("--"))
    : override.split(" ").filter((word) => word.length > 0)

/** KASSA_SECRET_KEY of every bench's servers; the seeding below hashes keys with it, so the two must agree. */
export const secretKey = "bench-secret-key-0123456789abcdef"

export const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

export const onPostgres = <A, E>(url: string, effect: Effect.Effect<A, E, PgClient.PgClient>) =>
  Effect.runPromise(
    effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })), Effect.scoped)
  )

/** One statement on the maintenance database (CREATE/DROP DATABASE cannot run in the database they name). */
export const admin = (statement: string) =>
  onPostgres(
    maintenanceUrl,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      yield* sql.unsafe(statement)
    })
  )

/** A database of its own for one run, named `<prefix>_<now>`, on the maintenance database's server. */
export const scratchDatabase = (prefix: string) => {
  const name = `${prefix}_${Date.now()}`
  return {
    name,
    url: Object.assign(new URL(maintenanceUrl), { pathname: `/${name}` }).toString(),
    create: () => admin(`CREATE DATABASE ${name}`),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}

const stdoutFile = process.env.KASSA_BENCH_STDOUT

/** A Node process in the server package (`args`: script and its arguments), its stderr passed through; an `env`
 * value `undefined` leaves that variable out. Its stdout is dropped, or appended to the file KASSA_BENCH_STDOUT
 * names (V8's `--trace-gc` and `--trace-gc-nvp` write there). */
export const startProcess = (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined>,
  flags: ReadonlyArray<string> = ["--conditions=@kassa/source"]
) =>
  spawn(process.execPath, [...flags, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", stdoutFile === undefined ? "ignore" : openSync(stdoutFile, "a"), "inherit"]
  })

/** Polls `url` every 100 ms until its status passes `accept` (a refused connection is "not yet"); bounded. */
export const waitFor = async (url: string, accept: (status: number) => boolean, attempts = 300) => {
  for (let i = 0; i < attempts; i++) {
    const status = await fetch(url).then(
      (response) => response.status,
      () => 0
    )
    if (status !== 0 && accept(status)) return
    await sleep(100)
  }
  throw new Error(`${url} did not answer`)
}

/** The process's resident memory in MB, NaN once it is gone. */
export const rssMb = (child: ChildProcess) => {
  try {
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8")
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
    return kb / 1024
  } catch {
    return Number.NaN
  }
}

/**
 * CPU seconds (user + system) the process has used so far; Linux clock ticks are 1/100 s. Once the process is gone
 * this throws, unless `ifGone` is given (a bench that prints a table reports the figure as that instead).
 */
export const cpuSeconds = (child: ChildProcess, ifGone?: number) => {
  try {
    const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? []
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch (error) {
    if (ifGone === undefined) throw error
    return ifGone
  }
}

/** The median (the lower of the two middle values for an even count), NaN for none. */
export const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN
}

/** Nearest-rank percentile of values sorted ascending (`fraction` 0..1, 1 the maximum), 0 for none. */
export const percentile = (sorted: ReadonlyArray<number>, fraction: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? 0

/**
 * Open-loop load at a fixed rate (issue 23's "p99 at 500 req/s"): request i is due at the start plus i/rate and its
 * latency counts from then, so a server that stalls is charged for every request it kept waiting (wrk2's
 * correction for coordinated omission). autocannon's `overallRate` is not that: each connection sends back to back
 * until it has made its share of the second and then waits for the next (autocannon 8 `lib/httpClient.js`,
 * `reqsMadeThisSecond`), so "500 req/s" arrived as a burst of 500 at saturation speed at the start of each second
 * and its p99 was a saturated server's queue. Up to `connections` kept-alive connections; latencies in ms.
 */
export const paced = (options: {
  readonly url: string
  readonly method: "GET" | "POST"
  readonly headers: Record<string, string>
  readonly body?: (() => string) | undefined
  readonly rate: number
  readonly seconds: number
  readonly connections: number
}) =>
  new Promise<{ requests: number; seconds: number; p50: number; p99: number; errors: number }>((resolve) => {
    const agent = new Agent({ keepAlive: true, maxSockets: options.connections })
    const total = Math.round(options.rate * options.seconds)
    const latencies: Array<number> = []
    const start = performance.now()
    let sent = 0
    let answered = 0
    let errors = 0
    const done = (due: number, ok: boolean) => {
      latencies.push(performance.now() - due)
      if (!ok) errors++
      if (++answered < total) return
      clearInterval(timer)
      agent.destroy()
      latencies.sort((a, b) => a - b)
      const round = (ms: number) => Math.round(ms * 10) / 10
      resolve({
        requests: total,
        seconds: (performance.now() - start) / 1000,
        p50: round(percentile(latencies, 0.5)),
        p99: round(percentile(latencies, 0.99)),
        errors
      })
    }
    const send = (due: number) => {
      const body = options.body?.()
      const headers =
        body === undefined ? options.headers : { ...options.headers, "content-length": String(Buffer.byteLength(body)) }
      let settled = false
      const settle = (ok: boolean) => {
        if (settled) return
        settled = true
        done(due, ok)
      }
      const request = httpRequest(options.url, { method: options.method, headers, agent }, (response) => {
        response.resume()
        response.once("end", () => settle((response.statusCode ?? 0) < 300))
        response.once("error", () => settle(false))
      })
      request.once("error", () => settle(false))
      // As autocannon's default: an answer 10 s late counts as an error, and the round still ends.
      request.setTimeout(10_000, () => request.destroy(new Error("no answer within 10 s")))
      request.end(body)
    }
    // Every millisecond, whatever is due by now (a late timer sends the backlog at once, charged from its due time).
    const timer = setInterval(() => {
      const now = performance.now()
      while (sent < total && start + (sent * 1000) / options.rate <= now) send(start + (sent++ * 1000) / options.rate)
    }, 1)
  })

/** The application and API-key repositories on `databaseUrl`, with the secrets the bench's servers run with. */
export const repositories = (databaseUrl: string, adminToken: string) =>
  Layer.mergeAll(ApplicationRepository.layer, ApiKeyRepository.layer).pipe(
    Layer.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 })),
    Layer.provide(ServerSecrets.layerWith(adminToken, secretKey)),
    Layer.provide(NodeCrypto.layer)
  )

/** One active application with a test key; a rate limit high enough not to be what is measured. */
export const seedApplication = (databaseUrl: string, adminToken: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const applications = yield* ApplicationRepository
      const keys = yield* ApiKeyRepository
      const application = yield* applications.create(
        { ...Application.defaults, name: "Bench", status: "active", rate_limit_per_minute: 100_000_000 },
        "whsec_benchbenchbenchbenchbenchbench12"
      )
      return yield* keys.issue(application.id, "test")
    }).pipe(Effect.provide(repositories(databaseUrl, adminToken)))
  )

/** One active application with a test and a live key (bench/live.ts links the live side to a fake Stripe). */
export const seedKeys = (databaseUrl: string, adminToken: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const applications = yield* ApplicationRepository
      const keys = yield* ApiKeyRepository
      const application = yield* applications.create(
        { ...Application.defaults, name: "Bench", status: "active", rate_limit_per_minute: 100_000_000 },
        "whsec_benchbenchbenchbenchbenchbench12"
      )
      const test = yield* keys.issue(application.id, "test")
      const live = yield* keys.issue(application.id, "live")
      return { applicationId: application.id, testKey: test.key, liveKey: live.key }
    }).pipe(Effect.provide(repositories(databaseUrl, adminToken)))
  )

/** Creates a payment of 25.00 through the API (`base`: the server's origin); its id. */
export const createPayment = async (base: string, key: string, orderReference: string) => {
  const created = await fetch(`${base}/api/v1/payments`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ amount: 2500, order_reference: orderReference })
  })
  return ((await created.json()) as { id: string }).id
}

/**
 * An OTLP/HTTP collector that accepts and discards (answers 200 `{}`), counting exports and bytes: where a bench's
 * servers export traces and logs, so the export's cost is in their figures without a real collector.
 */
export const otlpSink = async (port: number) => {
  const counts = { exports: 0, bytes: 0 }
  const server = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => {
      counts.bytes += chunk.length
    })
    request.on("end", () => {
      counts.exports++
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { counts, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** Fetches each of `urls` every `millis` ms (as Prometheus scrapes), one at a time each, until `stop`. */
export const scraper = (urls: ReadonlyArray<string>, millis: number) => {
  const counts = { scrapes: 0, failures: 0, bytes: 0 }
  const busy = new Set<string>()
  const timer = setInterval(() => {
    for (const url of urls) {
      if (busy.has(url)) continue
      busy.add(url)
      void fetch(url)
        .then((response) => response.text().then((text) => ({ ok: response.ok, size: text.length })))
        .then(
          ({ ok, size }) => {
            if (ok) counts.scrapes++
            else counts.failures++
            counts.bytes = size
          },
          () => {
            counts.failures++
          }
        )
        .finally(() => busy.delete(url))
    }
  }, millis)
  return { counts, stop: () => clearInterval(timer) }
}
