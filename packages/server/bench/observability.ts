/**
 * What observability costs (issue 14 §1), by hand: `node --conditions=@kassa/source bench/observability.ts`.
 * Figures, not a test. Two Kassa processes from source over one PostgreSQL database, side by side, production
 * settings: `plain` (no metrics listener, no OTLP) and `observed` (KASSA_METRICS_PORT, and OTLP traces and logs sent
 * to a sink in this process that only counts what it gets). GET /api/v1/payments/{id} at saturation, alternating
 * rounds; the server's CPU time per request is the figure that other load moves least.
 *
 * - Tracing's cost per request: observed minus plain CPU µs per request (metrics recording is in both, as it
 *   always runs; the metrics listener only costs when scraped).
 * - Scrape cost: the time of one `/metrics` scrape while the observed server is saturated, its size, and the
 *   throughput with a scrape every 100 ms (150× Prometheus' usual 15 s) against none.
 *
 * Measured here (2 cores shared with other work, 2026-11-25; 3 rounds of 8 s, medians): plain 2,179 req/s at 488 µs
 * CPU/request; every trace exported 1,612 req/s at 673 µs (+186 µs, +38 %; the sink got 205 MB of OTLP JSON over
 * the run); KASSA_OTLP_SAMPLE_RATIO=0.1 1,814 req/s at 574 µs (+87 µs: spans are still made, log lines still
 * exported). /metrics: 4.4 KB, 36 samples; 0.70 ms server CPU per scrape; under saturation a scrape takes 14 ms at
 * the median (94 ms max over 78); with a scrape every 100 ms 1,352 req/s against 1,411 without (−4 %, inside this
 * shared machine's run-to-run noise; 0.70 ms per scrape predicts −0.7 %).
 * Re-run after the request middleware's CPU diet (route label from the router, unsampled spans not annotated; same
 * day, load average 10–14, so every absolute figure is about twice the above; 4 rounds of 5 s): plain 1,071 µs
 * CPU/request, every trace exported +455 µs (+42.5 %), KASSA_OTLP_SAMPLE_RATIO=0.1 +37 µs (+3.5 %, was +18 %);
 * 1.90 ms server CPU per scrape.
 *
 * Settings: KASSA_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_BENCH_SECONDS (8),
 * KASSA_BENCH_ROUNDS (3).
 */
