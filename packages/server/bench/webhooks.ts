/**
 * `pnpm bench` (webhook delivery engine): one Kassa process (`src/main.ts`) on PostgreSQL delivering to a fast local
 * receiver (node:http in this process, answering 200 at once). Figures, not a test: run it on a quiet machine.
 *
 * 1. Throughput (after a small warm-up): a backlog of events committed at once, spread over 20 applications (20 webhook URLs); deliveries
 *    per second from the commit to the last arrival.
 * 2. First-attempt latency at a fixed 200 events/s: each event committed in its own transaction (as a status change
 *    commits its event), from the commit to the receiver; p50 / p99. The commit is made by this process, so the
 *    server learns of it by LISTEN/NOTIFY (a status change in the server also wakes it in process).
 * 3. Isolation: the same backlog while 10 % of the webhook URLs (2 of 20) hang for 10 s; the healthy receivers'
 *    deliveries per second, against scenario 1.
 *
 * Events are written straight into the outbox tables, exactly as the payment code writes them.
 * Targets: ≥ 1,000 deliveries/s; p99 ≤ 250 ms at 200 events/s; healthy receivers keep ≥ 80 % of their throughput.
 * Settings: KASSA_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), KASSA_BENCH_EVENTS (20000).
 */

import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Application } from "@kassa/core"
import { Array as Arr, Effect, Fiber, Redacted } from "effect"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import {
  createPayment,
  percentile,
  repositories,
  root,
  scratchDatabase,
  secretKey,
  sleep,
  startProcess,
  waitFor
} from "./BenchSupport.ts"

const backlog = Number(process.env.KASSA_BENCH_EVENTS ?? 20_000)
const database = scratchDatabase("kassa_bench_webhooks")
const databaseUrl = database.url
const port = 4711
const applicationCount = 20

