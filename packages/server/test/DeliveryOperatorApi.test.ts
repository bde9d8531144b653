/**
 * The operator API's webhook deliveries (decisions §8): `GET /admin/api/v1/applications/{id}/deliveries` lists them
 * newest first with their attempts inline, filtered and paged by cursor; `POST /admin/api/v1/deliveries/{id}/resend`
 * makes one immediate manual attempt of the same event with a fresh signature, without restarting the schedule.
 * Both need the admin token.
 */
import { verify } from "@kassa/webhook-verify"
import { DateTime, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Dispatcher } from "../src/webhooks/Dispatcher.ts"
import { type OperatorInit, operatorRequest } from "./support/OperatorRequests.ts"
import { cancel, createPayment, paidPayment, pendingPayment, type WireError } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

interface WireAttempt {
  readonly number: number
  readonly kind: string
  readonly started_at: string
  readonly url: string | null
  readonly response_status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
}

interface WireDelivery {
  readonly id: string
  readonly event_id: string
  readonly event: string
  readonly payment_id: string
  readonly mode: string
  readonly status: string
  readonly next_attempt_at: string | null
  readonly created_at: string
  readonly attempts: ReadonlyArray<WireAttempt>
}

interface WireList {
  readonly data: ReadonlyArray<WireDelivery>
  readonly has_more: boolean
}

