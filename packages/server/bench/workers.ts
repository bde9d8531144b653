/**
 * KASSA_WORKERS=2 against 1 on this machine (issue 14 §3): GET /api/v1/payments/{id} and POST /api/v1/payments at
 * saturation (autocannon, 32 keep-alive connections, which the cluster hands out round-robin), on one scratch
 * PostgreSQL database. By hand, prints figures; not a test:
 *
 *   node --conditions=@kassa/source bench/workers.ts
 *
 * The server runs from its sources (`src/main.ts` with --conditions=@kassa/source, as the other benches' test
 * harness does) unless KASSA_BENCH_MAIN names a build (e.g. dist/main.js once it carries Cluster). It runs in
 * production mode (JSON logs) with the heap flags of `npm start`. Rounds alternate 1, 2, 2, 1, … so load elsewhere on
 * the machine hits both; the median round is printed. The load generator runs on the same machine and takes CPU
 * from the workers: on a 2-core machine the second worker competes with autocannon and PostgreSQL, so this shows
 * what a second process buys where cores are scarce, not the ceiling of a bigger host.
 * Settings: KASSA_BENCH_DATABASE_URL, KASSA_BENCH_SECONDS (10), KASSA_BENCH_ROUNDS (2 per worker count).
 */
import type { ChildProcess } from "node:child_process"
import { availableParallelism } from "node:os"
import autocannon from "autocannon"
import {
  createPayment,
  median,
  scratchDatabase,
  secretKey,
  seedApplication,
  sleep,
  startFlags,
  startProcess,
  waitFor
} from "./BenchSupport.ts"

const seconds = Number(process.env.KASSA_BENCH_SECONDS ?? 10)
const rounds = Number(process.env.KASSA_BENCH_ROUNDS ?? 2)
const main = process.env.KASSA_BENCH_MAIN ?? "src/main.ts"
const adminToken = "bench-admin-token-0123456789abcdef"
const heapFlags = startFlags()
const nodeFlags = main.endsWith(".ts") ? ["--conditions=@kassa/source", ...heapFlags] : heapFlags
const port = 4900 + Math.floor(Math.random() * 500)
const base = `http://127.0.0.1:${port}`

const database = scratchDatabase("kassa_bench_workers")
await database.create()

const start = async (workers: number) => {
  const child = startProcess(
    [main],
    {
      DATABASE_URL: database.url,
      KASSA_ENV: "production",
      KASSA_ADMIN_TOKEN: adminToken,
      KASSA_SECRET_KEY: secretKey,
      KASSA_PORT: String(port),
      KASSA_WORKERS: String(workers)
    },
    nodeFlags
  )
  await waitFor(`${base}/readyz`, (status) => status === 200)
  // Both workers listening: the cluster answers as soon as the first does.
  await sleep(workers > 1 ? 3000 : 500)
  return child
}

const stop = async (child: ChildProcess) => {
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill("SIGTERM")
  await Promise.race([exited, sleep(60_000)])
  if (child.exitCode === null) child.kill("SIGKILL")
}

const run = async (method: "GET" | "POST", url: string, key: string) => {
  const result = await autocannon({
    url,
    method,
    connections: 32,
    duration: seconds,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json" },
    requests: [
      {
        setupRequest: (request) =>
          method === "POST"
            ? { ...request, body: JSON.stringify({ amount: 1000, order_reference: `bench-${crypto.randomUUID()}` }) }
            : request
      }
    ]
  })
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts
  }
}

type Figures = Awaited<ReturnType<typeof run>>
const results = new Map<string, Array<Figures>>()
const record = (name: string, figures: Figures) => results.set(name, [...(results.get(name) ?? []), figures])

try {
  // Seeded once the schema exists: the first start migrates.
  const first = await start(1)
  const { key } = await seedApplication(database.url, adminToken)
  const paymentId = await createPayment(base, key, "bench-read")
  await stop(first)
  const order = Array.from({ length: rounds }, (_, round) => (round % 2 === 0 ? [1, 2] : [2, 1])).flat()
  for (const workers of order) {
    const child = await start(workers)
    // Warm-up: JIT and the pools of every worker.
    await autocannon({ url: `${base}/healthz`, connections: 32, duration: 2 })
    record(`GET  ${workers}`, await run("GET", `${base}/api/v1/payments/${paymentId}`, key))
    record(`POST ${workers}`, await run("POST", `${base}/api/v1/payments`, key))
    await stop(child)
  }
  console.log(
    `\nKASSA_WORKERS 1 vs 2: ${availableParallelism()} cores, ${seconds} s per run, ${rounds} rounds each (median), server from ${main}\n`
  )
  console.log("scenario        workers   req/s   p99 ms   errors")
  for (const scenario of ["GET ", "POST"]) {
    const byWorkers = [1, 2].map((workers) => {
      const runs = results.get(`${scenario} ${workers}`) ?? []
      const rps = median(runs.map((figures) => figures.rps))
      const p99 = median(runs.map((figures) => figures.p99))
      const errors = runs.reduce((sum, figures) => sum + figures.errors, 0)
      console.log(
        `${scenario === "GET " ? "GET  by id    " : "POST create   "}  ${String(workers).padStart(7)} ${rps.toFixed(0).padStart(7)} ${p99.toFixed(0).padStart(8)} ${String(errors).padStart(8)}`
      )
      return rps
    })
    console.log(`  2 workers / 1: ${((byWorkers[1] ?? 0) / (byWorkers[0] ?? 1)).toFixed(2)}×`)
  }
} finally {
  await database.drop()
}
