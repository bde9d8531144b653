/**
 * KASSA_WORKERS (Cluster): `node src/main.ts` as a primary with worker processes on one port, on a scratch PostgreSQL
 * database created and dropped here.
 * - the primary migrates once (the test's own connection finds the schema current without migrating), and the
 *   first-start banner is printed once for two workers;
 * - creates over fresh connections are spread over the workers (each worker's own /metrics counts some, and the
 *   counts add up);
 * - 300 events are each delivered exactly once by the workers together;
 * - an application's rate limit holds across workers exactly (Redis set): the limit passes, the rest get 429;
 * - a worker killed with SIGKILL is replaced, and the port answers meanwhile;
 * - SIGTERM to the primary drains every worker and the primary exits 0;
 * - in production every line, the primary's own too (migrations applied, the drain), is a JSON line in the
 *   workers' shape, the primary's annotated `process: "primary"` (issue 23);
 * - two workers on the embedded database are refused, with a message naming DATABASE_URL;
 * - KASSA_WORKERS reads a number or `auto` (the cores) and refuses 0; the replacement back-off doubles to a cap.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Exit } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Cluster from "../src/Cluster.ts"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import { scratchDatabase } from "./support/ScratchDatabase.ts"
import { type SpawnedServer, spawnServer } from "./support/ServerProcess.ts"
import { redisReachable, redisUrl } from "./support/TestRedis.ts"
import { databases, freePort } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

type Primary = SpawnedServer

const startPrimary = spawnServer

/** The primary's children: its workers. */
const workerPids = (primary: Primary): Array<number> => {
  try {
    return execFileSync("ps", ["--ppid", String(primary.child.pid), "-o", "pid="], { encoding: "utf8" })
      .split("\n")
      .map((line) => Number(line.trim()))
      .filter((pid) => pid > 0)
  } catch {
    return [] // ps exits 1 when there is none
  }
}

/** One request on its own connection (no keep-alive), so the cluster hands each to the next worker. */
const call = (port: number, method: string, path: string, key?: string, body?: unknown) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const request = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        agent: false,
        timeout: 30_000,
        headers: {
          connection: "close",
          accept: "application/json",
          ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
          ...(payload === undefined ? {} : { "content-type": "application/json" })
        }
      },
      (response) => {
        let text = ""
        response.on("data", (chunk: Buffer) => {
          text += chunk.toString()
        })
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text }))
      }
    )
    request.on("timeout", () => request.destroy(new Error("timed out")))
    request.on("error", reject)
    request.end(payload)
  })

const waitFor = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

const healthy = (port: number) =>
  call(port, "GET", "/healthz")
    .then((answer) => answer.status === 200)
    .catch(() => false)

/** This worker's count of `POST /api/v1/payments` answered 201, from its own metrics listener. */
const createsCounted = async (metricsPort: number) => {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((response) => response.text())
  const line = text
    .split("\n")
    .find(
      (entry) =>
        entry.startsWith("kassa_http_requests_total{") &&
        entry.includes('method="POST"') &&
        entry.includes('route="/api/v1/payments"') &&
        entry.includes('status="201"')
    )
  return line === undefined ? 0 : Number(line.split(" ").at(-1))
}

