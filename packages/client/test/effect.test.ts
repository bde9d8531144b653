/**
 * The Effect face against the real server: the `KassaClient` service and its layer, the contract's decoded types,
 * typed failures, streams of pages, idempotency keys that survive `Effect.retry`, a custom `fetch` or `HttpClient`,
 * and the browser refusal of both faces.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import {
  ConnectionError,
  Kassa,
  KassaClient,
  type KassaClientOptions,
  OrderReferenceAlreadyPaidError
} from "@kassa/client"
import { DateTime, Effect, Exit, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { useProxiedServer } from "./support/ProxiedServer.ts"

const env = useProxiedServer()

const reference = () => `order-${crypto.randomUUID()}`
const layer = (options: Partial<KassaClientOptions> = {}) =>
  KassaClient.layer({ apiKey: Redacted.make(env.testKey), baseUrl: env.server.baseUrl, ...options })

describe("KassaClient", () => {
  it.live("gives the contract's decoded types: timestamps as DateTime", () =>
    Effect.gen(function* () {
      const kassa = yield* KassaClient
      const payment = yield* kassa.payments.create({ amount: 1250, currency: "EUR", order_reference: reference() })
      assert.isTrue(DateTime.isDateTime(payment.created_at))
      assert.isTrue(DateTime.isGreaterThan(payment.expires_at, payment.created_at))
      const paid = yield* kassa.test.simulate(payment.id, { outcome: "paid" })
      assert.strictEqual(paid.status, "paid")
      assert.isTrue(paid.paid_at !== null && DateTime.isDateTime(paid.paid_at))
      const refunded = yield* kassa.payments.refund(payment.id, { amount: 250 })
      assert.deepStrictEqual(
        refunded.refunds.map(({ amount }) => amount),
        [250]
      )
      const fetched = yield* kassa.payments.get(payment.id)
      assert.strictEqual(fetched.refunded_amount, 250)
    }).pipe(Effect.provide(layer()))
  )

  it.live("fails with typed errors that Effect.catchTag narrows", () =>
    Effect.gen(function* () {
      const kassa = yield* KassaClient
      const order_reference = reference()
      const first = yield* kassa.payments.create({ amount: 1000, order_reference })
      const existing = yield* kassa.payments
        .create({ amount: 1000, order_reference })
        .pipe(Effect.catchTag("OrderReferenceAlreadyPaidError", (error) => kassa.payments.get(error.payment_id)))
      assert.strictEqual(existing.id, first.id)
      const cancelled = yield* kassa.payments.cancel(first.id)
      const error = yield* Effect.flip(kassa.payments.cancel(cancelled.id))
      assert.strictEqual(error._tag, "PaymentNotCancellableError")
      if (error._tag === "PaymentNotCancellableError") assert.strictEqual(error.payment_status, "cancelled")
    }).pipe(Effect.provide(layer()))
  )

  it.live("list is a stream over every page; listPage is one page", () =>
    Effect.gen(function* () {
      const { testKey: key } = yield* Effect.promise(() => env.server.createApplication())
      const own = KassaClient.layer({ apiKey: key, baseUrl: env.server.baseUrl })
      const kassa = yield* Effect.provide(Effect.service(KassaClient), own)
      const ids: Array<string> = []
      for (let n = 0; n < 5; n++) {
        ids.unshift((yield* kassa.payments.create({ amount: 100 + n, order_reference: reference() })).id)
      }
      const all = yield* Stream.runCollect(kassa.payments.list({ limit: 2 }))
      assert.deepStrictEqual(
        all.map(({ id }) => id),
        ids
      )
      const firstTwo = yield* kassa.payments.list({ limit: 2 }).pipe(Stream.take(2), Stream.runCollect)
      assert.deepStrictEqual(
        firstTwo.map(({ id }) => id),
        ids.slice(0, 2)
      )
      const page = yield* kassa.payments.listPage({ limit: 3, starting_after: ids[0] })
      assert.deepStrictEqual(
        page.data.map(({ id }) => id),
        ids.slice(1, 4)
      )
      assert.isTrue(page.has_more)
    })
  )

  it.live("the idempotency key is chosen when create is called, so Effect.retry reuses it", () =>
    Effect.gen(function* () {
      const kassa = yield* KassaClient
      const order_reference = reference()
      // The server creates the payment, the answer is lost, and the SDK's own retries are off.
      env.proxy.script({ forward: true, afterwards: "reset" })
      const create = kassa.payments.create({ amount: 1000, order_reference }, { maxRetries: 0 })
      const lost = yield* Effect.flip(create)
      assert.instanceOf(lost, ConnectionError)
      const payment = yield* Effect.retry(create, { times: 1 })
      const keys = env.proxy.requests.map(({ headers }) => headers["idempotency-key"])
      assert.strictEqual(keys.length, 2)
      assert.strictEqual(keys[1], keys[0])
      const page = yield* kassa.payments.listPage({ order_reference })
      assert.deepStrictEqual(
        page.data.map(({ id }) => id),
        [payment.id]
      )
    }).pipe(Effect.provide(layer({ baseUrl: env.proxy.baseUrl })))
  )

  it.live("sends through a custom fetch", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const fetch: typeof globalThis.fetch = (input, init) => {
        seen.push(`${init?.method} ${String(input)}`)
        return globalThis.fetch(input, init)
      }
      const page = yield* Effect.flatMap(Effect.service(KassaClient), (kassa) => kassa.payments.listPage()).pipe(
        Effect.provide(layer({ fetch }))
      )
      assert.isTrue(Array.isArray(page.data))
      assert.deepStrictEqual(seen, [`GET ${env.server.baseUrl}/api/v1/payments?limit=10`])
    })
  )

  it.live("KassaClient.make builds the service over any HttpClient in context", () =>
    Effect.gen(function* () {
      const custom = Layer.effect(
        KassaClient,
        KassaClient.make({ apiKey: env.testKey, baseUrl: `${env.server.baseUrl}/` })
      ).pipe(Layer.provide(FetchHttpClient.layer))
      const payment = yield* Effect.flatMap(Effect.service(KassaClient), (kassa) =>
        kassa.payments.create({ amount: 1000, order_reference: reference() })
      ).pipe(Effect.provide(custom))
      assert.strictEqual(payment.status, "pending")
    })
  )

  it("the Promise face runs the same effects: same errors, same classes", async () => {
    const kassa = new Kassa({ apiKey: env.testKey, baseUrl: env.server.baseUrl })
    const order_reference = reference()
    await kassa.payments.create({ amount: 1000, order_reference })
    await expect(kassa.payments.create({ amount: 1000, order_reference })).rejects.toBeInstanceOf(
      OrderReferenceAlreadyPaidError
    )
  })
})

describe("options", () => {
  const withGlobal = <A>(name: "window" | "document", f: () => A): A => {
    Object.defineProperty(globalThis, name, { value: {}, configurable: true })
    try {
      return f()
    } finally {
      Reflect.deleteProperty(globalThis, name)
    }
  }

  it("refuses to run in a browser, unless dangerouslyAllowBrowser", async () => {
    const options = { apiKey: "pk_test_x", baseUrl: "https://kassa.example" }
    for (const name of ["window", "document"] as const) {
      withGlobal(name, () => {
        expect(() => new Kassa(options)).toThrow(/does not run in a browser/)
        expect(() => new Kassa({ ...options, dangerouslyAllowBrowser: true })).not.toThrow()
      })
    }
    const exit = await withGlobal("window", () =>
      Effect.runPromiseExit(Effect.provide(Effect.service(KassaClient), KassaClient.layer(options)))
    )
    assert.isTrue(Exit.isFailure(exit))
    expect(String(exit)).toMatch(/does not run in a browser/)
    expect(() => new Kassa(options)).not.toThrow()
  })

  it("refuses missing keys, bad URLs, retry counts and timeouts at construction", () => {
    const base = { apiKey: "pk_test_x", baseUrl: "https://kassa.example" }
    expect(() => new Kassa({ ...base, apiKey: "" })).toThrow(/apiKey/)
    expect(() => new Kassa({ ...base, baseUrl: "kassa.example" })).toThrow(/baseUrl/)
    expect(() => new Kassa({ ...base, baseUrl: "ftp://kassa.example" })).toThrow(/baseUrl/)
    expect(() => new Kassa({ ...base, maxRetries: -1 })).toThrow(/maxRetries/)
    expect(() => new Kassa({ ...base, maxRetries: 1.5 })).toThrow(/maxRetries/)
  })
})
