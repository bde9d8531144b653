/**
 * `pnpm bench` (issue 3): GET /api/v1/payments/{id} and POST /api/v1/payments against PostgreSQL, at saturation
 * and at a fixed 500 req/s, for Kassa and for the bare baseline (bench/baseline.ts: node:http + the same driver and
 * SQL, no framework). Prints throughput, p50/p99 latency, server RSS and the Kassa/baseline ratios.
 * Figures, not a test: run it by hand on a quiet machine.
 *
 * Targets: GET and create ≥ 50 % of the baseline's throughput, p99 ≤ 20 ms at 500 req/s, RSS ≤ 200 MB.
 * Settings: KASSA_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_BENCH_SECONDS (10),
 * KASSA_BENCH_ROUNDS (3): both servers run side by side and every scenario is measured in alternating rounds
 * (Kassa then baseline, baseline then Kassa, …), reporting the median round, so a burst of load elsewhere on the machine hits both
 * and not just whichever ran second. KASSA_BENCH_SCENARIOS (e.g. `GET  saturation,POST saturation`) picks
 * scenarios; KASSA_BENCH_ONLY=kassa skips the baseline (for profiling with KASSA_BENCH_NODE_FLAGS=--cpu-prof);
 * KASSA_BENCH_AGAINST=/path/to/other/dist/main.js runs another build of Kassa in the baseline's place (an A/B).
 * Check of the harness: two identical Kassa builds side by side (KASSA_BENCH_AGAINST=dist/main.js) now agree within
 * 3 % (4 rounds of create at saturation). An earlier version of the server showed a 30 % gap
 * between the two slots in create throughput; it went away with the test-mode create's third statement and was never
 * explained. Rerun that A/B before trusting a small difference.
 * A/B of the request middleware's diet (route label from the router's RouteContext, metric series made once, the
 * deadline without an interrupt fiber; 2026-11-25, 10 alternating rounds of 3 s, load average 14–22 on 2 cores, so
 * only the paired ratio means much): CPU per GET −15 % (median of the paired rounds; 9 of 10 rounds lower), per
 * create −5 % (7 of 10); again with the pool gauges' counting in, at load 4–7 (8 rounds of 4 s): GET −10 % (7 of 8),
 * create −8 % (5 of 8).
 */

import type { ChildProcess } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import autocannon from "autocannon"
import {
  cpuSeconds,
  createPayment,
  median,
  root,
  rssMb,
  scratchDatabase,
  secretKey,
  seedApplication,
  startProcess,
  waitFor
} from "./BenchSupport.ts"

const seconds = Number(process.env.KASSA_BENCH_SECONDS ?? 10)
const rounds = Number(process.env.KASSA_BENCH_ROUNDS ?? 3)
const only = process.env.KASSA_BENCH_ONLY
// Another build of Kassa (path to its main.js) to run in the baseline's place: an A/B of two builds on a noisy machine.
const against = process.env.KASSA_BENCH_AGAINST
const picked = (process.env.KASSA_BENCH_SCENARIOS ?? "")
  .split(",")
  .map((name) => name.trim().replace(/\s+/g, " "))
  .filter((name) => name.length > 0)
const database = scratchDatabase("kassa_bench")
// Kassa runs in production here, which refuses an admin token shorter than 32 characters.
const adminToken = "bench-admin-token-0123456789abcdef"
// Kassa runs with the Node flags of `npm start` (the heap settings in package.json's start script), so the figures are
// those of the server as operators start it. KASSA_BENCH_NODE_FLAGS replaces them, to compare settings.
const startFlags = (
  JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { start: string } }
).scripts.start
  .split(" ")
  .filter((word) => word.startsWith("--"))
const nodeFlags =
  process.env.KASSA_BENCH_NODE_FLAGS === undefined
    ? startFlags
    : process.env.KASSA_BENCH_NODE_FLAGS.split(" ").filter((flag) => flag.length > 0)

// Node flags for that other build (default: the same as Kassa's), e.g. to compare heap settings on one build.
const againstFlags =
  process.env.KASSA_BENCH_AGAINST_NODE_FLAGS === undefined
    ? nodeFlags
    : process.env.KASSA_BENCH_AGAINST_NODE_FLAGS.split(" ").filter((flag) => flag.length > 0)

interface Figures {
  readonly rps: number
  /** The server's own CPU time per answered request, in µs: unlike throughput, hardly moved by other load. */
  readonly cpu: number
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
  const cpuBefore = cpuSeconds(child, Number.NaN)
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
    cpu: ((cpuSeconds(child, Number.NaN) - cpuBefore) / result.requests.total) * 1e6,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
    rss: Math.max(peak, rssMb(child))
  }
}

/** Load that is not measured: both servers open their connection pools lazily and need JIT warm-up. */
const warmUp = async (base: string, key: string, paymentId: string) => {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  await autocannon({ url: `${base}/api/v1/payments/${paymentId}`, connections: 32, duration: 3, headers })
  await autocannon({
    url: `${base}/api/v1/payments`,
    method: "POST",
    connections: 32,
    duration: 3,
    headers,
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ amount: 1000, order_reference: `warm-${crypto.randomUUID()}` })
        })
      }
    ]
  })
}

interface Server {
  readonly child: ChildProcess
  readonly base: string
}

const scenarioList = (server: Server, key: string, paymentId: string) => {
  const get = `${server.base}/api/v1/payments/${paymentId}`
  const post = `${server.base}/api/v1/payments`
  return {
    "GET  saturation": () => load(server.child, { url: get, method: "GET", key }),
    "GET  500 req/s": () => load(server.child, { url: get, method: "GET", key, rate: 500 }),
    "POST saturation": () => load(server.child, { url: post, method: "POST", key }),
    "POST 500 req/s": () => load(server.child, { url: post, method: "POST", key, rate: 500 })
  }
}
type ScenarioName = keyof ReturnType<typeof scenarioList>

