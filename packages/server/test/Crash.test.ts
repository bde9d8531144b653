/**
 * A server process killed with SIGKILL in the middle of a burst of creates (PostgreSQL only): after a restart,
 * retrying every Idempotency-Key creates no second payment for any key or order reference, and every payment whose
 * 201 reached the client is still there, with the same body, replayed under its key.
 *
 * Claim, work and stored answer commit in one transaction, so a request cut off mid-flight leaves nothing behind
 * (PostgreSQL rolls back the dead connection's transaction and drops its advisory lock): the retries after the
 * restart never wait out a 60 s stale lock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { scratchDatabase } from "./support/ScratchDatabase.ts"
import { type ServerProcess, startServerProcess } from "./support/ServerProcess.ts"
import { databases, freePort } from "./support/TestServer.ts"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

interface Answer {
  readonly status: number
  readonly text: string
  readonly replayed: boolean
}

describe.runIf(databases.includes("postgres"))("a server killed mid-burst", () => {
  const db = scratchDatabase("crash")
  let port = 0
  let server: ServerProcess | undefined
  let testKey = ""

  const startChild = async () => {
    server = await startServerProcess({
      port,
      env: db.serverEnv(),
      timeoutMs: 60_000
    })
  }

  const killChild = async () => {
    await server?.kill()
  }

  const create = async (idempotencyKey: string, orderReference: string): Promise<Answer | undefined> => {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/payments`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${testKey}`,
          "content-type": "application/json",
          accept: "application/json",
          "idempotency-key": idempotencyKey
        },
        body: JSON.stringify({ amount: 1000, order_reference: orderReference })
      })
      return {
        status: response.status,
        text: await response.text(),
        replayed: response.headers.get("idempotent-replayed") === "true"
      }
    } catch {
      // The process died under this request: no answer.
      return undefined
    }
  }

  beforeAll(async () => {
    port = await freePort()
    await db.create()
    // The fixture: migrate the database and make an application with a test key, through the repositories.
    const seeded = await db.seedApplication(
      { name: "Crash shop", return_url_host: "shop.example", rate_limit_per_minute: 1_000_000 },
      { mode: "test", webhookSecret: `whsec_${"C".repeat(32)}` }
    )
    testKey = seeded.key
  })

  afterAll(async () => {
    await killChild()
    await db.drop()
  })

  it("no key and no order reference gets a second payment, and every 201 received survives", async () => {
    await startChild()
    const requests = Array.from({ length: 120 }, (_, i) => ({
      key: `crash-key-${i}-${crypto.randomUUID()}`,
      reference: `crash-order-${i}`
    }))
    const firstAnswers = new Map<string, Answer | undefined>()

    // Ten clients send their share of the burst one after the other; the process dies once some have answered.
    let answered = 0
    const clients = Array.from({ length: 10 }, (_, client) =>
      (async () => {
        for (let i = client; i < requests.length; i += 10) {
          const request = requests[i]
          if (request === undefined) continue
          const answer = await create(request.key, request.reference)
          firstAnswers.set(request.key, answer)
          if (answer === undefined) return
          answered++
        }
      })()
    )
    while (answered < 30) await sleep(5)
    await killChild()
    await Promise.all(clients)
    const received = requests.filter(({ key }) => firstAnswers.get(key)?.status === 201)
    expect(received.length).toBeGreaterThanOrEqual(30)
    // Requests were in flight when the process died (their connections were cut).
    const cut = requests.filter(({ key }) => firstAnswers.has(key) && firstAnswers.get(key) === undefined)
    expect(cut.length).toBeGreaterThan(0)

    await startChild()
    // Every key again, with its body: the ones that answered replay, the rest (cut off or never sent) run now.
    const finals = new Map<string, Answer>()
    for (const { key, reference } of requests) {
      let answer = await create(key, reference)
      for (let attempt = 0; answer?.status === 409 && attempt < 100; attempt++) {
        // A request cut off mid-flight never leaves a lock behind; this only guards against a slow rollback.
        await sleep(100)
        answer = await create(key, reference)
      }
      expect(answer?.status, `${key}: ${answer?.text}`).toBe(201)
      if (answer !== undefined) finals.set(key, answer)
    }

    for (const { key } of received) {
      const first = firstAnswers.get(key)
      const final = finals.get(key)
      expect(final?.replayed).toBe(true)
      expect(final?.text).toBe(first?.text)
      const payment = JSON.parse(first?.text ?? "{}") as { id: string }
      const fetched = await fetch(`http://127.0.0.1:${port}/api/v1/payments/${payment.id}`, {
        headers: { authorization: `Bearer ${testKey}`, accept: "application/json" }
      })
      expect(await fetched.text()).toBe(first?.text)
    }

    const counts = await db.query(
      (sql) => sql`
        SELECT order_reference, count(*)::int AS payments, count(DISTINCT idempotency_key)::int AS keys
        FROM payments GROUP BY order_reference
      `
    )
    expect(counts).toHaveLength(requests.length)
    for (const row of counts) expect(row, String(row.order_reference)).toMatchObject({ payments: 1, keys: 1 })
    // Each final answer names its own order reference's one payment.
    const ids = new Set([...finals.values()].map((answer) => (JSON.parse(answer.text) as { id: string }).id))
    expect(ids.size).toBe(requests.length)
  }, 120_000)
})