describe.each(databases)("the operator's webhook deliveries on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let applicationId = ""
  let path = ""
  let testKey = ""
  let webhookSecret = ""
  /** Payment ids by what happened to them. */
  const payments = { paid: [] as Array<string>, cancelled: "", liveFailed: "" }

  const admin = (path: string, init?: OperatorInit) => operatorRequest(server, path, init)

  const list = async (query = "") => {
    const response = await admin(`/applications/${applicationId}/deliveries${query}`)
    expect(response.status, response.text).toBe(200)
    return response.body as WireList
  }

  /** Every delivery's id, read two at a time through `starting_after` (at most ten pages). */
  const pagesOfTwo = async () => {
    const seen: Array<string> = []
    let cursor = ""
    for (let page = 0; page < 10; page++) {
      const { data, has_more } = await list(`?limit=2${cursor}`)
      seen.push(...data.map((delivery) => delivery.id))
      if (!has_more) break
      cursor = `&starting_after=${data.at(-1)?.id}`
    }
    return seen
  }

  /** Waits until every delivery of the application has been attempted once and let go. */
  const settled = async (count: number) => {
    for (let waited = 0; waited < 10_000; waited += 25) {
      const { data } = await list("?limit=100")
      if (data.length === count && data.every((delivery) => delivery.attempts.length > 0)) return data
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error("deliveries did not settle")
  }

  beforeAll(async () => {
    receiver = await startReceiver()
    server = await startServer(database)
    path = "/operator-shop"
    // The receiver refuses cancellations (so that delivery stays pending) and takes everything else.
    receiver.answer(
      (request) =>
        request.headers["x-service-event"] === "payment.cancelled" ? { status: 500, body: "nope" } : { status: 200 },
      path
    )
    const created = await server.createApplication({ webhook_url: receiver.url(path) })
    applicationId = created.application.id
    testKey = created.testKey
    webhookSecret = created.webhookSecret
    for (let i = 0; i < 3; i++) payments.paid.push((await paidPayment(server, testKey)).id)
    const pending = await pendingPayment(server, testKey)
    await cancel(server, testKey, pending.id)
    payments.cancelled = pending.id
    const live = await createPayment(server, created.liveKey)
    payments.liveFailed = String((live.body as WireError).error.payment_id)
    await settled(5)
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  it("lists every delivery newest first, with its event, payment, mode, status and attempts inline", async () => {
    const { data, has_more } = await list("?limit=100")
    expect(has_more).toBe(false)
    expect(data.map((delivery) => delivery.payment_id)).toEqual([
      payments.liveFailed,
      payments.cancelled,
      ...[...payments.paid].reverse()
    ])
    const paid = data.at(-1)
    expect(Object.keys(paid ?? {}).sort()).toEqual(
      ["attempts", "created_at", "event", "event_id", "id", "mode", "next_attempt_at", "payment_id", "status"].sort()
    )
    expect(paid).toMatchObject({ event: "payment.paid", mode: "test", status: "succeeded", next_attempt_at: null })
    expect(paid?.event_id).toMatch(/^evt_[0-9a-f-]{36}$/)
    expect(paid?.attempts).toEqual([
      {
        number: 1,
        kind: "scheduled",
        started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        url: receiver.url(path),
        response_status: 200,
        error: null,
        duration_ms: expect.any(Number),
        response_body: ""
      }
    ])
    const cancelled = data[1]
    expect(cancelled).toMatchObject({ event: "payment.cancelled", status: "pending" })
    expect(cancelled?.attempts[0]).toMatchObject({ response_status: 500, response_body: "nope" })
    // Retry due one minute after the first attempt started.
    expect(Date.parse(cancelled?.next_attempt_at ?? "")).toBe(
      Date.parse(cancelled?.attempts[0]?.started_at ?? "") + 60_000
    )
    expect(data[0]).toMatchObject({ event: "payment.failed", mode: "live", status: "succeeded" })
  })

  it("filters by status, event, payment and mode", async () => {
    expect((await list("?status=pending")).data.map((delivery) => delivery.payment_id)).toEqual([payments.cancelled])
    expect((await list("?status=succeeded")).data).toHaveLength(4)
    expect((await list("?status=failed")).data).toHaveLength(0)
    expect((await list("?event=payment.paid")).data.map((delivery) => delivery.payment_id).sort()).toEqual(
      [...payments.paid].sort()
    )
    expect((await list(`?payment_id=${payments.paid[1]}`)).data.map((delivery) => delivery.payment_id)).toEqual([
      payments.paid[1]
    ])
    expect((await list("?mode=live")).data.map((delivery) => delivery.payment_id)).toEqual([payments.liveFailed])
    expect((await list("?mode=test&event=payment.cancelled&status=pending")).data).toHaveLength(1)
  })

  it("pages with limit and starting_after, without gaps or repeats", async () => {
    const all = (await list("?limit=100")).data.map((delivery) => delivery.id)
    expect(await pagesOfTwo()).toEqual(all)
    expect((await list("?limit=1")).has_more).toBe(true)
    // The cursor combines with filters.
    const first = await list("?status=succeeded&limit=1")
    const second = await list(`?status=succeeded&limit=10&starting_after=${first.data[0]?.id}`)
    expect(second.data).toHaveLength(3)
  })

  it("refuses bad queries with validation_failed, and unknown applications with not_found", async () => {
    for (const query of [
      "?limit=0",
      "?limit=101",
      "?status=done",
      "?event=payment.created",
      "?mode=sandbox",
      "?starting_after=nope",
      `?starting_after=${crypto.randomUUID()}`
    ]) {
      const response = await admin(`/applications/${applicationId}/deliveries${query}`)
      expect(response.status, query).toBe(422)
      expect((response.body as WireError).error.code).toBe("validation_failed")
    }
    const unknown = await admin(`/applications/${crypto.randomUUID()}/deliveries`)
    expect(unknown.status).toBe(404)
    expect((unknown.body as WireError).error.code).toBe("not_found")
    expect((await admin("/applications/not-an-id/deliveries")).status).toBe(404)
  })

  it("resend: one immediate manual attempt of the same event, freshly signed; the schedule goes on unchanged", async () => {
    const [before] = (await list("?status=pending")).data
    if (before === undefined) throw new Error("no pending delivery")
    const firstRequest = receiver
      .received(path)
      .find((request) => request.headers["x-service-event"] === "payment.cancelled")
    if (firstRequest === undefined) throw new Error("no first request")
    const count = receiver.received(path).length

    const response = await admin(`/deliveries/${before.id}/resend`, { method: "POST" })
    expect(response.status, response.text).toBe(202)
    expect(response.body).toMatchObject({ id: before.id, event_id: before.event_id, status: "pending" })
    // Audited under the delivery's application, though the path names only the delivery.
    const audit = await admin("/audit?limit=1")
    expect((audit.body as { data: Array<unknown> }).data[0]).toMatchObject({
      action: "operator_api.deliveries.resend",
      application_id: applicationId,
      target: `/admin/api/v1/deliveries/${before.id}/resend`
    })

    const requests = await receiver.waitFor(count + 1, path)
    const resent = requests.at(-1)
    if (resent === undefined) throw new Error("no resend")
    expect(resent.body).toBe(firstRequest.body)
    const signature = String(resent.headers["x-service-signature"])
    const event = await verify(resent.body, signature, webhookSecret)
    expect(event.id).toBe(before.event_id)

    const after = await waitForAttempts(before.id, 2)
    expect(after.attempts[1]).toMatchObject({
      number: 2,
      kind: "manual",
      url: receiver.url(path),
      response_status: 500
    })
    // t is the manual attempt's own start.
    expect(Number(/^t=(\d+)/.exec(signature)?.[1])).toBe(
      Math.floor(Date.parse(after.attempts[1]?.started_at ?? "") / 1000)
    )
    // Not restarted: still pending, due when it was, and the next scheduled attempt is the schedule's second.
    expect(after).toMatchObject({ status: "pending", next_attempt_at: before.next_attempt_at })
    await server.run(
      Effect.gen(function* () {
        const dispatcher = yield* Dispatcher
        yield* dispatcher.runDue({ at: DateTime.makeUnsafe(before.next_attempt_at ?? "") })
      })
    )
    const scheduled = await waitForAttempts(before.id, 3)
    const third = scheduled.attempts[2]
    expect(third).toMatchObject({ number: 3, kind: "scheduled" })
    // Attempt 2 of the schedule is followed by +5 min, not +1 min.
    expect(Date.parse(scheduled.next_attempt_at ?? "")).toBe(Date.parse(third?.started_at ?? "") + 5 * 60_000)
  })

  it("a successful resend ends the delivery as succeeded; resending a succeeded one records another attempt", async () => {
    receiver.answer({ status: 200, body: "thanks" }, path)
    const [pending] = (await list("?status=pending")).data
    if (pending === undefined) throw new Error("no pending delivery")
    expect((await admin(`/deliveries/${pending.id}/resend`, { method: "POST" })).status).toBe(202)
    const done = await waitForAttempts(pending.id, pending.attempts.length + 1)
    expect(done, JSON.stringify({ pending, done })).toMatchObject({ status: "succeeded", next_attempt_at: null })
    expect(done.attempts.at(-1)).toMatchObject({ kind: "manual", response_status: 200, response_body: "thanks" })

    expect((await admin(`/deliveries/${pending.id}/resend`, { method: "POST" })).status).toBe(202)
    const again = await waitForAttempts(pending.id, pending.attempts.length + 2)
    expect(again.status).toBe("succeeded")
    expect(again.attempts.at(-1)).toMatchObject({ kind: "manual", number: pending.attempts.length + 2 })
  })

  it("resending an unknown delivery is not_found", async () => {
    for (const id of [crypto.randomUUID(), "not-an-id"]) {
      const response = await admin(`/deliveries/${id}/resend`, { method: "POST" })
      expect(response.status).toBe(404)
      expect((response.body as WireError).error.code).toBe("not_found")
    }
  })

  it("both need the admin token: none, a wrong one and an API key are unauthenticated", async () => {
    const [delivery] = (await list()).data
    for (const key of [undefined, "wrong-token", testKey]) {
      for (const [method, url] of [
        ["GET", `/admin/api/v1/applications/${applicationId}/deliveries`],
        ["POST", `/admin/api/v1/deliveries/${delivery?.id}/resend`]
      ] as const) {
        const response = await server.request(url, { method, ...(key === undefined ? {} : { key }) })
        expect(response.status, `${method} ${url} with ${key}`).toBe(401)
        expect((response.body as WireError).error.code).toBe("unauthenticated")
      }
    }
  })

  it("pages through deliveries that share one instant to the microsecond (last: it rewrites their times)", async () => {
    // PostgreSQL keeps microseconds: a cursor's time sent back from JavaScript (milliseconds) would end the list
    // after its first page.
    await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE deliveries SET created_at = '2026-01-01T00:00:00.123456Z' WHERE application_id = ${applicationId}`
      })
    )
    const all = (await list("?limit=100")).data.map((delivery) => delivery.id)
    expect(all).toHaveLength(5)
    expect(await pagesOfTwo()).toEqual(all)
  })

  const waitForAttempts = async (id: string, count: number) => {
    for (let waited = 0; waited < 5_000; waited += 20) {
      const { data } = await list("?limit=100")
      const found = data.find((delivery) => delivery.id === id)
      if (found !== undefined && found.attempts.length >= count) return found
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error(`delivery ${id} did not reach ${count} attempt(s)`)
  }
})