import type { ChildProcess } from "node:child_process"
import { createServer } from "node:http"
import autocannon from "autocannon"
import {
  cpuSeconds,
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

const seconds = Number(process.env.KASSA_BENCH_SECONDS ?? 8)
const rounds = Number(process.env.KASSA_BENCH_ROUNDS ?? 3)
const database = scratchDatabase("kassa_obs_bench")
const adminToken = "bench-admin-token-0123456789abcdef"
const up = (status: number) => status === 200

// The OTLP sink: answers 200 and counts requests and bytes.
let sinkRequests = 0
let sinkBytes = 0
const sink = createServer((request, response) => {
  request.on("data", (chunk: Buffer) => {
    sinkBytes += chunk.length
  })
  request.on("end", () => {
    sinkRequests++
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
await new Promise<void>((resolve) => sink.listen(4723, "127.0.0.1", resolve))

const start = (port: number, extra: Record<string, string>) =>
  startProcess(
    ["src/main.ts"],
    {
      DATABASE_URL: database.url,
      KASSA_SECRET_KEY: secretKey,
      KASSA_ADMIN_TOKEN: adminToken,
      KASSA_PORT: String(port),
      KASSA_ENV: "production",
      ...extra
    },
    ["--conditions=@kassa/source", ...startFlags()]
  )

await database.create()
const children: Array<ChildProcess> = []
try {
  const plain = start(4721, {})
  children.push(plain)
  await waitFor("http://127.0.0.1:4721/readyz", up, 600)
  const observed = start(4722, { KASSA_METRICS_PORT: "4724", KASSA_OTLP_URL: "http://127.0.0.1:4723" })
  children.push(observed)
  await waitFor("http://127.0.0.1:4722/readyz", up, 600)
  const sampledServer = start(4725, { KASSA_OTLP_URL: "http://127.0.0.1:4723", KASSA_OTLP_SAMPLE_RATIO: "0.1" })
  children.push(sampledServer)
  await waitFor("http://127.0.0.1:4725/readyz", up, 600)

  const { key } = await seedApplication(database.url, adminToken)
  const id = await createPayment("http://127.0.0.1:4721", key, "bench-get")
  const headers = { authorization: `Bearer ${key}`, accept: "application/json" }

  interface Run {
    readonly rps: number
    readonly cpu: number
    readonly p99: number
    readonly errors: number
  }
  const load = async (child: ChildProcess, port: number, duration = seconds): Promise<Run> => {
    const before = cpuSeconds(child)
    const result = await autocannon({
      url: `http://127.0.0.1:${port}/api/v1/payments/${id}`,
      connections: 32,
      duration,
      headers
    })
    return {
      rps: result.requests.average,
      cpu: ((cpuSeconds(child) - before) / result.requests.total) * 1e6,
      p99: result.latency.p99,
      errors: result.non2xx + result.errors + result.timeouts
    }
  }
  // Warm-up: JIT and pools.
  await load(plain, 4721, 3)
  await load(observed, 4722, 3)
  await load(sampledServer, 4725, 3)

  const servers = {
    plain: { child: plain, port: 4721 },
    observed: { child: observed, port: 4722 },
    sampled: { child: sampledServer, port: 4725 }
  } as const
  type Name = keyof typeof servers
  const runs: Record<Name, Array<Run>> = { plain: [], observed: [], sampled: [] }
  const names: ReadonlyArray<Name> = ["plain", "observed", "sampled"]
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    for (const who of order) runs[who].push(await load(servers[who].child, servers[who].port))
  }
  const figures = (name: Name) => ({
    rps: median(runs[name].map((run) => run.rps)),
    cpu: median(runs[name].map((run) => run.cpu)),
    p99: median(runs[name].map((run) => run.p99)),
    errors: runs[name].reduce((sum, run) => sum + run.errors, 0)
  })
  const p = figures("plain")
  const o = figures("observed")
  const t = figures("sampled")
  console.log(`GET /api/v1/payments/{id} at saturation, ${rounds} rounds of ${seconds} s, medians`)
  console.log(
    `  plain     ${p.rps.toFixed(0)} req/s  ${p.cpu.toFixed(0)} µs CPU/req  p99 ${p.p99} ms  errors ${p.errors}`
  )
  console.log(
    `  observed  ${o.rps.toFixed(0)} req/s  ${o.cpu.toFixed(0)} µs CPU/req  p99 ${o.p99} ms  errors ${o.errors}`
  )
  console.log(
    `  sampled   ${t.rps.toFixed(0)} req/s  ${t.cpu.toFixed(0)} µs CPU/req  p99 ${t.p99} ms  errors ${t.errors}`
  )
  console.log(`  tracing at KASSA_OTLP_SAMPLE_RATIO=0.1: ${(t.cpu - p.cpu).toFixed(0)} µs CPU per request`)
  console.log(
    `  tracing + OTLP export (every trace): ${(o.cpu - p.cpu).toFixed(0)} µs CPU per request (${(((o.cpu - p.cpu) / p.cpu) * 100).toFixed(1)} %); sink got ${sinkRequests} exports, ${(sinkBytes / 1e6).toFixed(1)} MB`
  )

  // Scrapes while the observed server is saturated.
  const scrape = async () => {
    const started = performance.now()
    const text = await (await fetch("http://127.0.0.1:4724/metrics")).text()
    const series = text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).length
    return { ms: performance.now() - started, bytes: text.length, series }
  }
  const idle = await scrape()
  const timings: Array<number> = []
  let size = idle
  const scraping = setInterval(() => {
    void scrape().then((result) => {
      timings.push(result.ms)
      size = result
    })
  }, 100)
  const underScrape = await load(observed, 4722)
  clearInterval(scraping)
  const noScrape = await load(observed, 4722)
  const before = cpuSeconds(observed)
  for (let i = 0; i < 200; i++) await scrape()
  const scrapeCpu = ((cpuSeconds(observed) - before) / 200) * 1e3
  console.log(`/metrics: ${size.bytes} bytes, ${size.series} samples; idle scrape ${idle.ms.toFixed(1)} ms`)
  console.log(
    `  under saturation: scrape p50 ${median(timings).toFixed(1)} ms, max ${Math.max(...timings).toFixed(1)} ms over ${timings.length} scrapes`
  )
  console.log(`  server CPU per scrape (200 back to back, idle): ${scrapeCpu.toFixed(2)} ms`)
  console.log(
    `  throughput with a scrape every 100 ms: ${underScrape.rps.toFixed(0)} req/s, without: ${noScrape.rps.toFixed(0)} req/s`
  )
} finally {
  for (const child of children) child.kill("SIGTERM")
  await sleep(2000)
  sink.close()
  await database.drop()
}