describe.runIf(databases.includes("postgres"))("KASSA_WORKERS=2 on PostgreSQL", () => {
  const db = scratchDatabase("cluster")
  let port = 0
  let metricsPort = 0
  let primary: Primary
  let receiver: WebhookReceiver
  let busyKey = ""
  let limitedKey = ""
  let busyId = ""
  let paymentId = ""

  const onDatabase = db.run

  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    await db.create()
    port = await freePort()
    metricsPort = await freePort()
    primary = startPrimary(
      db.serverEnv({
        KASSA_WORKERS: "2",
        KASSA_PORT: String(port),
        KASSA_METRICS_PORT: String(metricsPort),
        ...(redisReachable ? { KASSA_REDIS_URL: redisUrl } : {})
      })
    )
    await waitFor("two workers listening", () => (primary.output().match(/Kassa listening on/g) ?? []).length === 2)
    // Applications straight in the database, with the primary's migrations (this layer does not migrate).
    const make = (name: string, limit: number, webhook: boolean) =>
      db.seedApplication(
        { name, rate_limit_per_minute: limit, ...(webhook ? { webhook_url: receiver.url("/hook") } : {}) },
        { mode: "test", webhookSecret: `whsec_${"C".repeat(32)}`, migrate: false }
      )
    const busy = await make("Busy shop", 1_000_000, true)
    const limited = await make("Limited shop", 10, false)
    busyId = busy.id
    busyKey = busy.key
    limitedKey = limited.key
  }, 120_000)

  afterAll(async () => {
    if (primary !== undefined && primary.child.exitCode === null) {
      for (const pid of workerPids(primary)) process.kill(pid, "SIGKILL")
      primary.child.kill("SIGKILL")
    }
    await receiver?.close()
    await db.drop()
  }, 60_000)

  it("migrates once and prints the first-start banner once for two workers", () => {
    expect(primary.output().match(/Kassa listening on/g)).toHaveLength(2)
    expect(primary.output().match(/First start on an empty database/g)).toHaveLength(1)
    expect(workerPids(primary)).toHaveLength(2)
  })

  it("creates over fresh connections are spread over both workers", async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        call(port, "POST", "/api/v1/payments", busyKey, { amount: 1000, order_reference: `spread-${index}` })
      )
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(201))
    paymentId = (JSON.parse(answers[0]?.text ?? "{}") as { id: string }).id
    const counts = await Promise.all([createsCounted(metricsPort), createsCounted(metricsPort + 1)])
    expect(counts[0]).toBeGreaterThan(0)
    expect(counts[1]).toBeGreaterThan(0)
    expect(counts[0] + counts[1]).toBe(40)
  }, 60_000)

  it("300 events: each delivered exactly once by the workers together", async () => {
    const ids = await db.insertPaidEvents({ applicationId: busyId, paymentId, count: 300 })
    const succeeded = () =>
      onDatabase(
        Effect.gen(function* () {
          const sql = yield* PgClient.PgClient
          const rows = yield* sql`SELECT count(*)::int AS n FROM deliveries WHERE status = 'succeeded'`
          return Number(rows[0]?.n ?? 0)
        })
      )
    await waitFor("300 deliveries succeeded", async () => (await succeeded()) === 300)
    const arrivals = new Map<string, number>()
    for (const request of receiver.received("/hook")) {
      const id = String((JSON.parse(request.body) as { id: string }).id)
      arrivals.set(id, (arrivals.get(id) ?? 0) + 1)
    }
    expect(arrivals.size).toBe(300)
    for (const id of ids) expect(arrivals.get(id), id).toBe(1)
  }, 90_000)

  it.runIf(redisReachable)(
    "with Redis, an application's rate limit holds across workers exactly",
    async () => {
      const answers = []
      // One at a time over fresh connections: the round-robin alternates the workers.
      for (let index = 0; index < 30; index++) answers.push(await call(port, "GET", "/api/v1/payments", limitedKey))
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 429)).toHaveLength(20)
      expect(statuses.filter((status) => status === 200)).toHaveLength(10)
    },
    60_000
  )

  it("a worker killed with SIGKILL is replaced; the port answers meanwhile", async () => {
    const before = workerPids(primary)
    expect(before).toHaveLength(2)
    const victim = before[0] ?? 0
    process.kill(victim, "SIGKILL")
    await waitFor("the victim gone", () => !workerPids(primary).includes(victim))
    for (let index = 0; index < 5; index++) expect(await healthy(port)).toBe(true)
    await waitFor("a replacement worker", () => {
      const now = workerPids(primary)
      return now.length === 2 && !now.includes(victim)
    })
    await waitFor("three start lines", () => (primary.output().match(/Kassa listening on/g) ?? []).length === 3)
    expect(primary.output()).toContain(`worker ${victim} (index 0) exited (SIGKILL)`)
    expect(await healthy(port)).toBe(true)
  }, 90_000)

  it("SIGTERM to the primary drains every worker and the primary exits 0", async () => {
    const workers = workerPids(primary)
    expect(workers).toHaveLength(2)
    primary.child.kill("SIGTERM")
    const code = await Promise.race([primary.exited, sleep(60_000).then(() => "still running")])
    expect(code).toBe(0)
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow()
  }, 90_000)
})