/** Each figure's median over the rounds (taken separately), errors summed, and the peak RSS of all rounds. */
const summarize = (runs: ReadonlyArray<Figures>): Figures => {
  const rps = median(runs.map((run) => run.rps))
  const chosen = runs.find((run) => run.rps === rps)
  if (chosen === undefined) {
    return { rps: Number.NaN, cpu: Number.NaN, p50: Number.NaN, p99: Number.NaN, errors: 0, rss: Number.NaN }
  }
  return {
    ...chosen,
    p99: median(runs.map((run) => run.p99)),
    p50: median(runs.map((run) => run.p50)),
    cpu: median(runs.map((run) => run.cpu)),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    rss: Math.max(...runs.map((run) => run.rss))
  }
}

await database.create()
try {
  const env = {
    DATABASE_URL: database.url,
    KASSA_SECRET_KEY: secretKey,
    KASSA_ADMIN_TOKEN: adminToken,
    KASSA_PORT: "4701",
    // Production: JSON log lines in batches, as an operator runs it.
    KASSA_ENV: "production",
    KASSA_DATA_DIR: join(root, ".kassa-bench")
  }
  // Kassa runs from its build (dist/), as `npm start` does, with its own flags; the baseline from source.
  const kassa = startProcess(["dist/main.js"], env, nodeFlags)
  await waitFor("http://127.0.0.1:4701/healthz", (status) => status < 500)

  const { key } = await seedApplication(database.url, adminToken)
  const paymentId = await createPayment("http://127.0.0.1:4701", key, "bench-get")

  const servers: [
    { readonly name: "kassa" | "base"; readonly server: Server },
    ...Array<{ readonly name: "kassa" | "base"; readonly server: Server }>
  ] = [{ name: "kassa", server: { child: kassa, base: "http://127.0.0.1:4701" } }]
  if (only !== "kassa") {
    const baseline =
      against === undefined
        ? startProcess(["bench/baseline.ts", "4702"], env)
        : startProcess([against], { ...env, KASSA_PORT: "4702" }, againstFlags)
    await waitFor("http://127.0.0.1:4702/", (status) => status < 500)
    servers.push({ name: "base", server: { child: baseline, base: "http://127.0.0.1:4702" } })
  }
  const idle = Object.fromEntries(servers.map(({ name, server }) => [name, rssMb(server.child)]))
  for (const { server } of servers) await warmUp(server.base, key, paymentId)

  const names = (Object.keys(scenarioList(servers[0].server, key, paymentId)) as Array<ScenarioName>).filter(
    (name) => picked.length === 0 || picked.includes(name.replace(/\s+/g, " "))
  )
  const results = new Map<string, Array<Figures>>()
  for (const name of names) {
    for (let round = 0; round < rounds; round++) {
      // Who goes first alternates too: the first run after a write-heavy phase shares the machine with PostgreSQL's
      // autovacuum of what the previous run inserted (measured: the first of two identical builds lost a third).
      for (const { name: who, server } of round % 2 === 0 ? servers : [...servers].reverse()) {
        const figures = await scenarioList(server, key, paymentId)[name]()
        results.set(`${who} ${name}`, [...(results.get(`${who} ${name}`) ?? []), figures])
        process.stderr.write(
          `${name} round ${round + 1} ${who}: ${Math.round(figures.rps)} req/s, ${Math.round(figures.cpu)} µs CPU/req, p50 ${figures.p50} p99 ${figures.p99} ms, RSS ${Math.round(figures.rss)} MB\n`
        )
      }
    }
  }
  for (const { server } of servers) server.child.kill("SIGTERM")

  const none: Figures = {
    rps: Number.NaN,
    cpu: Number.NaN,
    p50: Number.NaN,
    p99: Number.NaN,
    errors: 0,
    rss: Number.NaN
  }
  const rows = [
    {
      scenario: "idle",
      "kassa req/s": Number.NaN,
      "base req/s": Number.NaN,
      ratio: "",
      "kassa/base CPU µs/req": "",
      "kassa p50/p99 ms": "",
      "base p50/p99 ms": "",
      "kassa RSS MB": Math.round(idle.kassa ?? Number.NaN),
      "base RSS MB": Math.round(idle.base ?? Number.NaN),
      "kassa errors": 0
    },
    ...names.map((name) => {
      const k = summarize(results.get(`kassa ${name}`) ?? [])
      const b = only === "kassa" ? none : summarize(results.get(`base ${name}`) ?? [])
      return {
        scenario: name,
        "kassa req/s": Math.round(k.rps),
        "base req/s": Math.round(b.rps),
        ratio: `${Math.round((k.rps / b.rps) * 100)} %`,
        "kassa/base CPU µs/req": `${Math.round(k.cpu)} / ${Math.round(b.cpu)}`,
        "kassa p50/p99 ms": `${k.p50} / ${k.p99}`,
        "base p50/p99 ms": `${b.p50} / ${b.p99}`,
        "kassa RSS MB": Math.round(k.rss),
        "base RSS MB": Math.round(b.rss),
        "kassa errors": k.errors
      }
    })
  ]
  console.table(rows)
  console.log(
    `Medians of ${rounds} alternating round(s) of ${seconds} s (RSS: peak over all rounds). Kassa's Node flags: ${nodeFlags.join(" ") || "(none)"}. Targets: throughput ≥ 50 % of baseline; p99 ≤ 20 ms at 500 req/s; RSS ≤ 200 MB.`
  )
} finally {
  await database.drop()
}
