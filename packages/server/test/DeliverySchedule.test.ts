/**
 * The delivery schedule and what one attempt does, against real receivers. The first attempt is made by the
 * server's own dispatcher fiber, in real time; later ones by `Dispatcher.runDue({ at })`, the dispatcher's single
 * step at a chosen time (the controllable clock), so a day of retries takes milliseconds.
 *
 * Covered: the exact due times (+1 min, +5 min, +30 min, +2 h, +6 h, +15 h after each start), the give-up after the
 * 7th failure, the 24 h cut, 3xx failing without being followed, the 10 s timeout, the 1,024-byte body cap,
 * `no_webhook_url` going on with the schedule, URL and secret read at each attempt, and rotation's two signatures.
 */
import { createHmac } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeCrypto } from "@effect/platform-node"
import { verify } from "@kassa/webhook-verify"
import { DateTime, Duration, Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { Dispatcher } from "../src/webhooks/Dispatcher.ts"
import * as WebhookSender from "../src/webhooks/WebhookSender.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { pendingPayment, query, simulate } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const minute = 60_000
const hour = 60 * minute

interface StoredAttempt {
  readonly number: number
  readonly kind: string
  readonly started_at: string
  readonly url: string | null
  readonly response_status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
}

interface StoredDelivery {
  readonly id: string
  readonly event_id: string
  readonly status: string
  readonly attempt_count: number
  readonly next_attempt_at: Date | null
  readonly first_attempt_at: Date | null
  readonly lease_until: Date | null
  readonly attempts: ReadonlyArray<StoredAttempt>
}

let paths = 0

describe.each(databases)("the delivery schedule on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await startReceiver()
    server = await startServer(database)
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })
  // Each test's deliveries end with it, so a later runDue (at a far time) never attempts them.
  afterEach(async () => {
    await query(
      server,
      (sql) => sql`UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE status = 'pending'`
    )
  })

  const runDue = (at: Date) =>
    server.run(
      Effect.gen(function* () {
        const dispatcher = yield* Dispatcher
        return yield* dispatcher.runDue({ at: DateTime.fromDateUnsafe(at) })
      })
    )

  const deliveryOf = async (paymentId: string): Promise<StoredDelivery> => {
    const [row] = await query(
      server,
      (sql) => sql`
        SELECT d.id, d.event_id, d.status, d.attempt_count, d.next_attempt_at, d.first_attempt_at, d.lease_until,
          coalesce((SELECT json_agg(a ORDER BY a.number) FROM delivery_attempts a WHERE a.delivery_id = d.id), '[]')
            AS attempts
        FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = ${paymentId}
      `
    )
    if (row === undefined) throw new Error(`no delivery for ${paymentId}`)
    return row as unknown as StoredDelivery
  }

  /** Waits until the dispatcher fiber has recorded `count` attempts and let go of the delivery. */
  const attempted = async (paymentId: string, count: number, timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const delivery = await deliveryOf(paymentId)
      if (delivery.attempts.length >= count && delivery.lease_until === null) return delivery
      if (Date.now() > deadline) throw new Error(`expected ${count} attempt(s): ${JSON.stringify(delivery)}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  /** An application whose receiver answers `answer`, and a payment just paid (its first attempt under way). */
  const paidWith = async (answer: Parameters<WebhookReceiver["answer"]>[0], url?: string | null) => {
    const path = `/schedule-${paths++}`
    receiver.answer(answer, path)
    const created = await server.createApplication({ webhook_url: url === undefined ? receiver.url(path) : url })
    const payment = await pendingPayment(server, created.testKey)
    const paid = await simulate(server, created.testKey, payment.id, "paid")
    expect(paid.status).toBe(200)
    return { ...created, path, paymentId: payment.id }
  }

  it("retries at exactly +1 min, +5 min, +30 min, +2 h, +6 h, +15 h after each start, then fails after the 7th", async () => {
    const { path, paymentId, webhookSecret } = await paidWith({ status: 500, body: "down" })
    const first = await attempted(paymentId, 1)
    const firstStart = new Date(first.attempts[0]?.started_at ?? "")
    expect(first.first_attempt_at?.getTime()).toBe(firstStart.getTime())
    expect(first).toMatchObject({ status: "pending", attempt_count: 1 })
    expect(first.attempts[0]).toMatchObject({ number: 1, kind: "scheduled", response_status: 500, error: null })

    const delays = [minute, 5 * minute, 30 * minute, 2 * hour, 6 * hour, 15 * hour]
    let start = firstStart
    for (const [index, delay] of delays.entries()) {
      const due = new Date(start.getTime() + delay)
      const before = await deliveryOf(paymentId)
      expect(before.next_attempt_at?.getTime()).toBe(due.getTime())
      // A millisecond early, nothing happens.
      await runDue(new Date(due.getTime() - 1))
      expect((await deliveryOf(paymentId)).attempts).toHaveLength(index + 1)
      await runDue(due)
      const after = await deliveryOf(paymentId)
      expect(after.attempts).toHaveLength(index + 2)
      expect(new Date(after.attempts[index + 1]?.started_at ?? "").getTime()).toBe(due.getTime())
      start = due
    }

    const last = await deliveryOf(paymentId)
    expect(last).toMatchObject({ status: "failed", attempt_count: 7, next_attempt_at: null, lease_until: null })
    // The 7th attempt was due 23 h 36 min after the first.
    expect(start.getTime() - firstStart.getTime()).toBe(23 * hour + 36 * minute)
    await runDue(new Date(firstStart.getTime() + 30 * hour))
    expect((await deliveryOf(paymentId)).attempts).toHaveLength(7)

    // Seven requests reached the receiver: the same body and event id, each signed afresh at its own start.
    const requests = receiver.received(path)
    expect(requests).toHaveLength(7)
    expect(new Set(requests.map((request) => request.body)).size).toBe(1)
    for (const [index, request] of requests.entries()) {
      const signature = String(request.headers["x-service-signature"])
      const t = Number(/^t=(\d+)/.exec(signature)?.[1])
      expect(t).toBe(Math.floor(new Date(last.attempts[index]?.started_at ?? "").getTime() / 1000))
      const event = await verify(request.body, signature, webhookSecret, { now: t })
      expect(event.id).toBe(last.event_id)
    }
  })

  it("the 24 h cut: a retry that would come due at or after 24 h fails the delivery; one found late is not made", async () => {
    // Attempt 2 runs late, 23 h 56 min after the first: attempt 3 would be due at 24 h 01 min, so it gives up.
    const late = await paidWith({ status: 503 })
    const lateFirst = new Date((await attempted(late.paymentId, 1)).attempts[0]?.started_at ?? "")
    await runDue(new Date(lateFirst.getTime() + 23 * hour + 56 * minute))
    expect(await deliveryOf(late.paymentId)).toMatchObject({
      status: "failed",
      attempt_count: 2,
      next_attempt_at: null
    })

    // A delivery due since +1 min but only looked at once its 24 h are over is failed without an attempt.
    const lost = await paidWith({ status: 503 })
    const lostFirst = new Date((await attempted(lost.paymentId, 1)).attempts[0]?.started_at ?? "")
    await runDue(new Date(lostFirst.getTime() + 24 * hour))
    expect(await deliveryOf(lost.paymentId)).toMatchObject({
      status: "failed",
      attempt_count: 1,
      next_attempt_at: null
    })
    expect(receiver.received(lost.path)).toHaveLength(1)
  })

  it("a 3xx is a failure and is not followed", async () => {
    const target = `/redirect-target-${paths++}`
    const { paymentId, path } = await paidWith({ status: 302, headers: { location: receiver.url(target) } })
    const delivery = await attempted(paymentId, 1)
    expect(delivery).toMatchObject({ status: "pending", attempt_count: 1 })
    expect(delivery.attempts[0]).toMatchObject({ response_status: 302, error: null })
    expect(delivery.next_attempt_at?.getTime()).toBe(
      new Date(delivery.attempts[0]?.started_at ?? "").getTime() + minute
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(receiver.received(path)).toHaveLength(1)
    expect(receiver.received(target)).toHaveLength(0)
  })

  it("a receiver that never answers times out after 10 s, and the schedule goes on", async () => {
    const { paymentId } = await paidWith({ hang: true })
    // The attempt itself takes 10 s by design; the waits around it leave room for a machine twice as slow.
    const delivery = await attempted(paymentId, 1, 40_000)
    const [attempt] = delivery.attempts
    expect(attempt).toMatchObject({ response_status: null, error: "timeout", response_body: null })
    // The timer may fire a millisecond before the measured start says 10 s have passed.
    expect(attempt?.duration_ms).toBeGreaterThanOrEqual(9_990)
    expect(attempt?.duration_ms).toBeLessThan(14_000)
    expect(delivery).toMatchObject({ status: "pending", attempt_count: 1 })
    expect(delivery.next_attempt_at?.getTime()).toBe(new Date(attempt?.started_at ?? "").getTime() + minute)
  }, 60_000) // ≥ 10 s by design (the receiver's timeout): 60 s keeps it far from the test's own bound

  it("keeps at most 1,024 bytes of the answer, as text", async () => {
    const { paymentId } = await paidWith({ status: 200, body: "é".repeat(600) + "x".repeat(4000) })
    const delivery = await attempted(paymentId, 1)
    expect(delivery.status).toBe("succeeded")
    // "é" is two bytes in UTF-8: the first 1,024 bytes are 512 of them.
    expect(delivery.attempts[0]?.response_body).toBe("é".repeat(512))
  })

  it("no webhook URL: the attempt fails with no_webhook_url and the schedule goes on; a URL set later is used", async () => {
    const path = `/late-url-${paths++}`
    receiver.answer({ status: 204 }, path)
    const { paymentId, application } = await paidWith({ status: 200 }, null)
    const first = await attempted(paymentId, 1)
    expect(first.attempts[0]).toMatchObject({ url: null, response_status: null, error: "no_webhook_url" })
    expect(first).toMatchObject({ status: "pending", attempt_count: 1 })

    const changed = await operatorRequest(server, `/applications/${application.id}`, {
      method: "PATCH",
      body: { webhook_url: receiver.url(path) }
    })
    expect(changed.status).toBe(200)
    await runDue(first.next_attempt_at ?? new Date())
    const second = await deliveryOf(paymentId)
    expect(second).toMatchObject({ status: "succeeded", attempt_count: 2 })
    expect(second.attempts[1]).toMatchObject({ number: 2, url: receiver.url(path), response_status: 204 })
    expect(receiver.received(path)).toHaveLength(1)
  })

  it("a URL changed between attempts is used by the next attempt", async () => {
    const moved = `/moved-${paths++}`
    receiver.answer({ status: 200 }, moved)
    const { paymentId, application, path } = await paidWith({ status: 500 })
    const first = await attempted(paymentId, 1)
    expect(first.attempts[0]?.url).toBe(receiver.url(path))
    await operatorRequest(server, `/applications/${application.id}`, {
      method: "PATCH",
      body: { webhook_url: receiver.url(moved) }
    })
    await runDue(first.next_attempt_at ?? new Date())
    const second = await deliveryOf(paymentId)
    expect(second.attempts[1]).toMatchObject({ url: receiver.url(moved), response_status: 200 })
    expect(second.status).toBe("succeeded")
    expect(receiver.received(moved)).toHaveLength(1)
  })

  it("a regenerated secret signs the next attempt; for 24 h the old one signs too, new first", async () => {
    const { paymentId, application, path, webhookSecret: oldSecret } = await paidWith({ status: 500 })
    const first = await attempted(paymentId, 1)
    const rotated = await operatorRequest(server, `/applications/${application.id}/webhook-secret`, { method: "POST" })
    expect(rotated.status).toBe(201)
    const newSecret = (rotated.body as { webhook_secret: string }).webhook_secret

    await runDue(first.next_attempt_at ?? new Date())
    const [one, two] = receiver.received(path)
    if (one === undefined || two === undefined) throw new Error("expected two requests")
    expect(String(one.headers["x-service-signature"]).match(/v1=/g)).toHaveLength(1)
    await verify(one.body, String(one.headers["x-service-signature"]), oldSecret, { toleranceSeconds: 1e9 })

    const header = String(two.headers["x-service-signature"])
    const t = /^t=(\d+)/.exec(header)?.[1] ?? ""
    const signatures = [...header.matchAll(/v1=([0-9a-f]{64})/g)].map((match) => match[1])
    const hmac = (secret: string) => createHmac("sha256", secret).update(`${t}.${two.body}`).digest("hex")
    expect(signatures).toEqual([hmac(newSecret), hmac(oldSecret)])
    await verify(two.body, header, newSecret, { now: Number(t) })
    await verify(two.body, header, oldSecret, { now: Number(t) })

    // Once the rotation is 24 h old, only the new secret signs.
    await query(
      server,
      (sql) => sql`
        UPDATE applications SET webhook_secret_rotated_at = now() - interval '25 hours' WHERE id = ${application.id}
      `
    )
    await runDue((await deliveryOf(paymentId)).next_attempt_at ?? new Date())
    const third = receiver.received(path)[2]
    const thirdHeader = String(third?.headers["x-service-signature"])
    expect(thirdHeader.match(/v1=/g)).toHaveLength(1)
    await verify(third?.body ?? "", thirdHeader, newSecret, { toleranceSeconds: 1e9 })
    await expect(verify(third?.body ?? "", thirdHeader, oldSecret, { toleranceSeconds: 1e9 })).rejects.toThrow()
  })
})

/** The sender alone, with a short injected timeout (the server's is 10 s, above). */
describe("one attempt (WebhookSender)", () => {
  let server: Server
  let base = ""
  const trickle = new Set<NodeJS.Timeout>()
  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume()
      if (request.url === "/slow-body") {
        // The status line comes at once; the body never ends.
        response.writeHead(200)
        response.write("first part;")
        trickle.add(setInterval(() => response.write("."), 50))
        return
      }
      if (request.url === "/binary") {
        response.writeHead(400)
        response.end(Buffer.from([0x61, 0x00, 0xff, 0xfe, 0x62]))
        return
      }
      if (request.url === "/never") return
      response.writeHead(201)
      response.end("created")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    for (const timer of trickle) clearInterval(timer)
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  const sendTo = (url: string, timeout = Duration.millis(300)) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const sender = yield* WebhookSender.make({ production: false, timeout })
        return yield* sender.send({
          url,
          event: "payment.paid",
          body: "{}",
          secrets: ["whsec_0123456789abcdefghijklmnopqrstuv"],
          timestamp: 1_800_000_000
        })
      }).pipe(Effect.scoped, Effect.provide(NodeCrypto.layerMac))
    )
  const send = (path: string) => sendTo(`${base}${path}`)

  it("the production limit is 10 s", () => {
    expect(Duration.toMillis(WebhookSender.defaultTimeout)).toBe(10_000)
  })

  it("no status line in time: timeout, after the limit", async () => {
    const outcome = await send("/never")
    expect(outcome).toMatchObject({ succeeded: false, error: "timeout", responseStatus: null, responseBody: null })
    expect(outcome.durationMs).toBeGreaterThanOrEqual(295)
    // Ended by the limit, not by the test's own timeout (a busy machine may add a few seconds, never 10).
    expect(outcome.durationMs).toBeLessThan(5_000)
  })

  it("a 2xx status line in time succeeds even if the body never ends; what came of it is kept", async () => {
    const outcome = await send("/slow-body")
    expect(outcome).toMatchObject({ succeeded: true, responseStatus: 200, error: null })
    expect(outcome.responseBody?.startsWith("first part;")).toBe(true)
  })

  it("any 2xx succeeds; other statuses fail; bytes that are not text are kept as replacement characters", async () => {
    expect(await send("/created")).toMatchObject({ succeeded: true, responseStatus: 201, responseBody: "created" })
    const binary = await send("/binary")
    expect(binary).toMatchObject({ succeeded: false, responseStatus: 400, error: null })
    expect(binary.responseBody).toBe("a\uFFFD\uFFFD\uFFFDb")
  })

  it("a closed port is connection_refused; a malformed URL invalid_url", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    expect((await sendTo(`http://127.0.0.1:${port}/`)).error).toBe("connection_refused")
    expect((await sendTo("not a url")).error).toBe("invalid_url")
    expect((await sendTo("ftp://127.0.0.1/")).error).toBe("invalid_url")
  })
})
