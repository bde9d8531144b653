/**
 * Retries, idempotency keys, timeouts and aborts, through a fault-injecting proxy in front of the real server: the
 * proxy fails attempts (5xx, 429, 409, resets, silence) or lets them through, so "one payment" is checked where the
 * payments live.
 */
import {
  AmountBelowMinimumError,
  ConnectionError,
  Kassa,
  type KassaOptions,
  PaymentBusyError,
  ProviderError,
  RateLimitedError,
  RequestAbortedError,
  ServerError,
  TimeoutError
} from "@kassa/client"
import { beforeEach, describe, expect, it } from "vitest"
import { freePort } from "../../server/test/support/TestServer.ts"
import { envelope } from "./support/FaultProxy.ts"
import { useProxiedServer } from "./support/ProxiedServer.ts"

const env = useProxiedServer()
beforeEach(() => env.proxy.script())

const kassa = (options: Partial<KassaOptions> = {}) =>
  new Kassa({ apiKey: env.testKey, baseUrl: env.proxy.baseUrl, ...options })
// Straight to the server, for fixtures.
const direct = () => new Kassa({ apiKey: env.testKey, baseUrl: env.server.baseUrl })

const reference = () => `order-${crypto.randomUUID()}`
const paymentsWith = async (order_reference: string) => (await direct().payments.listPage({ order_reference })).data
const keys = () => env.proxy.requests.map((request) => request.headers["idempotency-key"])
const gap = (first: number, second: number) => {
  const [a, b] = [env.proxy.requests[first], env.proxy.requests[second]]
  if (a === undefined || b === undefined) throw new Error("missing request")
  return b.at - a.at
}

const serverError = envelope(500, { code: "server_error", message: "Something went wrong on our side." })
const htmlBadGateway = { status: 502, headers: { "content-type": "text/html" }, body: "<html>502 Bad Gateway</html>" }

