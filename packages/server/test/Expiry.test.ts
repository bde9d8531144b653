/**
 * Expiry at scale (issue 11 §1–2): the sweeper expires due payments set-based, in batches, each with exactly the event
 * and pending delivery the per-payment path writes; a reader expires only the rows it shows; processes share the
 * sweep (`SKIP LOCKED`) and never wait on a request's lock; whoever gets there first, a payment ends with one outcome
 * and one event.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PaymentWrites } from "../src/ledger/PaymentWrites.ts"
import { ExpirySweeper } from "../src/payments/ExpirySweeper.ts"
import {
  eventsOf,
  expireInDatabase,
  fetchPayment,
  holdRowLock,
  pendingPayment,
  query,
  simulate,
  storedStatus,
  uniqueReference,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { expr, literal, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

/** `count` pending payments of the application, all past their expiry, inserted in one statement; their ids. */
const seedDue = async (
  server: RunningServer,
  applicationId: string,
  mode: "test" | "live",
  count: number
): Promise<ReadonlyArray<string>> => {
  const prefix = uniqueReference("due")
  const rows = await seedPayments(
    server,
    `${paymentsInsert(
      {
        application_id: applicationId,
        mode,
        amount: expr("1000 + i"),
        order_reference: expr(`${literal(`${prefix}-`)} || i`),
        customer: { name: null, email: "due@shop.example", phone: null },
        metadata: { batch: "yes" },
        expires_at: expr("now() - interval '1 second'"),
        created_at: expr("now() - interval '1 hour' + i * interval '1 millisecond'"),
        updated_at: expr("now() - interval '1 hour'")
      },
      `generate_series(1, ${count}) i`
    )}
    RETURNING id`
  )
  return rows.map((row) => String(row.id))
}

/** How many payment.expired events and deliveries each of `ids` has, and its stored status. */
const outcomes = async (server: RunningServer, ids: ReadonlyArray<string>) =>
  query(
    server,
    (sql) => sql`
      SELECT p.id, p.status,
        (SELECT count(*)::int FROM events e WHERE e.payment_id = p.id) AS events,
        (SELECT count(*)::int FROM events e JOIN deliveries d ON d.event_id = e.id WHERE e.payment_id = p.id)
          AS deliveries
      FROM payments p WHERE ${sql.in("p.id", ids)}
    `
  )

describe.each(databases)("expiry at scale on %s", (database) => {
  let server: RunningServer
  const sweep = () => server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))

  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  it("the sweeper expires a backlog in batches: each payment one payment.expired, one pending delivery", async () => {
    const shop = await server.createApplication()
    const other = await server.createApplication()
    // More than two batches of 500, over two applications and both modes.
    const due = [
      ...(await seedDue(server, shop.application.id, "test", 700)),
      ...(await seedDue(server, other.application.id, "live", 500))
    ]
    const notDue = await pendingPayment(server, shop.testKey)
    expect((await sweep()).expired).toBeGreaterThanOrEqual(due.length)
    const rows = await outcomes(server, due)
    expect(rows).toHaveLength(due.length)
    for (const row of rows) expect(row).toMatchObject({ status: "expired", events: 1, deliveries: 1 })
    expect(await storedStatus(server, notDue.id)).toBe("pending")
    expect((await sweep()).expired).toBe(0)
  })

  it("writes the per-payment path's event: the payment as fetch returns it, its mode on the delivery, due at once", async () => {
    const shop = await server.createApplication()
    const [id] = await seedDue(server, shop.application.id, "live", 1)
    if (id === undefined) throw new Error("seeded nothing")
    await sweep()
    const [event] = await eventsOf(server, id)
    const fetched = await fetchPayment(server, shop.liveKey, id)
    expect(fetched.body).toMatchObject({ status: "expired" })
    const body = JSON.parse(event?.body ?? "{}") as { id: string; event: string; created_at: string; data: unknown }
    expect(Object.keys(body)).toEqual(["id", "event", "created_at", "data"])
    expect(body.event).toBe("payment.expired")
    expect(body.data).toEqual(fetched.body)
    expect(event).toMatchObject({ event: "payment.expired", delivery_status: "pending" })
    // Due at once: still untried and due at its creation, or already tried by the dispatcher the commit woke (in the
    // milliseconds since the sweep, which only a delivery due at once can be).
    if (event?.attempt_count === 0) expect(event?.next_attempt_at).toEqual(event?.created_at)
    else expect(event?.attempt_count).toBe(1)
    const [delivery] = await query(
      server,
      (sql) => sql`SELECT d.mode FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = ${id}`
    )
    expect(delivery?.mode).toBe("live")

    // The same bytes as a payment expired by a fetch (the per-payment path), but for the payment itself.
    const lazy = await pendingPayment(server, shop.testKey)
    await expireInDatabase(server, lazy.id)
    await fetchPayment(server, shop.testKey, lazy.id)
    const [lazyEvent] = await eventsOf(server, lazy.id)
    const lazyBody = JSON.parse(lazyEvent?.body ?? "{}") as { data: Record<string, unknown> }
    expect(Object.keys(body.data as object)).toEqual(Object.keys(lazyBody.data))
  })

  it("a list expires only the rows it shows, and the sweeper the rest", async () => {
    const shop = await server.createApplication()
    const due = await seedDue(server, shop.application.id, "test", 3)
    const page = (await server.request("/api/v1/payments?limit=1", { key: shop.testKey })).body as {
      data: Array<WirePayment>
      has_more: boolean
    }
    // Newest first: the last seeded is shown, expired; the two older ones are left to the sweeper.
    expect(page.data.map((payment) => [payment.id, payment.status])).toEqual([[due[2], "expired"]])
    expect(page.has_more).toBe(true)
    expect(await storedStatus(server, due[0] as string)).toBe("pending")
    expect(await storedStatus(server, due[1] as string)).toBe("pending")
    // The `expired` filter finds due payments still pending, and expires those it shows.
    const expired = (await server.request("/api/v1/payments?status=expired&limit=2", { key: shop.testKey })).body as {
      data: Array<WirePayment>
    }
    expect(expired.data.map((payment) => [payment.id, payment.status])).toEqual([
      [due[2], "expired"],
      [due[1], "expired"]
    ])
    expect(await storedStatus(server, due[0] as string)).toBe("pending")
    const rows = await outcomes(server, due.slice(1))
    for (const row of rows) expect(row).toMatchObject({ status: "expired", events: 1, deliveries: 1 })
  })

  it("the expireShown of a payment that is not due changes nothing", async () => {
    const shop = await server.createApplication()
    const fresh = await pendingPayment(server, shop.testKey)
    const shown = await server.run(PaymentWrites.use((writes) => writes.expireShown([fresh.id as never])))
    expect(shown.map((payment) => payment.status)).toEqual(["pending"])
    expect(await eventsOf(server, fresh.id)).toEqual([])
  })

  it("sweeps, lists, fetches and settles racing on the same due payments: one outcome and one event each", async () => {
    const shop = await server.createApplication()
    const due = await seedDue(server, shop.application.id, "test", 60)
    const answers = await Promise.all([
      sweep(),
      sweep(),
      server.request("/api/v1/payments?limit=100", { key: shop.testKey }),
      server.request("/api/v1/payments?status=expired&limit=100", { key: shop.testKey }),
      ...due.slice(0, 20).map((id) => fetchPayment(server, shop.testKey, id)),
      ...due.slice(20, 40).map((id) => simulate(server, shop.testKey, id, "paid"))
    ])
    // A settle finds the payment expired (or busy while another transaction expires it): never paid.
    for (const answer of answers.slice(24)) expect((answer as { status: number }).status).toBe(409)
    const rows = await outcomes(server, due)
    expect(rows).toHaveLength(due.length)
    for (const row of rows) expect(row).toMatchObject({ status: "expired", events: 1, deliveries: 1 })
  })
})

