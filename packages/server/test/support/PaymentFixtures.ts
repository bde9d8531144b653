/**
 * Helpers shared by the payment tests: create and drive payments over HTTP, and look at (or move) what is stored
 * directly in the database, for the checks HTTP cannot make (events, deliveries, idempotency records, expiry).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import type { RunningServer } from "./TestServer.ts"

/** The wire payment, loosely typed. */
export type WirePayment = {
  readonly id: string
  readonly status: string
  readonly mode: string
  readonly amount: number
  readonly refunded_amount: number
  readonly order_reference: string
  readonly created_at: string
  readonly expires_at: string
  readonly paid_at: string | null
  readonly refunds: ReadonlyArray<{
    readonly id: string
    readonly amount: number
    readonly status: string
    readonly reason: string | null
    readonly created_at: string
    readonly confirmed_at: string | null
  }>
} & Record<string, unknown>

export type WireError = {
  readonly error: { readonly code: string; readonly message: string } & Record<string, unknown>
}

export type Response = Awaited<ReturnType<RunningServer["request"]>>

let counter = 0
/** An order reference no other test uses. */
export const uniqueReference = (prefix = "order") => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`

export const createPayment = (
  server: RunningServer,
  key: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {}
) =>
  server.request("/api/v1/payments", {
    method: "POST",
    key,
    body: { amount: 1000, order_reference: uniqueReference(), ...body },
    headers
  })

/** Creates a pending payment and returns it (fails the test otherwise). */
export const pendingPayment = async (server: RunningServer, key: string, body: Record<string, unknown> = {}) => {
  const response = await createPayment(server, key, body)
  expect(response.status, response.text).toBe(201)
  return response.body as WirePayment
}

export const simulate = (server: RunningServer, key: string, id: string, outcome: string) =>
  server.request(`/api/v1/test/payments/${id}/simulate`, { method: "POST", key, body: { outcome } })

/** Creates a test payment and pays it through the simulator. */
export const paidPayment = async (server: RunningServer, key: string, body: Record<string, unknown> = {}) => {
  const payment = await pendingPayment(server, key, body)
  const paid = await simulate(server, key, payment.id, "paid")
  expect(paid.status, paid.text).toBe(200)
  return paid.body as WirePayment
}

export const refund = (
  server: RunningServer,
  key: string,
  id: string,
  body?: Record<string, unknown>,
  headers: Record<string, string> = {}
) =>
  server.request(`/api/v1/payments/${id}/refunds`, {
    method: "POST",
    key,
    headers,
    ...(body === undefined ? {} : { body })
  })

export const cancel = (server: RunningServer, key: string, id: string) =>
  server.request(`/api/v1/payments/${id}/cancel`, { method: "POST", key })

export const fetchPayment = (server: RunningServer, key: string, id: string) =>
  server.request(`/api/v1/payments/${id}`, { key })

/** Runs a statement against the server's database and returns its rows. */
export const query = (
  server: RunningServer,
  statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>
) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return (yield* statement(sql)) as ReadonlyArray<Record<string, unknown>>
    })
  )

/** A promise and the function that settles it (the compile target predates Promise.withResolvers). */
const signal = () => {
  let resolve: () => void = () => {}
  const promise = new Promise<void>((settle) => {
    resolve = settle
  })
  return { promise, resolve: () => resolve() }
}

/**
 * Takes the payment's row lock in another transaction (as a concurrent writer would) and holds it until `release`.
 * Resolves only once the lock is held, so the test never guesses with a sleep how long taking it takes (on a slow
 * machine a fixed wait was too short). PostgreSQL only: the embedded database has one connection.
 */
export const holdRowLock = async (server: RunningServer, paymentId: string) => {
  const held = signal()
  const letGo = signal()
  const done = server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT id FROM payments WHERE id = ${paymentId} FOR UPDATE`
          held.resolve()
          yield* Effect.promise(() => letGo.promise)
        })
      )
    }).pipe(Effect.orDie)
  )
  await Promise.race([held.promise, done])
  let released = false
  return {
    /** Whether the lock has been let go yet. */
    isHeld: () => !released,
    release: async () => {
      released = true
      letGo.resolve()
      await done
    }
  }
}

/** Moves a payment's expiry into the past, as if its lifetime had run out. */
export const expireInDatabase = (server: RunningServer, id: string) =>
  query(server, (sql) => sql`UPDATE payments SET expires_at = now() - interval '1 second' WHERE id = ${id}`)

/** The payment row's status as stored (no lazy expiry: this does not go through the API). */
export const storedStatus = async (server: RunningServer, id: string) => {
  const rows = await query(server, (sql) => sql`SELECT status FROM payments WHERE id = ${id}`)
  return rows[0]?.status as string | undefined
}

export interface StoredEvent {
  readonly id: string
  readonly event: string
  readonly body: string
  readonly created_at: Date
  readonly delivery_status: string | null
  readonly next_attempt_at: Date | null
  readonly attempt_count: number | null
  readonly delivery_created_at: Date | null
}

/** The events of a payment, oldest first, each with its delivery. */
export const eventsOf = async (server: RunningServer, paymentId: string) =>
  (await query(
    server,
    (sql) => sql`
      SELECT e.id, e.event, e.body, e.created_at, d.status AS delivery_status, d.next_attempt_at, d.attempt_count,
             d.created_at AS delivery_created_at,
             (SELECT count(*)::int FROM deliveries x WHERE x.event_id = e.id) AS deliveries
      FROM events e LEFT JOIN deliveries d ON d.event_id = e.id
      WHERE e.payment_id = ${paymentId}
      ORDER BY e.created_at, e.id
    `
  )) as unknown as ReadonlyArray<StoredEvent & { readonly deliveries: number }>

/** How many payments the application has with this order reference. */
export const paymentsWithReference = async (server: RunningServer, orderReference: string) => {
  const rows = await query(
    server,
    (sql) => sql`SELECT id, status FROM payments WHERE order_reference = ${orderReference} ORDER BY created_at`
  )
  return rows.map((row) => ({ id: String(row.id), status: String(row.status) }))
}

export const errorCode = (response: Response) => (response.body as WireError).error?.code