describe("retried with the same Idempotency-Key", () => {
  it("500, then success: one payment, and both attempts carry the same automatic key", async () => {
    env.proxy.script(serverError, { forward: true })
    const order_reference = reference()
    const payment = await kassa().payments.create({ amount: 1000, order_reference })
    expect(env.proxy.requests).toHaveLength(2)
    expect(keys()[0]).toMatch(/^kassa_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(keys()[1]).toBe(keys()[0])
    expect((await paymentsWith(order_reference)).map(({ id }) => id)).toEqual([payment.id])
  })

  it("the server created the payment but a proxy answered 502 with HTML: the retry gets the same payment", async () => {
    env.proxy.script({ forward: true, afterwards: htmlBadGateway }, { forward: true })
    const order_reference = reference()
    const payment = await kassa().payments.create({ amount: 1000, order_reference })
    expect(keys()).toHaveLength(2)
    expect(keys()[1]).toBe(keys()[0])
    expect((await paymentsWith(order_reference)).map(({ id }) => id)).toEqual([payment.id])
  })

  it("the connection was reset after the server created the payment: retried with the same key, one payment", async () => {
    env.proxy.script({ forward: true, afterwards: "reset" }, { forward: true })
    const order_reference = reference()
    const payment = await kassa().payments.create({ amount: 1000, order_reference, description: "reset" })
    expect(keys()).toHaveLength(2)
    expect(keys()[1]).toBe(keys()[0])
    expect((await paymentsWith(order_reference)).map(({ id }) => id)).toEqual([payment.id])
  })

  it("a refund whose answer was lost refunds once, with the caller's own key on every attempt", async () => {
    const created = await direct().payments.create({ amount: 1000, order_reference: reference() })
    await direct().test.simulate(created.id, { outcome: "paid" })
    env.proxy.script({ forward: true, afterwards: "reset" }, { reset: true }, { forward: true })
    const refunded = await kassa().payments.refund(created.id, { amount: 300 }, { idempotencyKey: "refund-order-1" })
    expect(keys()).toEqual(["refund-order-1", "refund-order-1", "refund-order-1"])
    expect(refunded.refunds.map(({ amount }) => amount)).toEqual([300])
    expect((await direct().payments.get(created.id)).refunded_amount).toBe(300)
  })

  it("409 idempotency_request_in_progress is retried after its Retry-After", async () => {
    env.proxy.script(
      envelope(409, { code: "idempotency_request_in_progress", message: "Still running." }, { "retry-after": "1" }),
      { forward: true }
    )
    const payment = await kassa().payments.create({ amount: 1000, order_reference: reference() })
    expect(payment.status).toBe("pending")
    expect(keys()[1]).toBe(keys()[0])
    expect(gap(0, 1)).toBeGreaterThanOrEqual(950)
  })

  it("409 payment_busy is retried after a short wait", async () => {
    const created = await direct().payments.create({ amount: 1000, order_reference: reference() })
    env.proxy.script(envelope(409, { code: "payment_busy", message: "Busy." }), { forward: true })
    const cancelled = await kassa().payments.cancel(created.id)
    expect(cancelled.status).toBe("cancelled")
    expect(env.proxy.requests).toHaveLength(2)
    expect(gap(0, 1)).toBeGreaterThanOrEqual(950)
  })
})

describe("retry rules", () => {
  it("429 with Retry-After: 1 waits about a second, then succeeds", async () => {
    const created = await direct().payments.create({ amount: 1000, order_reference: reference() })
    env.proxy.script(envelope(429, { code: "rate_limited", message: "Slow down." }, { "retry-after": "1" }))
    const started = Date.now()
    expect((await kassa().payments.get(created.id)).id).toBe(created.id)
    expect(env.proxy.requests).toHaveLength(2)
    expect(gap(0, 1)).toBeGreaterThanOrEqual(950)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it("a 422 is not retried: exactly one request", async () => {
    const error = await kassa()
      .payments.create({ amount: 50, order_reference: reference() })
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(AmountBelowMinimumError)
    expect(env.proxy.requests).toHaveLength(1)
  })

  it("502 provider_error is final for its key: not retried", async () => {
    const error = await kassa()
      .payments.create({ amount: 1000, order_reference: reference() }, { simulate: "provider_error" })
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(ProviderError)
    expect(env.proxy.requests).toHaveLength(1)
  })

  it("gives up after maxRetries (default 2), failing with the last error", async () => {
    env.proxy.script(serverError, serverError, serverError, serverError)
    const error = await kassa()
      .payments.listPage()
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(ServerError)
    expect(env.proxy.requests).toHaveLength(3)
  })

  it("maxRetries is configurable per client and per call; 0 turns retries off", async () => {
    env.proxy.script(serverError, serverError, serverError)
    await expect(kassa({ maxRetries: 0 }).payments.listPage()).rejects.toBeInstanceOf(ServerError)
    expect(env.proxy.requests).toHaveLength(1)
    env.proxy.script(serverError, serverError)
    const page = await kassa({ maxRetries: 0 }).payments.listPage({}, { maxRetries: 2 })
    expect(page.data).toBeInstanceOf(Array)
    expect(env.proxy.requests).toHaveLength(3)
  })

  it("429 asking for more than a minute is not waited for", async () => {
    env.proxy.script(envelope(429, { code: "rate_limited", message: "Slow down." }, { "retry-after": "120" }))
    const error = await kassa()
      .payments.listPage()
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(RateLimitedError)
    expect(error).toMatchObject({ retryAfter: 120, status: 429 })
    expect(env.proxy.requests).toHaveLength(1)
  })

  it("no server at all: ConnectionError after the retries", async () => {
    const client = new Kassa({ apiKey: env.testKey, baseUrl: `http://127.0.0.1:${await freePort()}`, maxRetries: 1 })
    const error = await client.payments.listPage().catch((error: unknown) => error)
    expect(error).toBeInstanceOf(ConnectionError)
    expect(error).toMatchObject({ code: "connection_error" })
  })
})

describe("timeouts and aborts", () => {
  it("an attempt that hangs times out and is retried with the same key", async () => {
    env.proxy.script({ hang: true }, { forward: true })
    const order_reference = reference()
    const payment = await kassa({ timeout: 300 }).payments.create({ amount: 1000, order_reference })
    expect(keys()).toHaveLength(2)
    expect(keys()[1]).toBe(keys()[0])
    expect(gap(0, 1)).toBeGreaterThanOrEqual(290)
    expect((await paymentsWith(order_reference)).map(({ id }) => id)).toEqual([payment.id])
  })

  it("a per-call timeout overrides the client's; without retries the call fails with TimeoutError", async () => {
    env.proxy.script({ hang: true })
    const started = Date.now()
    const error = await kassa({ timeout: 60_000 })
      .payments.listPage({}, { timeout: 200, maxRetries: 0 })
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(TimeoutError)
    expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it("an AbortSignal aborts a call in flight", async () => {
    env.proxy.script({ hang: true })
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error("user left")), 100)
    const started = Date.now()
    const error = await kassa()
      .payments.listPage({}, { signal: controller.signal })
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(RequestAbortedError)
    expect(error).toMatchObject({ code: "request_aborted", cause: new Error("user left") })
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it("an AbortSignal also ends the wait between retries", async () => {
    // 60 s is the longest Retry-After the SDK waits out, twice the test's own time limit: only the abort can end it.
    env.proxy.script(envelope(409, { code: "payment_busy", message: "Busy." }, { "retry-after": "60" }))
    const created = await direct().payments.create({ amount: 1000, order_reference: reference() })
    const error = await kassa()
      .payments.cancel(created.id, { signal: AbortSignal.timeout(200) })
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(RequestAbortedError)
    expect(env.proxy.requests).toHaveLength(1)
    expect((await direct().payments.get(created.id)).status).toBe("pending")
  })

  it("an aborted signal sends nothing", async () => {
    await expect(
      kassa().payments.create({ amount: 1000, order_reference: reference() }, { signal: AbortSignal.abort() })
    ).rejects.toBeInstanceOf(RequestAbortedError)
    expect(env.proxy.requests).toHaveLength(0)
  })

  it("an AbortSignal ends a list iteration", async () => {
    const { testKey: key } = await env.server.createApplication()
    const owner = new Kassa({ apiKey: key, baseUrl: env.server.baseUrl })
    for (const n of [1, 2, 3]) await owner.payments.create({ amount: 1000, order_reference: `page-${n}` })
    const controller = new AbortController()
    const seen: Array<string> = []
    const walk = async () => {
      const client = new Kassa({ apiKey: key, baseUrl: env.proxy.baseUrl })
      for await (const payment of client.payments.list({ limit: 1 }, { signal: controller.signal })) {
        seen.push(payment.id)
        env.proxy.script({ hang: true })
        setTimeout(() => controller.abort(), 50)
      }
    }
    await expect(walk()).rejects.toBeInstanceOf(RequestAbortedError)
    expect(seen).toHaveLength(1)
  })
})

describe("errors with a retry", () => {
  it("a busy payment that stays busy fails with PaymentBusyError after the retries", async () => {
    const busy = envelope(409, { code: "payment_busy", message: "Busy." }, { "retry-after": "0" })
    env.proxy.script(busy, busy, busy)
    const created = await direct().payments.create({ amount: 1000, order_reference: reference() })
    const error = await kassa()
      .payments.cancel(created.id)
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(PaymentBusyError)
    expect(error).toMatchObject({ status: 409, requestId: "req_proxy_409", retryAfter: 0 })
    expect(env.proxy.requests).toHaveLength(3)
  })
})
