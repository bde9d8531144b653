/**
 * The merchant events API (decisions §12): `GET /api/v1/events` and `GET /api/v1/events/{id}` answer the key's
 * application and mode only, newest first, paged with `starting_after` and filtered by `type`, `payment_id` and
 * `created_gte` / `created_lt`, each malformed value a 422 naming it; an event read back is byte for byte the body a
 * webhook receiver got; and events stay readable for 30 days under a shorter `KASSA_RETENTION_DELIVERIES`.
 */
import { DateTime, Duration, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as RetentionModule from "../src/retention/Retention.ts"
import { Retention } from "../src/retention/Retention.ts"
import {
  cancel,
  errorCode,
  paidPayment,
  pendingPayment,
  query,
  refund,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

interface WireEvent {
  readonly id: string
  readonly event: string
  readonly created_at: string
  readonly data: WirePayment
}

interface WireEventList {
  readonly data: ReadonlyArray<WireEvent>
  readonly has_more: boolean
}

const listEvents = (server: RunningServer, key: string, params: Record<string, string> = {}) =>
  server.request(`/api/v1/events?${new URLSearchParams(params).toString()}`, { key })

const fetchEvent = (server: RunningServer, key: string, id: string) => server.request(`/api/v1/events/${id}`, { key })

/** The list's page, failing the test on any other answer. */
const page = async (server: RunningServer, key: string, params: Record<string, string> = {}) => {
  const response = await listEvents(server, key, params)
  expect(response.status, response.text).toBe(200)
  return response.body as WireEventList
}

/** Newest first: by `created_at`, then by `id`, both descending. */
const newestFirst = (a: WireEvent, b: WireEvent) =>
  a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1

/** Writes an event row of `paymentId` directly, stamped `createdAt`, with a body of the documented shape. */
const insertEvent = async (
  server: RunningServer,
  options: {
    readonly applicationId: string
    readonly payment: WirePayment
    readonly mode?: "test" | "live"
    readonly event?: string
    readonly createdAt: Date
  }
) => {
  const id = `evt_${crypto.randomUUID()}`
  const event = options.event ?? "payment.paid"
  const body = JSON.stringify({ id, event, created_at: options.createdAt.toISOString(), data: options.payment })
  await query(
    server,
    (sql) => sql`
      INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
      VALUES (${id}, ${options.applicationId}, ${options.payment.id}, ${options.mode ?? options.payment.mode},
        ${event}, ${body}, ${options.createdAt})
    `
  )
  return { id, body, createdAt: options.createdAt }
}

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000)

describe.each(databases)("events API on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let paths = 0
  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    server = await startServer(database)
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  /** An application whose webhooks go to a path of its own on the receiver. */
  const application = async (): Promise<TestApplication & { readonly path: string }> => {
    const path = `/events-${paths++}`
    return { ...(await server.createApplication({ webhook_url: receiver.url(path) })), path }
  }

  it("answers each event byte for byte as its webhook carried it, by id and in the list", async () => {
    const shop = await application()
    const payment = await paidPayment(server, shop.testKey)
    const refunded = await refund(server, shop.testKey, payment.id, { amount: 300 })
    expect(refunded.status, refunded.text).toBe(201)
    const received = await receiver.waitFor(2, shop.path)
    const bodies = received.map((request) => request.body)
    for (const body of bodies) {
      const { id } = JSON.parse(body) as WireEvent
      const fetched = await fetchEvent(server, shop.testKey, id)
      expect(fetched.status).toBe(200)
      expect(fetched.headers.get("content-type")).toMatch(/^application\/json/)
      expect(fetched.text).toBe(body)
    }
    // `data` is the payment at the moment of the change: the paid event still shows nothing refunded.
    const [paidEvent, refundEvent] = bodies.map((body) => JSON.parse(body) as WireEvent)
    expect([paidEvent?.event, paidEvent?.data.refunded_amount]).toEqual(["payment.paid", 0])
    expect([refundEvent?.event, refundEvent?.data.refunded_amount]).toEqual(["payment.partially_refunded", 300])
    const listed = await listEvents(server, shop.testKey, { payment_id: payment.id })
    const ordered = [...bodies].sort((a, b) => newestFirst(JSON.parse(a), JSON.parse(b)))
    expect(listed.text).toBe(`{"data":[${ordered.join(",")}],"has_more":false}`)
  })

  it("lists newest first, 10 by default, and pages with starting_after without skipping or repeating", async () => {
    const shop = await server.createApplication()
    const payments = await Promise.all([1, 2, 3, 4].map(() => pendingPayment(server, shop.testKey)))
    for (const payment of payments.slice(0, 2))
      expect((await cancel(server, shop.testKey, payment.id)).status).toBe(200)
    // Events written by one change share their time: these three tie, and their ids order them.
    const tied = daysAgo(1)
    for (const payment of payments.slice(1)) {
      await insertEvent(server, { applicationId: shop.application.id, payment, createdAt: tied })
    }
    for (let day = 2; day <= 10; day++) {
      await insertEvent(server, {
        applicationId: shop.application.id,
        payment: payments[0] as WirePayment,
        createdAt: daysAgo(day)
      })
    }
    const all = await page(server, shop.testKey, { limit: "100" })
    expect(all.data).toHaveLength(14)
    expect(all.has_more).toBe(false)
    expect([...all.data].sort(newestFirst).map(({ id }) => id)).toEqual(all.data.map(({ id }) => id))
    const first = await page(server, shop.testKey)
    expect(first.data.map(({ id }) => id)).toEqual(all.data.slice(0, 10).map(({ id }) => id))
    expect(first.has_more).toBe(true)

    const seen: Array<string> = []
    let cursor: string | undefined
    for (const expectMore of [true, true, true, true, true, true, false]) {
      const next = await page(server, shop.testKey, {
        limit: "2",
        ...(cursor === undefined ? {} : { starting_after: cursor })
      })
      expect(next.has_more).toBe(expectMore)
      seen.push(...next.data.map(({ id }) => id))
      cursor = next.data.at(-1)?.id
    }
    expect(seen).toEqual(all.data.map(({ id }) => id))
  })

  it("filters by type, payment_id and created_gte / created_lt, together", async () => {
    const shop = await server.createApplication()
    const [kept, other] = [await paidPayment(server, shop.testKey), await pendingPayment(server, shop.testKey)]
    expect((await cancel(server, shop.testKey, other.id)).status).toBe(200)
    const ids = (list: WireEventList) => list.data.map(({ id }) => id)
    const paid = await page(server, shop.testKey, { type: "payment.paid" })
    expect(paid.data.map(({ event, data }) => [event, data.id])).toEqual([["payment.paid", kept.id]])
    const cancelled = await page(server, shop.testKey, { type: "payment.cancelled" })
    expect(cancelled.data.map(({ data }) => data.id)).toEqual([other.id])
    expect((await page(server, shop.testKey, { type: "payment.refunded" })).data).toEqual([])
    expect(ids(await page(server, shop.testKey, { payment_id: other.id }))).toEqual(ids(cancelled))

    const old = await insertEvent(server, { applicationId: shop.application.id, payment: kept, createdAt: daysAgo(3) })
    const older = await insertEvent(server, {
      applicationId: shop.application.id,
      payment: kept,
      event: "payment.refunded",
      createdAt: daysAgo(5)
    })
    const at = (date: Date) => date.toISOString()
    expect(ids(await page(server, shop.testKey, { created_lt: at(daysAgo(2)) }))).toEqual([old.id, older.id])
    expect(ids(await page(server, shop.testKey, { created_gte: at(daysAgo(4)), created_lt: at(daysAgo(2)) }))).toEqual([
      old.id
    ])
    // created_gte includes its instant, created_lt excludes it; an offset reads as the instant it names.
    const oldTime = at(old.createdAt)
    expect(ids(await page(server, shop.testKey, { created_gte: oldTime, created_lt: at(daysAgo(2)) }))).toEqual([
      old.id
    ])
    expect(ids(await page(server, shop.testKey, { created_lt: oldTime }))).toEqual([older.id])
    const plusTwo = new Date(Date.parse(oldTime) + 7_200_000).toISOString().replace("Z", "+02:00")
    expect(ids(await page(server, shop.testKey, { created_lt: plusTwo }))).toEqual([older.id])
    const recent = await page(server, shop.testKey, { created_gte: at(daysAgo(1)) })
    expect(ids(recent).sort()).toEqual([...ids(paid), ...ids(cancelled)].sort())
    expect(
      ids(
        await page(server, shop.testKey, {
          type: "payment.refunded",
          payment_id: kept.id,
          created_gte: at(daysAgo(6)),
          created_lt: at(daysAgo(4))
        })
      )
    ).toEqual([older.id])
  })

  it("answers every malformed query parameter with 422 validation_failed naming it", async () => {
    const shop = await server.createApplication()
    const other = await server.createApplication()
    const elsewhere = await paidPayment(server, other.testKey)
    const [foreign] = await query(server, (sql) => sql`SELECT id FROM events WHERE payment_id = ${elsewhere.id}`)
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["limit", "0"],
      ["limit", "101"],
      ["limit", "2.5"],
      ["limit", "ten"],
      ["starting_after", "evt_123"],
      ["starting_after", "0b7e4a4e-6c1f-4a57-9d59-1f2c3a4b5c6d"],
      // Well formed, but no event this key can see: unknown, and another application's.
      ["starting_after", `evt_${crypto.randomUUID()}`],
      ["starting_after", String(foreign?.id)],
      ["type", "payment.pending"],
      ["type", "charge.succeeded"],
      ["payment_id", "pay_123"],
      ["payment_id", "0B7E4A4E-6C1F-4A57-9D59-1F2C3A4B5C6D"],
      ["created_gte", "2026-11-27"],
      ["created_gte", "yesterday"],
      ["created_gte", "2026-02-30T00:00:00Z"],
      ["created_gte", "1764240000"],
      ["created_lt", "2026-11-27 10:15:30Z"],
      ["created_lt", "2026-11-27T24:00:00Z"],
      ["created_lt", "2026-11-27T10:15:30"]
    ]
    for (const [name, value] of cases) {
      const response = await listEvents(server, shop.testKey, { [name]: value })
      expect([name, value, response.status, errorCode(response)]).toEqual([name, value, 422, "validation_failed"])
      expect(Object.keys((response.body as WireError).error.fields ?? {}), `${name}=${value}`).toEqual([name])
    }
    // Every malformed parameter at once, each named.
    const all = await listEvents(server, shop.testKey, {
      limit: "0",
      type: "nope",
      payment_id: "nope",
      created_gte: "nope",
      created_lt: "nope",
      starting_after: "nope"
    })
    expect(all.status).toBe(422)
    expect(Object.keys((all.body as WireError).error.fields ?? {}).sort()).toEqual([
      "created_gte",
      "created_lt",
      "limit",
      "payment_id",
      "starting_after",
      "type"
    ])
    // Well-formed values are accepted, in every RFC 3339 form.
    for (const created_gte of ["2026-11-27T10:15:30Z", "2026-11-27t10:15:30.123456z", "2026-11-27T10:15:30-05:30"]) {
      expect((await listEvents(server, shop.testKey, { created_gte })).status, created_gte).toBe(200)
    }
  })

  it("shows a key its own application's events in its own mode only, and 404 for any other", async () => {
    const shop = await server.createApplication()
    const neighbour = await server.createApplication()
    const mine = await paidPayment(server, shop.testKey)
    const theirs = await paidPayment(server, neighbour.testKey)
    const eventOf = async (paymentId: string) => {
      const [row] = await query(server, (sql) => sql`SELECT id FROM events WHERE payment_id = ${paymentId}`)
      return String(row?.id)
    }
    const [myEvent, theirEvent] = [await eventOf(mine.id), await eventOf(theirs.id)]
    // A live-mode event of the same application (written directly: a live payment needs a provider).
    const live = await insertEvent(server, {
      applicationId: shop.application.id,
      payment: mine,
      mode: "live",
      createdAt: new Date()
    })

    expect((await page(server, shop.testKey)).data.map(({ id }) => id)).toEqual([myEvent])
    expect((await page(server, shop.liveKey)).data.map(({ id }) => id)).toEqual([live.id])
    expect((await page(server, neighbour.testKey)).data.map(({ id }) => id)).toEqual([theirEvent])
    expect((await page(server, shop.testKey, { payment_id: theirs.id })).data).toEqual([])

    expect((await fetchEvent(server, shop.testKey, myEvent)).status).toBe(200)
    expect((await fetchEvent(server, shop.liveKey, live.id)).text).toBe(live.body)
    for (const [key, id] of [
      [shop.testKey, theirEvent],
      [shop.liveKey, myEvent],
      [shop.testKey, live.id],
      [neighbour.testKey, myEvent],
      [shop.testKey, `evt_${crypto.randomUUID()}`],
      [shop.testKey, "evt_not-an-id"],
      [shop.testKey, mine.id]
    ] as const) {
      const response = await fetchEvent(server, key, id)
      expect([id, response.status, errorCode(response)]).toEqual([id, 404, "not_found"])
      expect((response.body as WireError).error.message).toBe("No event with this id.")
    }
    expect((await listEvents(server, shop.liveKey, { starting_after: myEvent })).status).toBe(422)
    expect((await listEvents(server, "pk_test_unknown", {})).status).toBe(401)
  })
})

