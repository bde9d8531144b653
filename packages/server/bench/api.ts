/**
 * `pnpm bench` (issue 3): GET /api/v1/payments/{id} and POST /api/v1/payments against PostgreSQL, at saturation
 * and at a fixed 500 req/s, for Kassa and for the bare baseline (bench/baseline.ts: node:http + the same driver and
 * SQL, no framework). Prints throughput, p50/p99 latency, server RSS and the Kassa/baseline ratios.
 * Figures, not a test: run it by hand on a quiet machine.
 *
 * Targets: GET and create ≥ 50 % of the baseline's throughput, p99 ≤ 20 ms at 500 req/s, RSS ≤ 200 MB.
 * Settings: KASSA_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_BENCH_SECONDS (10).
 */

import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { NodeCrypto } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Application } from "@kassa/core"
import autocannon from "autocannon"
import { Effect, Layer, Redacted } from "effect"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { ServerSecrets } from "../src/security/ServerSecrets.ts"

const maintenanceUrl = process.env.KASSA_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const seconds = Number(process.env.KASSA_BENCH_SECONDS ?? 10)
const secretKey = "bench-secret-key-0123456789abcdef"
const database = `kassa_bench_${Date.now()}`
const databaseUrl = Object.assign(new URL(maintenanceUrl), { pathname: `/${database}` }).toString()
const root = join(import.meta.dirname, "..")
// Node flags for the Kassa process, to compare settings (e.g. KASSA_BENCH_NODE_FLAGS=--max-semi-space-size=8).
const nodeFlags = (process.env.KASSA_BENCH_NODE_FLAGS ?? "").split(" ").filter((flag) => flag.length > 0)

const onPostgres = <A, E>(url: string, effect: Effect.Effect<A, E, PgClient.PgClient>) =>
  Effect.runPromise(
    effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })), Effect.scoped)
  )

const startProcess = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  // Kassa runs from its build (dist/), as `npm start` does; `pnpm bench` builds first.
  const conditions = args[0]?.startsWith("dist/") === true ? nodeFlags : ["--conditions=@kassa/source"]
  const child = spawn(process.execPath, [...conditions, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  return child
}

const waitFor = async (url: string) => {
  for (let i = 0; i < 300; i++) {
    try {
      const response = await fetch(url)
      if (response.status < 500) return
    } catch {
      // not yet listening
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${url} did not answer`)
}

const rssMb = (child: ChildProcess) => {
  try {
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8")
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
    return kb / 1024
  } catch {
    return Number.NaN
  }
}

interface Figures {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly rss: number
}

const load = async (
  child: ChildProcess,
  options: { url: string; method: "GET" | "POST"; key: string; rate?: number }
): Promise<Figures> => {
  let peak = 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(child))
  }, 200)
  const result = await autocannon({
    url: options.url,
    method: options.method,
    connections: options.rate === undefined ? 32 : 16,
    duration: seconds,
    ...(options.rate === undefined ? {} : { overallRate: options.rate }),
    headers: { authorization: `Bearer ${options.key}`, "content-type": "application/json", accept: "application/json" },
    requests: [
      {
        setupRequest: (request) =>
          options.method === "POST"
            ? {
                ...request,
                body: JSON.stringify({ amount: 1000, order_reference: `bench-${crypto.randomUUID()}` })
              }
            : request
      }
    ]
  })
  clearInterval(sampler)
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
    rss: Math.max(peak, rssMb(child))
  }
}

/** Load that is not measured: both servers open their connection pools lazily and need JIT warm-up. */
const warmUp = (url: string, key: string) =>
  autocannon({ url, connections: 32, duration: 3, headers: { authorization: `Bearer ${key}` } })

const scenarios = async (child: ChildProcess, base: string, key: string, paymentId: string) => {
  const idle: Figures = { rps: Number.NaN, p50: Number.NaN, p99: Number.NaN, errors: 0, rss: rssMb(child) }
  await warmUp(`${base}/api/v1/payments/${paymentId}`, key)
  return {
    idle,
    "GET  saturation": await load(child, { url: `${base}/api/v1/payments/${paymentId}`, method: "GET", key }),
    "GET  500 req/s": await load(child, { url: `${base}/api/v1/payments/${paymentId}`, method: "GET", key, rate: 500 }),
    "POST saturation": await load(child, { url: `${base}/api/v1/payments`, method: "POST", key }),
    "POST 500 req/s": await load(child, { url: `${base}/api/v1/payments`, method: "POST", key, rate: 500 })
  }
}

const admin = (statement: string) =>
  onPostgres(
    maintenanceUrl,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      yield* sql.unsafe(statement)
    })
  )

await admin(`CREATE DATABASE ${database}`)
try {
  const env = {
    DATABASE_URL: databaseUrl,
    KASSA_SECRET_KEY: secretKey,
    KASSA_ADMIN_TOKEN: "bench-admin-token",
    KASSA_PORT: "4701",
    // Production: JSON log lines in batches, as an operator runs it.
    KASSA_ENV: "production",
    KASSA_DATA_DIR: join(root, ".kassa-bench")
  }
  const kassa = startProcess(["dist/main.js"], env)
  await waitFor("http://127.0.0.1:4701/healthz")

  // One application with a test key; a rate limit high enough not to be what is measured.
  const { key } = await Effect.runPromise(
    Effect.gen(function* () {
      const applications = yield* ApplicationRepository
      const keys = yield* ApiKeyRepository
      const application = yield* applications.create(
        { ...Application.defaults, name: "Bench", status: "active", rate_limit_per_minute: 100_000_000 },
        "whsec_benchbenchbenchbenchbenchbench12"
      )
      return yield* keys.issue(application.id, "test")
    }).pipe(
      Effect.provide(
        Layer.mergeAll(ApplicationRepository.layer, ApiKeyRepository.layer).pipe(
          Layer.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 })),
          Layer.provide(ServerSecrets.layerWith("bench-admin-token", secretKey)),
          Layer.provide(NodeCrypto.layer)
        )
      )
    )
  )
  const created = await fetch("http://127.0.0.1:4701/api/v1/payments", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ amount: 2500, order_reference: "bench-get" })
  })
  const payment = (await created.json()) as { id: string }

  const kassaFigures = await scenarios(kassa, "http://127.0.0.1:4701", key, payment.id)
  kassa.kill("SIGTERM")

  const baseline = startProcess(["bench/baseline.ts", "4702"], env)
  await waitFor("http://127.0.0.1:4702/")
  const baselineFigures = await scenarios(baseline, "http://127.0.0.1:4702", key, payment.id)
  baseline.kill("SIGTERM")

  const rows = Object.entries(kassaFigures).map(([name, k]) => {
    const b = baselineFigures[name as keyof typeof baselineFigures]
    return {
      scenario: name,
      "kassa req/s": Math.round(k.rps),
      "base req/s": Math.round(b.rps),
      ratio: `${Math.round((k.rps / b.rps) * 100)} %`,
      "kassa p50/p99 ms": `${k.p50} / ${k.p99}`,
      "base p50/p99 ms": `${b.p50} / ${b.p99}`,
      "kassa RSS MB": Math.round(k.rss),
      "base RSS MB": Math.round(b.rss),
      "kassa errors": k.errors
    }
  })
  console.table(rows)
  console.log("Targets: throughput ≥ 50 % of baseline; p99 ≤ 20 ms at 500 req/s; RSS ≤ 200 MB.")
} finally {
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
}
