/**
 * `events` of both faces against the real server (in this process, on PGlite and PostgreSQL): pages walked one after
 * another by `list`, one page by `listPage`, one event by `retrieve`, each as the server answers it; the filters;
 * events typed by name (a `type` filter narrows them, checking `event` narrows the union); errors from the catalogue,
 * malformed requests refused before sending as the server would refuse them.
 */
import {
  type EventOf,
  Kassa,
  KassaClient,
  type KassaEvent,
  type KassaEventOf,
  type KassaPayment,
  NotFoundError,
  ValidationFailedError
} from "@kassa/client"
import { DateTime, Effect, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import { databases, type RunningServer, startServer } from "../../server/test/support/TestServer.ts"

describe.each(databases)("events against the server on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const reference = () => `order-${crypto.randomUUID()}`
  const requestId = expect.stringMatching(/^req_[0-9a-f]{32}$/)

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.fail("expected the call to fail"),
      (error: unknown) => error
    )

  /**
   * A new application with five events: a payment paid then partly refunded, one paid then wholly refunded, one
   * cancelled. Returns the client and the events as the server lists them (newest first).
   */
  const withEvents = async () => {
    const { testKey } = await server.createApplication()
    const kassa = new Kassa({ apiKey: testKey, baseUrl: server.baseUrl })
    const paid = async () => {
      const payment = await kassa.payments.create({ amount: 1000, order_reference: reference() })
      return kassa.test.simulate(payment.id, { outcome: "paid" })
    }
    const partlyRefunded = await paid()
    await kassa.payments.refund(partlyRefunded.id, { amount: 300 })
    const refunded = await paid()
    await kassa.payments.refund(refunded.id)
    const cancelled = await kassa.payments.create({ amount: 1000, order_reference: reference() })
    await kassa.payments.cancel(cancelled.id)
    const raw = await server.request("/api/v1/events?limit=100", { key: testKey })
    expect(raw.status, raw.text).toBe(200)
    const events = (raw.body as { data: ReadonlyArray<KassaEvent> }).data
    expect(events).toHaveLength(5)
    return { kassa, testKey, events, payments: { partlyRefunded, refunded, cancelled } }
  }

  describe("the Promise face", () => {
    it("list walks every page newest first; listPage is one page; retrieve is the event as the server answers", async () => {
      const { kassa, testKey, events } = await withEvents()
      const all: Array<KassaEvent> = []
      for await (const event of kassa.events.list({ limit: 2 })) all.push(event)
      expect(all).toEqual(events)

      const first = await kassa.events.listPage({ limit: 2 })
      expect(first).toEqual({ data: events.slice(0, 2), has_more: true })
      const last = await kassa.events.listPage({ limit: 3, starting_after: first.data[1]?.id })
      expect(last).toEqual({ data: events.slice(2), has_more: false })

      for (const event of events) {
        const raw = await server.request(`/api/v1/events/${event.id}`, { key: testKey })
        expect(await kassa.events.retrieve(event.id)).toEqual(JSON.parse(raw.text))
      }
    })

    it("a for await can stop early, mid-list", async () => {
      const { kassa, events } = await withEvents()
      const seen: Array<string> = []
      for await (const event of kassa.events.list({ limit: 1 })) {
        seen.push(event.id)
        if (seen.length === 2) break
      }
      expect(seen).toEqual(events.slice(0, 2).map(({ id }) => id))
    })

    it("filters by type (narrowing the events' type), payment and creation time", async () => {
      const { kassa, events, payments } = await withEvents()
      const paid: Array<KassaEventOf<"payment.paid">> = []
      for await (const event of kassa.events.list({ type: "payment.paid", limit: 1 })) {
        expectTypeOf(event).toEqualTypeOf<KassaEventOf<"payment.paid">>()
        paid.push(event)
      }
      expect(paid).toEqual(events.filter(({ event }) => event === "payment.paid"))
      expect(paid.map(({ data }) => data.id).sort()).toEqual([payments.refunded.id, payments.partlyRefunded.id].sort())
      const page = await kassa.events.listPage({ type: "payment.cancelled" })
      expectTypeOf(page.data[0]?.event).toEqualTypeOf<"payment.cancelled" | undefined>()
      expect(page.data.map(({ data }) => data.id)).toEqual([payments.cancelled.id])

      const ofPayment = await kassa.events.listPage({ payment_id: payments.partlyRefunded.id })
      expect(ofPayment.data).toEqual(events.filter(({ data }) => data.id === payments.partlyRefunded.id))
      expect(ofPayment.data.map(({ event }) => event).sort()).toEqual(["payment.paid", "payment.partially_refunded"])

      // The list's own times bound it: a Date and an RFC 3339 string with an offset name instants alike.
      const newest = events[0] as KassaEvent
      const oldest = events.at(-1) as KassaEvent
      const after = await kassa.events.listPage({ created_gte: new Date(Date.parse(newest.created_at) + 1) })
      expect(after.data).toEqual([])
      const plusTwo = new Date(Date.parse(oldest.created_at) + 7_200_000).toISOString().replace("Z", "+02:00")
      const before = await kassa.events.listPage({ created_lt: plusTwo })
      expect(before.data).toEqual([])
      const between = await kassa.events.listPage({
        limit: 100,
        created_gte: oldest.created_at,
        created_lt: new Date(Date.parse(newest.created_at) + 1)
      })
      expect(between.data).toEqual(events)
    })

    it("retrieve gives the union of every name, narrowed by checking `event`", async () => {
      const { kassa, events } = await withEvents()
      const refundedEvent = events.find(({ event }) => event === "payment.refunded") as KassaEvent
      const event = await kassa.events.retrieve(refundedEvent.id)
      expectTypeOf(event).toEqualTypeOf<KassaEvent>()
      if (event.event !== "payment.refunded") return expect.fail(`expected payment.refunded, got ${event.event}`)
      expectTypeOf(event).toEqualTypeOf<KassaEventOf<"payment.refunded">>()
      const data: KassaPayment = event.data
      expect(data).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    })

    it("not_found: an unknown event, another application's, a malformed id (refused before sending)", async () => {
      const { kassa, events } = await withEvents()
      const other = new Kassa({ apiKey: (await server.createApplication()).testKey, baseUrl: server.baseUrl })
      for (const id of [`evt_${crypto.randomUUID()}`, events[0]?.id ?? ""]) {
        const error = await failure(other.events.retrieve(id))
        expect(error).toBeInstanceOf(NotFoundError)
        expect(error).toMatchObject({ code: "not_found", status: 404, message: "No event with this id.", requestId })
      }
      const malformed = await failure(kassa.events.retrieve("evt_nope"))
      expect(malformed).toBeInstanceOf(NotFoundError)
      expect(malformed).toMatchObject({ status: 404, message: "No event with this id.", requestId: undefined })
    })

    it("validation_failed: malformed parameters before sending, with the server's fields; an unknown cursor from the server", async () => {
      const { kassa, testKey } = await withEvents()
      const bad = { limit: 500, type: "payment.exploded", payment_id: "p", created_gte: "yesterday" }
      const local = await failure(
        // @ts-expect-error `type` is one of the event names
        kassa.events.listPage(bad)
      )
      expect(local).toBeInstanceOf(ValidationFailedError)
      expect(local).toMatchObject({ status: 422, requestId: undefined })
      const fields = (local as ValidationFailedError).fields
      expect(Object.keys(fields ?? {}).sort()).toEqual(["created_gte", "limit", "payment_id", "type"])
      const answer = await server.request(`/api/v1/events?${new URLSearchParams({ ...bad, limit: "500" })}`, {
        key: testKey
      })
      expect(answer.status).toBe(422)
      expect((answer.body as { error: { fields: unknown } }).error.fields).toEqual(fields)

      const invalidDate = await failure(kassa.events.listPage({ created_lt: new Date(Number.NaN) }))
      expect(invalidDate).toBeInstanceOf(ValidationFailedError)
      expect(Object.keys((invalidDate as ValidationFailedError).fields ?? {})).toEqual(["created_lt"])

      const unknownCursor = await failure(kassa.events.listPage({ starting_after: `evt_${crypto.randomUUID()}` }))
      expect(unknownCursor).toBeInstanceOf(ValidationFailedError)
      expect(unknownCursor).toMatchObject({ status: 422, requestId })
      expect(Object.keys((unknownCursor as ValidationFailedError).fields ?? {})).toEqual(["starting_after"])
    })
  })

  describe("the Effect face", () => {
    it("list is a stream over every page of decoded events; type narrows; retrieve fails with typed errors", async () => {
      const { testKey, events, payments } = await withEvents()
      const program = Effect.gen(function* () {
        const kassa = yield* KassaClient
        const all = yield* Stream.runCollect(kassa.events.list({ limit: 2 }))
        expect(all.map(({ id }) => id)).toEqual(events.map(({ id }) => id))
        expect(all.every(({ created_at }) => DateTime.isDateTime(created_at))).toBe(true)
        expect(all.map(({ created_at }) => DateTime.formatIso(created_at))).toEqual(
          events.map(({ created_at }) => created_at)
        )

        const firstTwo = yield* kassa.events.list({ limit: 1 }).pipe(Stream.take(2), Stream.runCollect)
        expect(firstTwo.map(({ id }) => id)).toEqual(events.slice(0, 2).map(({ id }) => id))

        const refunds = yield* Stream.runCollect(kassa.events.list({ type: "payment.partially_refunded" }))
        expectTypeOf(refunds).toEqualTypeOf<Array<EventOf<"payment.partially_refunded">>>()
        expect(refunds.map(({ data }) => [data.id, data.refunded_amount])).toEqual([[payments.partlyRefunded.id, 300]])

        const page = yield* kassa.events.listPage({ limit: 1, created_lt: DateTime.makeUnsafe(Date.now()) })
        expect(page.has_more).toBe(true)
        expect(page.data.map(({ id }) => id)).toEqual([events[0]?.id])

        const event = yield* kassa.events.retrieve(events[0]?.id ?? "")
        expectTypeOf(event).toEqualTypeOf<EventOf>()
        if (event.event === "payment.cancelled") {
          expectTypeOf(event).toEqualTypeOf<EventOf<"payment.cancelled">>()
          expect(event.data.status).toBe("cancelled")
        } else expect.fail(`expected payment.cancelled, got ${event.event}`)

        return yield* kassa.events
          .retrieve(`evt_${crypto.randomUUID()}`)
          .pipe(Effect.catchTag("NotFoundError", (error) => Effect.succeed(error.status)))
      })
      const status = await Effect.runPromise(
        program.pipe(Effect.provide(KassaClient.layer({ apiKey: testKey, baseUrl: server.baseUrl })))
      )
      expect(status).toBe(404)
    })
  })
})