describe.runIf(databases.includes("postgres"))("KASSA_WORKERS=2 in production", () => {
  const db = scratchDatabase("clusterjson")
  let primary: Primary | undefined

  afterAll(async () => {
    if (primary !== undefined && primary.child.exitCode === null) {
      for (const pid of workerPids(primary)) process.kill(pid, "SIGKILL")
      primary.child.kill("SIGKILL")
    }
    await db.drop()
  }, 60_000)

  it("the primary's lines are JSON in the workers' shape, as every worker's are", async () => {
    await db.create()
    const port = await freePort()
    const started = startPrimary(
      db.serverEnv({ KASSA_ENV: "production", KASSA_WORKERS: "2", KASSA_PORT: String(port) })
    )
    primary = started
    await waitFor("two workers listening", () => (started.output().match(/Kassa listening on/g) ?? []).length === 2)
    started.child.kill("SIGTERM")
    expect(await Promise.race([started.exited, sleep(60_000).then(() => "still running")])).toBe(0)
    const lines = started
      .output()
      .split("\n")
      .filter((line) => line.trim() !== "")
    const parsed = lines.map((line) => {
      try {
        return JSON.parse(line) as { message: unknown; level: string; annotations: Record<string, unknown> }
      } catch {
        throw new Error(`not a JSON line: ${line}`)
      }
    })
    const own = parsed.filter((line) => line.annotations.process === "primary")
    expect(own.map(({ message }) => message)).toEqual([
      expect.stringMatching(/^applied migrations initial, delivery_engine, /),
      "SIGTERM: draining 2 worker(s)"
    ])
    const workerLine = parsed.find(({ message }) => String(message).startsWith("Kassa listening on"))
    for (const line of own) {
      expect(line.annotations.pid).toBe(started.child.pid)
      expect(line.level).toBe("INFO")
      // Every key of a worker's line, so a log shipper reads both alike.
      expect(Object.keys(line)).toEqual(expect.arrayContaining(Object.keys(workerLine ?? { missing: true })))
    }
  }, 120_000)
})

/** The workers setting as a start reads it, or the failure's text. */
const loadWorkers = (value: string) =>
  Effect.runPromiseExit(
    Effect.gen(function* () {
      return (yield* ServerConfig).workers
    }).pipe(
      Effect.provide(ServerConfig.layer),
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ KASSA_WORKERS: value })))
    )
  ).then((exit) => (Exit.isSuccess(exit) ? exit.value : String(exit.cause)))

describe("KASSA_WORKERS and the supervisor's back-off", () => {
  it("reads a number or auto (= cores); 0, a fraction and a word are refused naming the setting", async () => {
    expect(await loadWorkers("3")).toBe(3)
    expect(await loadWorkers("auto")).toBe(availableParallelism())
    for (const bad of ["0", "1.5", "many"]) {
      expect(await loadWorkers(bad)).toContain("KASSA_WORKERS must be a whole number from 1 to 256")
    }
  })

  it("replaces at once after a long life, then doubles from 250 ms while workers die young, up to 30 s", () => {
    expect([0, 1, 2, 3, 4, 8, 20].map(Cluster.backoffMs)).toEqual([0, 250, 500, 1000, 2000, 30_000, 30_000])
  })
})

describe("KASSA_WORKERS on the embedded database", () => {
  it("two workers are refused with a message naming DATABASE_URL; no worker starts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "kassa-cluster-embedded-"))
    try {
      const refused = startPrimary({
        KASSA_WORKERS: "2",
        KASSA_PORT: String(await freePort()),
        KASSA_DATA_DIR: dataDir,
        KASSA_ENV: "development"
      })
      const code = await Promise.race([refused.exited, sleep(60_000).then(() => "still running")])
      expect(code).not.toBe(0)
      expect(typeof code).toBe("number")
      expect(refused.output()).toContain(
        "2 workers (KASSA_WORKERS, kassa serve --workers) need DATABASE_URL (PostgreSQL)"
      )
      expect(refused.output()).not.toContain("Kassa listening on")
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 90_000)
})