// ---- The receiver: records when each event id arrived; paths in `hanging` never answer.
const arrivals = new Map<string, number>()
const hanging = new Set<string>()
const held = new Set<ServerResponse>()
const receiver = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const at = performance.now()
    const id = Buffer.concat(chunks).toString("utf8").slice(7, 47)
    if (hanging.has(request.url ?? "")) {
      held.add(response)
      response.on("close", () => held.delete(response))
      return
    }
    if (!arrivals.has(id)) arrivals.set(id, at)
    response.writeHead(200, { "content-length": "2" })
    response.end("ok")
  })
})
receiver.keepAliveTimeout = 60_000
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
const receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`

await database.create()
const child = startProcess(["src/main.ts"], {
  DATABASE_URL: databaseUrl,
  KASSA_SECRET_KEY: secretKey,
  KASSA_ADMIN_TOKEN: "bench-admin-token",
  KASSA_PORT: String(port),
  KASSA_ENV: "development",
  KASSA_DATA_DIR: join(root, ".kassa-bench")
})

try {
  await waitFor(`http://127.0.0.1:${port}/healthz`, (status) => status >= 200 && status < 300)

  // ---- Fixture: 20 applications, each with its own URL on the receiver, and one payment the events belong to.
  const { applications, key } = await Effect.runPromise(
    Effect.gen(function* () {
      const repository = yield* ApplicationRepository
      const created = yield* Effect.forEach(Arr.range(0, applicationCount - 1), (i) =>
        repository.create(
          {
            ...Application.defaults,
            name: `Bench ${i}`,
            status: "active",
            webhook_url: `${receiverBase}/app-${i}`,
            rate_limit_per_minute: 100_000_000
          },
          `whsec_benchbenchbenchbenchbenchbench${String(i).padStart(2, "0")}`
        )
      )
      const [first] = created
      if (first === undefined) return yield* Effect.die(new Error("no application"))
      const issued = yield* (yield* ApiKeyRepository).issue(first.id, "test")
      return { applications: created.map((application) => application.id), key: issued.key }
    }).pipe(Effect.provide(repositories(databaseUrl, "bench-admin-token")))
  )
  const paymentId = await createPayment(`http://127.0.0.1:${port}`, key, "bench-webhooks")

  const pool = PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 8 })
  const rowsFor = (count: number, offset: number) => {
    const now = new Date()
    const events: Array<Record<string, unknown>> = []
    const deliveries: Array<Record<string, unknown>> = []
    for (let i = 0; i < count; i++) {
      // The receiver reads the id at a fixed offset: `{"id":"evt_…` (40 characters).
      const id = `evt_${crypto.randomUUID()}`
      const application = applications[(offset + i) % applicationCount] ?? ""
      events.push({
        id,
        application_id: application,
        payment_id: paymentId,
        mode: "test",
        event: "payment.paid",
        body: JSON.stringify({ id, event: "payment.paid", created_at: now.toISOString(), data: { id: paymentId } }),
        created_at: now
      })
      deliveries.push({
        id: crypto.randomUUID(),
        event_id: id,
        application_id: application,
        status: "pending",
        next_attempt_at: now,
        created_at: now,
        updated_at: now
      })
    }
    return { events, deliveries, ids: events.map((event) => String(event.id)) }
  }
  const insert = (sql: PgClient.PgClient, count: number, offset: number) =>
    Effect.gen(function* () {
      const { events, deliveries, ids } = rowsFor(count, offset)
      if (!Arr.isArrayNonEmpty(events) || !Arr.isArrayNonEmpty(deliveries)) return ids
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`INSERT INTO events ${sql.insert(events)}`
          yield* sql`INSERT INTO deliveries ${sql.insert(deliveries)}`
        })
      )
      return ids
    })

  const waitForArrivals = async (ids: ReadonlyArray<string>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs
    while (ids.some((id) => !arrivals.has(id))) {
      if (Date.now() > deadline) throw new Error("deliveries did not arrive in time")
      await sleep(2)
    }
    return Math.max(...ids.map((id) => arrivals.get(id) ?? 0))
  }

  /** A backlog committed at once (in chunks of one transaction); deliveries/s of the ids that should arrive. */
  const backlogRun = (offset: number, shouldArrive: (index: number) => boolean, size = backlog) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* PgClient.PgClient
        const ids: Array<string> = []
        const started = performance.now()
        yield* sql.withTransaction(
          Effect.gen(function* () {
            for (let done = 0; done < size; done += 2_000) {
              ids.push(...(yield* insert(sql, Math.min(2_000, size - done), offset + done)))
            }
          })
        )
        const committed = performance.now()
        const expected = ids.filter((_, index) => shouldArrive(index))
        const last = yield* Effect.promise(() => waitForArrivals(expected, 120_000))
        return { rate: expected.length / ((last - committed) / 1000), insertMs: committed - started }
      }).pipe(Effect.provide(pool), Effect.scoped)
    )

  // Warm-up (JIT, connections), not measured.
  await backlogRun(0, () => true, 2_000)

  // 1. Throughput.
  const throughput = await backlogRun(0, () => true)

  // 2. Latency at a fixed 200 events/s for 10 s: one event per transaction, every 5 ms.
  const latencies = await Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const commits = new Map<string, number>()
      const start = performance.now()
      const fibers = []
      for (let i = 0; i < 2_000; i++) {
        const wait = start + i * 5 - performance.now()
        if (wait > 0) yield* Effect.sleep(wait)
        fibers.push(
          yield* Effect.forkChild(
            insert(sql, 1, i).pipe(
              Effect.tap((ids) =>
                Effect.sync(() => {
                  for (const id of ids) commits.set(id, performance.now())
                })
              )
            )
          )
        )
      }
      yield* Fiber.joinAll(fibers)
      yield* Effect.promise(() => waitForArrivals([...commits.keys()], 30_000))
      return [...commits].map(([id, committed]) => (arrivals.get(id) ?? 0) - committed).sort((a, b) => a - b)
    }).pipe(Effect.provide(pool), Effect.scoped)
  )
  const latency = (p: number) => percentile(latencies, p / 100)

  // 3. The same backlog with 2 of the 20 URLs hanging.
  hanging.add("/app-0")
  hanging.add("/app-1")
  const isolated = await backlogRun(0, (index) => index % applicationCount >= 2)

  console.table([
    {
      scenario: `throughput, ${backlog} events to 20 URLs`,
      figure: `${Math.round(throughput.rate)} deliveries/s`,
      target: "≥ 1000 deliveries/s"
    },
    {
      scenario: "first-attempt latency at 200 events/s (2,000 events)",
      figure: `p50 ${latency(50).toFixed(1)} ms, p99 ${latency(99).toFixed(1)} ms, max ${latency(100).toFixed(1)} ms`,
      target: "p99 ≤ 250 ms"
    },
    {
      scenario: "healthy URLs while 2 of 20 hang for 10 s",
      figure: `${Math.round(isolated.rate)} deliveries/s (${Math.round((isolated.rate / throughput.rate) * 100)} % of scenario 1)`,
      target: "≥ 80 %"
    }
  ])
} finally {
  child.kill("SIGTERM")
  await new Promise((resolve) => child.once("exit", resolve))
  for (const response of held) response.destroy()
  receiver.closeAllConnections()
  receiver.close()
  await database.drop()
}
