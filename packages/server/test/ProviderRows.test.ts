/**
 * Live mode's rows are decoded, not cast (issue #13 §4), on both databases: a `provider_payments` row and a
 * `provider_refunds` row written by their modules read back through them exactly (ids branded, timestamps as
 * `DateTime`, amounts and counts as numbers, the stored answer as JSON), and a row in a state Kassa never writes
 * makes the read die instead of answering a wrong object — the casts it replaces read a visit without an address as
 * one from "", a negative attempt count as any other, an empty session id as a session.
 */
import { Ids, ProviderSettlement } from "@kassa/core"
import { Cause, DateTime, Effect, Exit, Option } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ProviderQueries from "../src/dashboard/ProviderQueries.ts"
import { type LiveCheckout, LiveCheckouts } from "../src/live/LiveCheckouts.ts"
import { LiveRefunds } from "../src/live/LiveRefunds.ts"
import { makeRows } from "../src/live/ProviderRefundRows.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, type JsonObject, startFakeStripe } from "./support/FakeStripe.ts"
import { type LinkedForRefunds, linkedApplication, paidLivePayment } from "./support/LivePaymentFixture.ts"
import { query } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const iso = (time: DateTime.Utc | null) => (time === null ? null : DateTime.formatIso(time))
const at = (text: string) => DateTime.makeUnsafe(text)
/** Comparable as a whole: the checkout with its times as ISO text. */
const plain = (checkout: LiveCheckout) => ({
  ...checkout,
  visitedAt: iso(checkout.visitedAt),
  nextReadAt: iso(checkout.nextReadAt),
  createdAt: iso(checkout.createdAt)
})

/** Died (a defect), with the row's decoding as its cause, not failed or answered. */
const expectDecodingDefect = (exit: Exit.Exit<unknown, unknown>) => {
  expect(Exit.isFailure(exit)).toBe(true)
  if (Exit.isFailure(exit)) {
    expect(Cause.hasDies(exit.cause)).toBe(true)
    expect(exit.cause.toString()).toContain("SchemaError")
  }
}