describe.each(databases)("events kept for 30 days on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    // Deliveries kept one day only: events must still be kept 30.
    server = await startServer(database, { retentionDeliveries: Option.some(Duration.days(1)) })
  })
  afterAll(() => server.close())

  it("lengthens a retention shorter than 30 days for events, and never shortens a longer one", () => {
    const days = (window: Option.Option<Duration.Duration>) =>
      Option.map(window, (duration) => Duration.toMillis(duration) / 86_400_000)
    expect(days(RetentionModule.eventsWindow(Option.some(Duration.days(1))))).toEqual(Option.some(30))
    expect(days(RetentionModule.eventsWindow(Option.some(Duration.days(90))))).toEqual(Option.some(90))
    expect(RetentionModule.eventsWindow(Option.none())).toEqual(Option.none())
  })

  it("keeps events readable for 30 days under KASSA_RETENTION_DELIVERIES of 1 day", async () => {
    const shop = await server.createApplication()
    const payment = await paidPayment(server, shop.testKey)
    const recent = await insertEvent(server, { applicationId: shop.application.id, payment, createdAt: daysAgo(29) })
    const stale = await insertEvent(server, { applicationId: shop.application.id, payment, createdAt: daysAgo(31) })
    const result = await server.run(
      Effect.flatMap(DateTime.now, (now) => Retention.use((retention) => retention.prune(now)))
    )
    expect(result.events).toBeGreaterThanOrEqual(1)
    const kept = await fetchEvent(server, shop.testKey, recent.id)
    expect([kept.status, kept.text]).toEqual([200, recent.body])
    expect((await fetchEvent(server, shop.testKey, stale.id)).status).toBe(404)
    expect((await page(server, shop.testKey, { payment_id: payment.id })).data.map(({ id }) => id)).toContain(recent.id)
  })
})
