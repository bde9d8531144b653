/**
 * Two server processes (`node src/main.ts`) on one PostgreSQL share the webhook work (PostgreSQL only):
 * - 1,000 events to a healthy receiver arrive exactly once each (claims skip each other's locked rows and leases);
 * - a process killed with SIGKILL while it delivers loses nothing: the other takes its claims over at once (the dead
 *   process's advisory lock went with its connection), and after a restart every event has arrived at least once.
 *
 * The events are written straight into the outbox tables, 1,000 in one transaction, as the payment code would write
 * them one change at a time; the commit's NOTIFY wakes both processes.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { scratchDatabase } from "./support/ScratchDatabase.ts"
import { type ServerProcess, startServerProcess } from "./support/ServerProcess.ts"
import { databases, freePort } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe.runIf(databases.includes("postgres"))("two server processes on one PostgreSQL", () => {
  const db = scratchDatabase("deliveries")
  const processes = new Map<string, ServerProcess>()
  const ports = new Map<string, number>()
  let receiver: WebhookReceiver
  let applicationId = ""
  let paymentId = ""

  const start = async (name: string) => {
    const port = ports.get(name) ?? (await freePort())
    ports.set(name, port)
    const started = await startServerProcess({
      port,
      name,
      env: db.serverEnv()
    })
    processes.set(name, started)
    return port
  }

  const kill = async (name: string) => {
    await processes.get(name)?.kill()
  }

  const insertEvents = (count: number) => db.insertPaidEvents({ applicationId, paymentId, count })

  const statusCounts = () =>
    db.run(
      Effect.gen(function* () {
        const sql = yield* PgClient.PgClient
        const rows = yield* sql`SELECT status, count(*)::int AS n FROM deliveries GROUP BY status`
        return Object.fromEntries(rows.map((row) => [String(row.status), Number(row.n)]))
      })
    )

  /** How many deliveries took how many attempts. */
  const attemptCounts = () =>
    db.run(
      Effect.gen(function* () {
        const sql = yield* PgClient.PgClient
        const rows = yield* sql`SELECT attempt_count, count(*)::int AS n FROM deliveries GROUP BY attempt_count`
        return Object.fromEntries(rows.map((row) => [String(row.attempt_count), Number(row.n)]))
      })
    )

  /** How many processes hold leases on pending deliveries right now. */
  const leaseOwners = () =>
    db.run(
      Effect.gen(function* () {
        const sql = yield* PgClient.PgClient
        const [row] = yield* sql`
          SELECT count(DISTINCT lease_owner)::int AS n FROM deliveries WHERE status = 'pending' AND lease_owner IS NOT NULL
        `
        return Number(row?.n ?? 0)
      })
    )

  const waitUntilSucceeded = async (total: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const counts = await statusCounts()
      if (counts.succeeded === total) return counts
      if (Date.now() > deadline) throw new Error(`not all delivered: ${JSON.stringify(counts)}`)
      await sleep(50)
    }
  }

  /** How many times each event id reached the receiver. */
  const arrivals = () => {
    const counts = new Map<string, number>()
    for (const request of receiver.received("/hook")) {
      const id = String((JSON.parse(request.body) as { id: string }).id)
      counts.set(id, (counts.get(id) ?? 0) + 1)
    }
    return counts
  }

  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    await db.create()
    const { id, key } = await db.seedApplication(
      { name: "Busy shop", webhook_url: receiver.url("/hook"), rate_limit_per_minute: 1_000_000 },
      { mode: "test", webhookSecret: `whsec_${"D".repeat(32)}` }
    )
    applicationId = id
    const [portA] = await Promise.all([start("a"), start("b")])
    // One pending payment for the events to belong to (creating it sends no webhook).
    const created = await fetch(`http://127.0.0.1:${portA}/api/v1/payments`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ amount: 1000, order_reference: "busy-1" })
    })
    expect(created.status).toBe(201)
    paymentId = ((await created.json()) as { id: string }).id
  }, 60_000)

  afterAll(async () => {
    await kill("a")
    await kill("b")
    await receiver?.close()
    await db.drop()
  })

  it("1,000 events to a healthy receiver: each arrives exactly once", async () => {
    const ids = await insertEvents(1000)
    await waitUntilSucceeded(1000, 30_000)
    const counts = arrivals()
    expect(counts.size).toBe(1000)
    for (const id of ids) expect(counts.get(id), id).toBe(1)
    expect(receiver.received("/hook")).toHaveLength(1000)
    expect(await statusCounts()).toEqual({ succeeded: 1000 })
    // Nothing waited for a lease to run out or for a retry: every delivery took one attempt.
    expect(await attemptCounts()).toEqual({ 1: 1000 })
  }, 60_000)

  it("a process killed with SIGKILL while delivering loses nothing: every event arrives at least once", async () => {
    receiver.requests.length = 0
    // A receiver that takes a while, so the process dies with attempts in flight.
    receiver.answer({ status: 200, body: "ok", delayMs: 25 })
    const ids = await insertEvents(1000)
    // Both processes must be delivering when one dies: the second can start up to a poll (1 s) later than the
    // first, which alone may have made the first 200 attempts by then (a CI run killed a process holding nothing).
    const deadline = Date.now() + 30_000
    while (receiver.received("/hook").length < 200 || (await leaseOwners()) < 2) {
      if (Date.now() > deadline) throw new Error("the two processes did not both take deliveries")
      await sleep(5)
    }
    // And both have been sending for a moment (their caps are 16 attempts each, answered after 25 ms).
    const seen = receiver.received("/hook").length
    while (receiver.received("/hook").length < seen + 64 && Date.now() < deadline) await sleep(5)
    await kill("a")
    const killedAt = Date.now()
    expect(processes.get("a")?.child.signalCode).toBe("SIGKILL")
    // The survivor alone finishes the work, without waiting for the dead process's leases to run out (60 s).
    await waitUntilSucceeded(2000, 30_000)
    expect(Date.now() - killedAt).toBeLessThan(30_000)

    await start("a")
    const counts = arrivals()
    for (const id of ids) expect(counts.get(id) ?? 0, id).toBeGreaterThanOrEqual(1)
    // The attempts the dead process had in flight (they reached the receiver, their results never got written)
    // were made again by the survivor: at least once, not exactly once.
    expect([...counts.values()].filter((n) => n > 1).length).toBeGreaterThan(0)
    expect(await statusCounts()).toEqual({ succeeded: 2000 })
    // After the restart both processes deliver again.
    receiver.answer({ status: 200, body: "ok" })
    const more = await insertEvents(100)
    await waitUntilSucceeded(2100, 15_000)
    const after = arrivals()
    for (const id of more) expect(after.get(id), id).toBe(1)
    for (const name of ["a", "b"]) expect(processes.get(name)?.stderr() ?? "").not.toMatch(/defect|Error:/i)
  }, 90_000)
})