describe.each(databases)("live rows on %s", (database) => {
  let fake: FakeStripe
  let server: RunningServer
  let linked: LinkedForRefunds
  beforeAll(async () => {
    fake = await startFakeStripe({ apiVersion })
    server = await startServer(database, { stripeApiUrl: fake.url })
    // Stripe's events are kept, so that only what a test does writes the rows it reads.
    fake.hold()
    linked = await linkedApplication(server, fake)
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  const sessionOf = async (paymentId: string) =>
    String(
      (await query(server, (sql) => sql`SELECT checkout_id FROM provider_payments WHERE payment_id = ${paymentId}`))[0]
        ?.checkout_id
    )

  it("a provider_payments row reads back exactly what LiveCheckouts wrote", async () => {
    const { id, paymentIntentId } = await paidLivePayment(server, fake, linked)
    const paymentId = Ids.PaymentId.make(id)
    const sessionId = await sessionOf(id)
    // Microseconds in the database, milliseconds read (as every timestamp Kassa reads).
    await query(
      server,
      (sql) => sql`
        UPDATE provider_payments SET created_at = '2026-11-25T10:15:30.123456Z', checkout_url = 'https://pay.example/s',
          checkout_expires_at = '2026-11-26T10:15:30Z'
        WHERE payment_id = ${id}
      `
    )
    const answer = { _tag: "Checkout", state: { _tag: "Paid" }, amounts: [1, 2.5, null], providerStatus: "complete" }
    const read = await server.run(
      Effect.gen(function* () {
        const checkouts = yield* LiveCheckouts
        yield* checkouts.recordVisit(
          paymentId,
          { ip: "203.0.113.7", user_agent: "Browser/1 ✓" },
          at("2026-11-25T10:16:00.250Z")
        )
        yield* checkouts.setClosing(paymentId, "cancel", at("2026-11-25T10:17:00Z"))
        // The next read far ahead: the background round leaves the row alone meanwhile.
        yield* checkouts.recordRead(paymentId, answer, null, at("2099-01-01T00:00:00.007Z"), at("2026-11-25T10:18:00Z"))
        return {
          byId: yield* checkouts.find(paymentId),
          bySession: yield* checkouts.findByCheckout(sessionId),
          view: yield* ProviderQueries.providerPayment(yield* SqlClient.SqlClient, id)
        }
      })
    )
    const expected = {
      paymentId: id,
      linkId: linked.linkId,
      state: "open",
      idempotencyKey: `kassa-${id}`,
      checkoutId: sessionId,
      checkoutUrl: "https://pay.example/s",
      visit: { ip: "203.0.113.7", user_agent: "Browser/1 ✓" },
      visitedAt: "2026-11-25T10:16:00.250Z",
      nextReadAt: "2099-01-01T00:00:00.007Z",
      closing: "cancel",
      createdAt: "2026-11-25T10:15:30.123Z"
    }
    expect(plain(Option.getOrThrow(read.byId))).toEqual(expected)
    expect(plain(Option.getOrThrow(read.bySession))).toEqual(expected)
    expect(read.view).toEqual({
      provider: "Stripe",
      state: "open",
      checkoutId: sessionId,
      providerPaymentId: paymentIntentId,
      providerStatus: "complete",
      expiresAt: new Date("2026-11-26T10:15:30Z"),
      lastReadAt: new Date("2026-11-25T10:18:00Z"),
      lastAnswer: JSON.stringify(answer),
      nextReadAt: new Date("2099-01-01T00:00:00.007Z")
    })
  })

  it("a provider_refunds row reads back exactly what LiveRefunds wrote", async () => {
    const { id } = await paidLivePayment(server, fake, linked)
    fake.nextRefundStatus("pending")
    const result = await server
      .run(
        Effect.flatMap(LiveRefunds, (refunds) =>
          refunds.request({
            paymentId: Ids.PaymentId.make(id),
            amount: 400,
            reason: "Returned item",
            requestedBy: null
          })
        )
      )
      .finally(() => fake.nextRefundStatus("succeeded"))
    const atStripe = fake.events
      .map((event) => (event.data as JsonObject).object as JsonObject)
      .find(
        (object) => object.object === "refund" && (object.metadata as JsonObject).kassa_refund_id === result.refundId
      )
    const read = () =>
      server.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => makeRows(sql).byRefundId(result.refundId)).pipe(
          Effect.map(Option.getOrThrow)
        )
      )

    const row = await read()
    expect(row).toMatchObject({
      refund_id: result.refundId,
      payment_id: id,
      link_id: linked.linkId,
      provider_refund_id: String(atStripe?.id),
      attempts: 1,
      last_answer: {
        _tag: "Refund",
        refund: { refund_id: result.refundId, provider_refund_id: String(atStripe?.id), amount: 400, status: "pending" }
      }
    })
    // Still pending: its next read is the schedule's, from the decoded request and read times.
    expect(iso(row.next_read_at)).toBe(
      DateTime.formatIso(
        ProviderSettlement.Schedule.nextRefundRead({ requestedAt: row.created_at, lastReadAt: row.last_read_at })
      )
    )
    expect(iso(row.updated_at)).toBe(iso(row.last_read_at))

    // Known times, to the microsecond in the database: the module and the operator's overdue list read them exactly.
    await query(
      server,
      (sql) => sql`
        UPDATE provider_refunds
        SET created_at = '2026-11-25T09:00:00.123456Z', last_read_at = '2026-11-25T09:05:00.5Z',
            updated_at = '2026-11-25T09:05:00.5Z', next_read_at = '2099-01-01T00:00:00Z'
        WHERE refund_id = ${result.refundId}
      `
    )
    const known = await read()
    expect([known.created_at, known.last_read_at, known.updated_at, known.next_read_at].map(iso)).toEqual([
      "2026-11-25T09:00:00.123Z",
      "2026-11-25T09:05:00.500Z",
      "2026-11-25T09:05:00.500Z",
      "2099-01-01T00:00:00.000Z"
    ])
    const overdue = await server.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        ProviderQueries.overdueReads(sql, { now: at("2026-11-25T10:00:00Z"), limit: 1_000, before: undefined })
      )
    )
    expect(overdue.rows.filter((item) => item.refundId === result.refundId)).toEqual([
      {
        kind: "refund",
        applicationId: linked.application.id,
        paymentId: id,
        refundId: result.refundId,
        waitingSince: new Date("2026-11-25T09:05:00.5Z"),
        lastReadAt: new Date("2026-11-25T09:05:00.5Z"),
        nextReadAt: new Date("2099-01-01T00:00:00Z")
      }
    ])
  })

  it("a provider_payments row in a state Kassa never writes dies on read instead of answering a wrong checkout", async () => {
    const { id } = await paidLivePayment(server, fake, linked)
    const paymentId = Ids.PaymentId.make(id)
    const sessionId = await sessionOf(id)
    const find = () =>
      server.run(Effect.flatMap(LiveCheckouts, (checkouts) => checkouts.find(paymentId)).pipe(Effect.exit))
    await server.run(
      Effect.flatMap(LiveCheckouts, (checkouts) =>
        checkouts.recordVisit(paymentId, { ip: "203.0.113.7", user_agent: "Browser/1" }, at("2026-11-25T10:16:00Z"))
      )
    )
    expect(Exit.isSuccess(await find())).toBe(true)
    // A visit is its address and its time together: a time without an address is a broken row, not a visit from "".
    await query(server, (sql) => sql`UPDATE provider_payments SET visit_ip = NULL WHERE payment_id = ${id}`)
    expectDecodingDefect(await find())
    expectDecodingDefect(
      await server.run(
        Effect.flatMap(LiveCheckouts, (checkouts) => checkouts.findByCheckout(sessionId)).pipe(Effect.exit)
      )
    )
    // A session without an id (the table only requires one to be there): the operator's page dies too.
    await query(
      server,
      (sql) => sql`UPDATE provider_payments SET visit_ip = '203.0.113.7', checkout_id = '' WHERE payment_id = ${id}`
    )
    expectDecodingDefect(await find())
    expectDecodingDefect(
      await server.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => ProviderQueries.providerPayment(sql, id)).pipe(Effect.exit)
      )
    )
  })

  it("a provider_refunds row in a state Kassa never writes dies on read, before Stripe is asked anything", async () => {
    const { id } = await paidLivePayment(server, fake, linked)
    fake.nextRefundStatus("pending")
    const result = await server
      .run(
        Effect.flatMap(LiveRefunds, (refunds) =>
          refunds.request({ paymentId: Ids.PaymentId.make(id), amount: 300, reason: null, requestedBy: null })
        )
      )
      .finally(() => fake.nextRefundStatus("succeeded"))
    await query(server, (sql) => sql`UPDATE provider_refunds SET attempts = -1 WHERE refund_id = ${result.refundId}`)
    const calls = fake.requests.length
    expectDecodingDefect(
      await server.run(Effect.flatMap(LiveRefunds, (refunds) => refunds.refresh(result.refundId)).pipe(Effect.exit))
    )
    expectDecodingDefect(
      await server.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => makeRows(sql).byRefundId(result.refundId)).pipe(Effect.exit)
      )
    )
    expect(fake.requests.length).toBe(calls)
  })
})
