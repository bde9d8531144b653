/**
 * Webhooks as a merchant receives them, over HTTP from the running server: each status change of the Events table
 * arrives once, from its trigger, signed so that @kassa/webhook-verify accepts it with the application's secret, with
 * the specification's headers, and `data` equal to what fetch returns right after the change. Creating a payment
 * sends nothing. Every attempt is recorded. A commit wakes the dispatcher at once (shown with the poll stretched to an
 * hour), and a receiver that hangs holds only its own slots.
 */
import { verify } from "@kassa/webhook-verify"
import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { perUrlLimit } from "../src/webhooks/Dispatcher.ts"
import {
  cancel,
  createPayment,
  fetchPayment,
  paidPayment,
  pendingPayment,
  query,
  refund,
  simulate,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"
import { type ReceivedRequest, startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

let paths = 0

describe.each(databases)("webhooks on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
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
  const application = async () => {
    const path = `/shop-${paths++}`
    const created = await server.createApplication({ webhook_url: receiver.url(path) })
    return { ...created, path }
  }

  /** Checks one webhook: headers, signature (with the application's secret), body shape and `data`. */
  const expectWebhook = async (
    request: ReceivedRequest,
    secret: string,
    name: string,
    fetched: unknown
  ): Promise<Record<string, unknown>> => {
    expect(request.method).toBe("POST")
    expect(request.headers["content-type"]).toBe("application/json")
    expect(request.headers["user-agent"]).toBe("Kassa-Webhooks/1.0")
    expect(request.headers["x-service-event"]).toBe(name)
    const signature = String(request.headers["x-service-signature"])
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
    const t = Number(/^t=(\d+)/.exec(signature)?.[1])
    expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(30)
    const event = await verify(request.body, signature, secret)
    expect(event.event).toBe(name)
    const body = JSON.parse(request.body) as Record<string, unknown>
    expect(Object.keys(body)).toEqual(["id", "event", "created_at", "data"])
    expect(body.id).toMatch(/^evt_[0-9a-f-]{36}$/)
    expect(body.data).toEqual(fetched)
    // A wrong secret is refused: the signature is over these exact bytes with this secret.
    await expect(verify(request.body, signature, `whsec_${"x".repeat(32)}`)).rejects.toThrow()
    return body
  }

  /** The delivery of an event: succeeded after one scheduled attempt that got 200 from `url`. */
  const expectDelivered = async (eventId: string, url: string) => {
    for (let waited = 0; waited < 5_000; waited += 20) {
      const [row] = await query(
        server,
        (sql) => sql`
          SELECT d.status, d.attempt_count, d.next_attempt_at, d.lease_until,
            (SELECT json_agg(a ORDER BY a.number) FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
          FROM deliveries d WHERE d.event_id = ${eventId}
        `
      )
      if (row?.status === "succeeded") {
        expect(row).toMatchObject({ attempt_count: 1, next_attempt_at: null, lease_until: null })
        const attempts = row.attempts as ReadonlyArray<Record<string, unknown>>
        expect(attempts).toHaveLength(1)
        expect(attempts[0]).toMatchObject({
          number: 1,
          kind: "scheduled",
          url,
          response_status: 200,
          error: null,
          response_body: "ok"
        })
        return
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error(`delivery of ${eventId} did not succeed`)
  }

  it("creating a payment sends nothing; paying it sends payment.paid, signed, with data as fetched", async () => {
    const { testKey, webhookSecret, path } = await application()
    const payment = await pendingPayment(server, testKey)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(receiver.received(path)).toHaveLength(0)

    const paid = await simulate(server, testKey, payment.id, "paid")
    const fetched = (await fetchPayment(server, testKey, payment.id)).body
    expect(paid.body).toEqual(fetched)
    const [request] = await receiver.waitFor(1, path)
    if (request === undefined) throw new Error("no webhook")
    const body = await expectWebhook(request, webhookSecret, "payment.paid", fetched)
    expect((body.data as WirePayment).status).toBe("paid")
    await expectDelivered(String(body.id), receiver.url(path))
    expect(receiver.received(path)).toHaveLength(1)
  })

  it("simulate failed and expired, and cancel, each send their event", async () => {
    for (const [outcome, name] of [
      ["failed", "payment.failed"],
      ["expired", "payment.expired"],
      ["cancel", "payment.cancelled"]
    ] as const) {
      const { testKey, webhookSecret, path } = await application()
      const payment = await pendingPayment(server, testKey)
      const changed =
        outcome === "cancel"
          ? await cancel(server, testKey, payment.id)
          : await simulate(server, testKey, payment.id, outcome)
      expect(changed.status, changed.text).toBe(200)
      const fetched = (await fetchPayment(server, testKey, payment.id)).body
      const [request] = await receiver.waitFor(1, path)
      if (request === undefined) throw new Error("no webhook")
      const body = await expectWebhook(request, webhookSecret, name, fetched)
      await expectDelivered(String(body.id), receiver.url(path))
    }
  })

  it("two partial refunds send payment.partially_refunded twice; the last refund payment.refunded", async () => {
    const { testKey, webhookSecret, path } = await application()
    const payment = await paidPayment(server, testKey, { amount: 1000 })
    await receiver.waitFor(1, path)
    const expected: Array<[string, unknown]> = []
    for (const amount of [100, 200, undefined]) {
      const response = await refund(server, testKey, payment.id, amount === undefined ? {} : { amount })
      expect(response.status, response.text).toBe(201)
      const fetched = (await fetchPayment(server, testKey, payment.id)).body
      expected.push([amount === undefined ? "payment.refunded" : "payment.partially_refunded", fetched])
      // One at a time: each arrives before the next change, so the order is known.
      await receiver.waitFor(1 + expected.length, path)
    }
    const requests = receiver.received(path).slice(1)
    expect(requests.map((request) => request.headers["x-service-event"])).toEqual([
      "payment.partially_refunded",
      "payment.partially_refunded",
      "payment.refunded"
    ])
    const ids = new Set<unknown>()
    for (const [index, request] of requests.entries()) {
      const [name, fetched] = expected[index] ?? ["", null]
      const body = await expectWebhook(request, webhookSecret, name, fetched)
      ids.add(body.id)
    }
    // Three events, three ids.
    expect(ids.size).toBe(3)
    expect((expected[2]?.[1] as WirePayment | undefined)?.refunded_amount).toBe(1000)
  })

  it("a create refused with Kassa-Simulate: provider_error sends payment.failed", async () => {
    const { testKey, webhookSecret, path } = await application()
    const response = await createPayment(server, testKey, {}, { "kassa-simulate": "provider_error" })
    expect(response.status).toBe(502)
    const paymentId = String((response.body as WireError).error.payment_id)
    const fetched = (await fetchPayment(server, testKey, paymentId)).body
    const [request] = await receiver.waitFor(1, path)
    if (request === undefined) throw new Error("no webhook")
    const body = await expectWebhook(request, webhookSecret, "payment.failed", fetched)
    expect((body.data as WirePayment).status).toBe("failed")
  })

  it("test and live events go to the same URL; data.mode tells them apart", async () => {
    const { testKey, liveKey, webhookSecret, path } = await application()
    const live = await createPayment(server, liveKey)
    // Without a linked provider account a live create fails, with its event.
    expect(live.status).toBe(502)
    await paidPayment(server, testKey)
    const requests = await receiver.waitFor(2, path)
    const modes = await Promise.all(
      requests.map(async (request) => {
        const event = await verify(request.body, String(request.headers["x-service-signature"]), webhookSecret)
        return event.data.mode
      })
    )
    expect(modes.sort()).toEqual(["live", "test"])
  })

  it("a receiver that hangs holds at most its URL's slots; other receivers are not held up", async () => {
    const slow = await application()
    const fast = await application()
    receiver.answer({ hang: true }, slow.path)
    const slowPayments = await Promise.all(Array.from({ length: 30 }, () => pendingPayment(server, slow.testKey)))
    for (const payment of slowPayments) await simulate(server, slow.testKey, payment.id, "paid")
    await receiver.waitFor(perUrlLimit, slow.path)
    const started = Date.now()
    for (let i = 0; i < 10; i++) await paidPayment(server, fast.testKey)
    await receiver.waitFor(10, fast.path)
    expect(Date.now() - started).toBeLessThan(5_000)
    // Exactly the cap is in flight to the hanging URL; the other 14 wait for a slot (their attempts are due).
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(receiver.received(slow.path)).toHaveLength(perUrlLimit)
  })
})

describe.each(databases)("the delivery engine's wake-up on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    // The polling backstop is stretched to an hour: whatever arrives in this test was sent because the commit woke
    // the dispatcher (in-process, and through LISTEN/NOTIFY on PostgreSQL), not because a poll came round.
    server = await startServer(database, {}, { pollInterval: Duration.hours(1) })
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  it("each status change reaches the receiver after its commit without waiting for a poll", async () => {
    const path = "/woken"
    const { testKey } = await server.createApplication({ webhook_url: receiver.url(path) })
    for (let i = 0; i < 5; i++) {
      const payment = await pendingPayment(server, testKey)
      expect((await simulate(server, testKey, payment.id, "paid")).status).toBe(200)
      const requests = await receiver.waitFor(i + 1, path)
      expect(requests[i]?.headers["x-service-event"]).toBe("payment.paid")
      expect(JSON.parse(requests[i]?.body ?? "{}").data.id).toBe(payment.id)
    }
  })
})