describe.runIf(databases.includes("postgres"))("expiry with other transactions on postgres", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer("postgres")
  })
  afterAll(() => server.close())

  it("the sweeper skips a payment a request holds, without waiting, and expires it in a later round", async () => {
    const shop = await server.createApplication()
    // The server's own sweeper (every 10 s) may expire the seeded pair before the lock is taken: then again.
    const lockedPending = async () => {
      for (let attempt = 1; ; attempt++) {
        const [held, free] = await seedDue(server, shop.application.id, "test", 2)
        const lock = await holdRowLock(server, held as string)
        if ((await storedStatus(server, held as string)) === "pending" || attempt === 3)
          return { held, free, lock } as const
        await lock.release()
      }
    }
    const { held, free, lock } = await lockedPending()
    // Would never return while the lock is held if the sweeper waited for it.
    await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
    expect(lock.isHeld()).toBe(true)
    expect(await storedStatus(server, held as string)).toBe("pending")
    expect(await storedStatus(server, free as string)).toBe("expired")
    await lock.release()
    await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
    const rows = await outcomes(server, [held as string, free as string])
    for (const row of rows) expect(row).toMatchObject({ status: "expired", events: 1, deliveries: 1 })
  })

  it("a payment a request is settling when it falls due ends paid: the sweep and a list leave it to the request", async () => {
    const shop = await server.createApplication()
    const payment = await pendingPayment(server, shop.testKey)
    await expireInDatabase(server, payment.id)
    // A request that locked the payment before its expiry and pays it: held open until `pay` is resolved.
    let locked = () => {}
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve
    })
    let pay = () => {}
    const paying = new Promise<void>((resolve) => {
      pay = resolve
    })
    const settle = server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`SELECT id FROM payments WHERE id = ${payment.id} FOR UPDATE`
            locked()
            yield* Effect.promise(() => paying)
            yield* sql`UPDATE payments SET status = 'paid', paid_at = now(), updated_at = now() WHERE id = ${payment.id}`
          })
        )
      }).pipe(Effect.orDie)
    )
    await isLocked
    await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
    // A list waits for the request (a short transaction), then finds the payment no longer due.
    const listed = server.request("/api/v1/payments?limit=5", { key: shop.testKey })
    pay()
    await settle
    const page = (await listed).body as { data: Array<WirePayment> }
    expect(page.data.find((row) => row.id === payment.id)?.status).toBe("paid")
    await server.run(ExpirySweeper.use((sweeper) => sweeper.sweep))
    expect(await storedStatus(server, payment.id)).toBe("paid")
    expect(await eventsOf(server, payment.id)).toEqual([])
  })

  it("two sweeps share a backlog: every payment expired once", async () => {
    const shop = await server.createApplication()
    const due = await seedDue(server, shop.application.id, "live", 1500)
    const [first, second] = await Promise.all([
      server.run(PaymentWrites.use((writes) => writes.expireDue({ batchSize: 100 }))),
      server.run(PaymentWrites.use((writes) => writes.expireDue({ batchSize: 100 })))
    ])
    expect((first ?? 0) + (second ?? 0)).toBeGreaterThanOrEqual(due.length)
    const rows = await outcomes(server, due)
    for (const row of rows) expect(row).toMatchObject({ status: "expired", events: 1, deliveries: 1 })
  })
})
