/**
 * Payment rows are decoded, not cast (issue #13 §4): a payment with refunds, written through the repository, reads back
 * through every read of it (find, findMany, lock, list, findByIdempotencyKey) exactly as written — amounts as
 * integers up to 2^53 − 1, timestamps to the millisecond, its nulls and its metadata — whether its refunds come inside
 * the payment's row (`json_agg`: ISO text, numbers) or from a second query (rows just locked: `Date`s, bigints). A row
 * a raw UPDATE made impossible (an unknown status, metadata that is no object, a refund's amount past 2^53 − 1) makes
 * the read die rather than answer a wrong payment.
 */
import { Ids, Payment } from "@kassa/core"
import { Cause, DateTime, Effect, Exit, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PaymentRepository, type Scope, type StoredPayment } from "../src/ledger/PaymentRepository.ts"
import { uniqueReference } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

/** The effect died of a row that did not decode (and did not fail, nor answer). */
const diedOfRow = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && Cause.hasDies(exit.cause) && Schema.isSchemaError(Cause.squash(exit.cause))

const at = (iso: string) => DateTime.makeUnsafe(iso)
const encodePayment = Schema.encodeSync(Payment.Payment)
const toWire = (payment: Payment.Payment) => encodePayment(payment)

describe.each(databases)("payment rows on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const withRepository = <A, E>(
    use: (repo: PaymentRepository["Service"], sql: SqlClient.SqlClient) => Effect.Effect<A, E>
  ) =>
    server.run(
      Effect.gen(function* () {
        return yield* use(yield* PaymentRepository, yield* SqlClient.SqlClient)
      })
    )

  /**
   * A partly refunded payment of a fresh application, inserted and then given two refunds (one succeeded, one
   * pending) by `save`, with the Idempotency-Key it was created under. Returns it as the domain holds it.
   */
  const storedPayment = async (options: { readonly createdAt: string; readonly amount: number }) => {
    const { application } = await server.createApplication()
    const id = Ids.PaymentId.make(crypto.randomUUID())
    const created: Payment.Payment = {
      id,
      status: "paid",
      mode: "test",
      amount: options.amount,
      refunded_amount: 0,
      currency: "EUR",
      method: "card",
      order_reference: uniqueReference("rows"),
      description: null,
      customer: { name: null, email: "eve@shop.example", phone: null },
      payer: null,
      locale: "nl-NL",
      return_url: null,
      metadata: { cart: "c-91", items: 2, gift: false, note: null },
      checkout_url: `${server.baseUrl}/checkout/${id}`,
      expires_at: at("2126-11-25T11:15:30.123Z"),
      paid_at: at("2026-11-25T10:15:40.456Z"),
      created_at: at(options.createdAt),
      refunds: []
    }
    const refunded: Payment.Payment = {
      ...created,
      status: "partially_refunded",
      refunded_amount: 500,
      refunds: [
        {
          id: Ids.RefundId.make(crypto.randomUUID()),
          amount: 500,
          status: "succeeded",
          reason: "damaged",
          created_at: at("2026-11-25T10:16:30.001Z"),
          confirmed_at: at("2026-11-25T10:16:31.999Z")
        },
        {
          id: Ids.RefundId.make(crypto.randomUUID()),
          amount: Number.MAX_SAFE_INTEGER - 500,
          status: "pending",
          reason: null,
          created_at: at("2026-11-25T10:17:00.500Z"),
          confirmed_at: null
        }
      ]
    }
    const idempotencyKey = `create-${crypto.randomUUID()}`
    await withRepository((repo) =>
      Effect.gen(function* () {
        yield* repo.insert(created, { applicationId: application.id, idempotencyKey }, at(options.createdAt))
        yield* repo.save(created, refunded, at("2026-11-25T10:17:00.500Z"))
      })
    )
    const scope: Scope = { applicationId: application.id, mode: "test" }
    return { payment: refunded, scope, idempotencyKey }
  }

  /** Every read of the payment, each as the wire form of what it answered (timestamps as ISO text). */
  const readAll = (id: Ids.PaymentId, scope: Scope, idempotencyKey: string) =>
    withRepository((repo, sql) =>
      Effect.gen(function* () {
        const one = (stored: Option.Option<StoredPayment>) => stored.pipe(Option.map((entry) => entry.payment))
        return {
          find: one(yield* repo.find(id, scope)),
          findUnscoped: one(yield* repo.find(id)),
          findMany: (yield* repo.findMany([id])).map((entry) => entry.payment),
          lock: one(yield* sql.withTransaction(repo.lock(id, scope, "nowait")).pipe(Effect.orDie)),
          list: (yield* repo.list(scope, { limit: 10 }).pipe(Effect.orDie)).payments.map((entry) => entry.payment),
          byKey: one(yield* repo.findByIdempotencyKey(scope, idempotencyKey, at("2026-11-25T00:00:00.000Z")))
        }
      })
    )

  it("reads a payment with refunds back exactly through every read", async () => {
    const { payment, scope, idempotencyKey } = await storedPayment({
      createdAt: "2026-11-25T10:15:30.123Z",
      amount: Number.MAX_SAFE_INTEGER
    })
    const reads = await readAll(payment.id, scope, idempotencyKey)
    const expected = toWire(payment)
    // The wire form pins every field: timestamps to the millisecond, amounts, nulls, metadata, refunds in order.
    expect(expected).toMatchObject({
      amount: 9007199254740991,
      created_at: "2026-11-25T10:15:30.123Z",
      payer: null,
      description: null,
      return_url: null,
      metadata: { cart: "c-91", items: 2, gift: false, note: null },
      refunds: [
        { amount: 500, created_at: "2026-11-25T10:16:30.001Z", confirmed_at: "2026-11-25T10:16:31.999Z" },
        { amount: 9007199254740491, reason: null, confirmed_at: null }
      ]
    })
    for (const [read, answer] of [
      ["find", reads.find],
      ["find without scope", reads.findUnscoped],
      ["lock", reads.lock],
      ["findByIdempotencyKey", reads.byKey]
    ] as const) {
      expect(Option.isSome(answer), read).toBe(true)
      if (Option.isSome(answer)) expect(toWire(answer.value), read).toEqual(expected)
    }
    expect(reads.findMany.map(toWire)).toEqual([expected])
    expect(reads.list.map(toWire)).toEqual([expected])
    // Numbers, not bigints nor text, in every place a bigint column lands.
    const found = Option.getOrThrow(reads.find)
    const locked = Option.getOrThrow(reads.lock)
    for (const amount of [found.amount, found.refunded_amount, ...found.refunds.map((refund) => refund.amount)]) {
      expect(Number.isSafeInteger(amount)).toBe(true)
    }
    expect(locked.refunds.map((refund) => refund.amount)).toEqual([500, Number.MAX_SAFE_INTEGER - 500])
    expect(DateTime.isDateTime(found.created_at) && DateTime.isUtc(found.created_at)).toBe(true)
  })

  it("pages the list from a cursor, and reads what the statuses' batch update returns", async () => {
    const older = await storedPayment({ createdAt: "2026-11-25T10:15:30.123Z", amount: 2500 })
    const page = await withRepository((repo, sql) =>
      Effect.gen(function* () {
        // A newer payment of the same application, pending, so that the batch update below changes it.
        const newer = { ...older.payment, id: Ids.PaymentId.make(crypto.randomUUID()) }
        const pending: Payment.Payment = {
          ...newer,
          status: "pending",
          refunded_amount: 0,
          paid_at: null,
          order_reference: uniqueReference("rows"),
          created_at: at("2026-11-25T10:20:00.000Z"),
          refunds: []
        }
        yield* repo.insert(
          pending,
          { applicationId: older.scope.applicationId, idempotencyKey: null },
          at("2026-11-25T10:20:00.000Z")
        )
        const first = yield* repo.list(older.scope, { limit: 1 }).pipe(Effect.orDie)
        const next = yield* repo.list(older.scope, { limit: 1, starting_after: pending.id }).pipe(Effect.orDie)
        const blocking = yield* repo.findBlocking(older.scope, pending.order_reference)
        const changed = yield* sql
          .withTransaction(repo.saveStatuses([{ ...pending, status: "cancelled" }], at("2026-11-25T10:21:00.000Z")))
          .pipe(Effect.orDie)
        return { pending, first, next, blocking, changed }
      })
    )
    expect(page.first.payments.map((entry) => entry.payment.id)).toEqual([page.pending.id])
    expect(page.first.hasMore).toBe(true)
    expect(page.next.payments.map((entry) => toWire(entry.payment))).toEqual([toWire(older.payment)])
    expect(page.next.hasMore).toBe(false)
    expect(Option.getOrNull(page.blocking)).toBe(page.pending.id)
    expect(page.changed).toEqual([page.pending.id])
  })

  /** Runs `corrupt` on the payment's rows with raw SQL, then every read of it, each to its exit. */
  const readsAfter = async (
    corrupt: (sql: SqlClient.SqlClient, id: Ids.PaymentId) => Effect.Effect<unknown, unknown>
  ) => {
    const { payment, scope, idempotencyKey } = await storedPayment({
      createdAt: "2026-11-25T10:15:30.123Z",
      amount: 2500
    })
    return withRepository((repo, sql) =>
      Effect.gen(function* () {
        yield* corrupt(sql, payment.id).pipe(Effect.orDie)
        const id = payment.id
        return [
          yield* repo.find(id, scope).pipe(Effect.exit),
          yield* repo.findMany([id]).pipe(Effect.exit),
          yield* sql.withTransaction(repo.lock(id, scope, "wait")).pipe(Effect.exit),
          yield* repo.list(scope, { limit: 10 }).pipe(Effect.exit),
          yield* repo.findByIdempotencyKey(scope, idempotencyKey, at("2026-11-25T00:00:00.000Z")).pipe(Effect.exit)
        ]
      })
    )
  }

  it("dies on a status no payment has", async () => {
    const exits = await readsAfter((sql, id) =>
      Effect.gen(function* () {
        // The table's CHECK would refuse the word: dropped here, as a hand-made migration might.
        yield* sql`ALTER TABLE payments DROP CONSTRAINT IF EXISTS payments_status_check`
        yield* sql`UPDATE payments SET status = 'settled', paid_at = NULL WHERE id = ${id}`
      })
    )
    expect(exits.map(diedOfRow)).toEqual([true, true, true, true, true])
  })

  it("dies on metadata that is not an object, and on a customer missing a key", async () => {
    const metadata = await readsAfter((sql, id) => sql`UPDATE payments SET metadata = '"cart"'::jsonb WHERE id = ${id}`)
    expect(metadata.map(diedOfRow)).toEqual([true, true, true, true, true])
    const customer = await readsAfter(
      (sql, id) => sql`UPDATE payments SET customer = '{"name": null, "email": 7}'::jsonb WHERE id = ${id}`
    )
    expect(customer.map(diedOfRow)).toEqual([true, true, true, true, true])
  })

  it("dies on a refund whose amount a number cannot hold, inside the payment's row and read on its own", async () => {
    // Read inside `refund_list` by find, findMany, list and findByIdempotencyKey; by a second query after lock.
    const exits = await readsAfter(
      (sql, id) => sql`UPDATE refunds SET amount = 9007199254740993 WHERE payment_id = ${id} AND status = 'pending'`
    )
    expect(exits.map(diedOfRow)).toEqual([true, true, true, true, true])
  })
})
