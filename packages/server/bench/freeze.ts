/**
 * A silent PostgreSQL (issue 11 point 3). By hand, prints figures; not a test:
 *
 *   node --conditions=@kassa/source bench/freeze.ts
 *
 * Starts the real server (test harness, default settings: 15 s request deadline) on a scratch PostgreSQL database
 * behind a TCP proxy, keeps a steady load (20 clients, each looping GET /api/v1/payments and POST create, plus a
 * /healthz probe every 250 ms), freezes the proxy for KASSA_FREEZE_SECONDS (20) — nothing forwarded, nothing
 * closed — and reports how long requests took to answer during the freeze and how soon after it the API answered
 * 200 again (first /healthz 200, first list 200, and the time from which every request succeeded).
 */
import { Effect } from "effect"
import { startFreezableProxy } from "../test/support/FreezableProxy.ts"
import { postgresUrl, startServer } from "../test/support/TestServer.ts"
import { percentile, sleep } from "./BenchSupport.ts"

const freezeSeconds = Number(process.env.KASSA_FREEZE_SECONDS ?? 20)
const clients = 20

interface Sample {
  readonly kind: "list" | "create" | "health"
  readonly startedAt: number
  readonly endedAt: number
  readonly status: number
}

const main = async () => {
  const target = new URL(postgresUrl)
  const proxy = await startFreezableProxy({ host: target.hostname, port: Number(target.port || 5432) })
  const server = await startServer(
    "postgres",
    {},
    { rewriteDatabaseUrl: (url) => Object.assign(url, { hostname: "127.0.0.1", port: String(proxy.port) }) }
  )
  // A budget the load cannot spend: the figures are about the database, not the rate limit.
  const { testKey } = await server.createApplication({ rate_limit_per_minute: 1_000_000 })
  const samples: Array<Sample> = []
  let running = true
  const timed = async (kind: Sample["kind"], send: () => Promise<{ status: number }>) => {
    const startedAt = performance.now()
    const status = await send()
      .then((response) => response.status)
      .catch(() => 0)
    samples.push({ kind, startedAt, endedAt: performance.now(), status })
  }
  let counter = 0
  const client = async () => {
    while (running) {
      await timed("list", () => server.request("/api/v1/payments?limit=10", { key: testKey }))
      await timed("create", () =>
        server.request("/api/v1/payments", {
          method: "POST",
          key: testKey,
          body: { amount: 1000, order_reference: `freeze-${counter++}` }
        })
      )
    }
  }
  const health = async () => {
    while (running) {
      await timed("health", () => server.request("/healthz"))
      await sleep(250)
    }
  }
  const load = [...Array.from({ length: clients }, client), health()]
  await sleep(5000)
  const frozenAt = performance.now()
  proxy.freeze()
  await sleep(freezeSeconds * 1000)
  proxy.thaw()
  const thawedAt = performance.now()
  await sleep(30_000)
  running = false
  await Promise.all(load)

  const during = samples.filter((sample) => sample.startedAt >= frozenAt && sample.startedAt < thawedAt)
  const durations = during.map((sample) => sample.endedAt - sample.startedAt).sort((a, b) => a - b)
  const answerMs = (p: number) => Math.round(percentile(durations, p))
  const statuses = (list: ReadonlyArray<Sample>) =>
    Object.entries(
      list.reduce<Record<string, number>>((counts, sample) => {
        counts[sample.status] = (counts[sample.status] ?? 0) + 1
        return counts
      }, {})
    )
      .map(([status, count]) => `${status}×${count}`)
      .join(" ")
  const healthDuring = during
    .filter((sample) => sample.kind === "health")
    .map((sample) => sample.endedAt - sample.startedAt)
  const after = samples.filter((sample) => sample.endedAt >= thawedAt)
  const firstOk = (kind: Sample["kind"]) => {
    const hit = after
      .filter((sample) => sample.kind === kind && sample.status < 300)
      .sort((a, b) => a.endedAt - b.endedAt)[0]
    return hit === undefined ? "never" : `${((hit.endedAt - thawedAt) / 1000).toFixed(1)} s`
  }
  const lastFailure = after
    .filter((sample) => sample.status >= 300 || sample.status === 0)
    .sort((a, b) => b.endedAt - a.endedAt)[0]
  console.log(`freeze: ${freezeSeconds} s, ${clients} clients + /healthz every 250 ms`)
  console.log(`requests started during the freeze: ${during.length} (${statuses(during)})`)
  console.log(`  answer time: median ${answerMs(0.5)} ms, p95 ${answerMs(0.95)} ms, max ${answerMs(1)} ms`)
  console.log(`  /healthz answer time: max ${Math.round(Math.max(0, ...healthDuring))} ms`)
  console.log(
    `after the thaw: first /healthz 200 ${firstOk("health")}, first list 200 ${firstOk("list")}, first create 201 ${firstOk("create")}`
  )
  console.log(
    `  every request succeeded from ${lastFailure === undefined ? "the thaw on" : `${((lastFailure.endedAt - thawedAt) / 1000).toFixed(1)} s after the thaw`} (${statuses(after)})`
  )
  await server.close()
  await proxy.close()
}

Effect.runPromise(Effect.promise(main)).catch((error) => {
  console.error(error)
  process.exit(1)
})
