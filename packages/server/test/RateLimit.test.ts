import { afterAll, assert, beforeAll, describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import { RateLimiter } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { RateLimit } from "../src/auth/RateLimit.ts"
import { redisReachable, redisUrl } from "./support/TestRedis.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

const redisStores: ReadonlyArray<string> = redisReachable ? ["redis"] : []

const consume = (key: string, limit: number) => RateLimit.use((rateLimit) => rateLimit.consume(key, limit))

describe("RateLimit in process", () => {
  it.effect("counts down, refuses the request over the limit, and gives the budget back when the window closes", () =>
    Effect.gen(function* () {
      const decisions = [yield* consume("k1", 3), yield* consume("k1", 3), yield* consume("k1", 3)]
      expect(decisions.map((decision) => [decision.allowed, decision.limit, decision.remaining])).toEqual([
        [true, 3, 2],
        [true, 3, 1],
        [true, 3, 0]
      ])
      // Each accepted request keeps the window open 60 s / limit longer; a full budget spent at once, 60 s.
      expect(decisions.map((decision) => decision.resetSeconds)).toEqual([20, 40, 60])

      const refused = yield* consume("k1", 3)
      expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 60, retryAfterSeconds: 60 })

      // Refused requests do not lengthen the window.
      yield* TestClock.adjust("30 seconds")
      const later = yield* consume("k1", 3)
      expect([later.allowed, later.retryAfterSeconds]).toEqual([false, 30])

      yield* TestClock.adjust("30 seconds")
      const reopened = yield* consume("k1", 3)
      expect([reopened.allowed, reopened.remaining]).toEqual([true, 2])
    }).pipe(Effect.provide(RateLimit.layerMemory))
  )

  it.effect("a caller below the rate never runs out", () =>
    Effect.gen(function* () {
      for (let request = 0; request < 10; request++) {
        const decision = yield* consume("slow", 3)
        expect([decision.allowed, decision.remaining]).toEqual([true, 2])
        yield* TestClock.adjust("21 seconds")
      }
    }).pipe(Effect.provide(RateLimit.layerMemory))
  )

  it.effect("keys have their own budgets", () =>
    Effect.gen(function* () {
      yield* consume("a", 1)
      expect((yield* consume("a", 1)).allowed).toBe(false)
      expect((yield* consume("b", 1)).allowed).toBe(true)
    }).pipe(Effect.provide(RateLimit.layerMemory))
  )

  it.effect("Retry-After is whole seconds, at least 1", () =>
    Effect.gen(function* () {
      yield* consume("fast", 1000)
      yield* TestClock.adjust("59.99 seconds")
      // 1000 a minute: the first request keeps the window open 60 ms; it has closed, the budget is back.
      expect((yield* consume("fast", 1000)).remaining).toBe(999)
      for (let request = 1; request < 1000; request++) yield* consume("fast", 1000)
      const refused = yield* consume("fast", 1000)
      expect(refused.allowed).toBe(false)
      expect(refused.retryAfterSeconds).toBe(60)
      yield* TestClock.adjust("59.9 seconds")
      const almost = yield* consume("fast", 1000)
      expect([almost.allowed, almost.retryAfterSeconds, almost.resetSeconds]).toEqual([false, 1, 1])
    }).pipe(Effect.provide(RateLimit.layerMemory))
  )
})

describe("RateLimit when the shared store fails", () => {
  const storeError = new RateLimiter.RateLimiterError({
    reason: new RateLimiter.RateLimitStoreError({ message: "store down" })
  })
  const store = (fixedWindow: RateLimiter.RateLimiterStore["Service"]["fixedWindow"]) =>
    RateLimit.layerStore.pipe(
      Layer.provide(
        Layer.succeed(RateLimiter.RateLimiterStore, {
          fixedWindow,
          tokenBucket: () => Effect.fail(storeError),
          adaptiveConsume: () => Effect.fail(storeError),
          adaptiveFeedback: () => Effect.fail(storeError)
        })
      )
    )

  it.effect("counts in this process instead, still enforcing the limit", () =>
    Effect.gen(function* () {
      expect(yield* consume("k", 2)).toMatchObject({ allowed: true, remaining: 1 })
      expect(yield* consume("k", 2)).toMatchObject({ allowed: true, remaining: 0 })
      expect(yield* consume("k", 2)).toMatchObject({ allowed: false, retryAfterSeconds: 60 })
    }).pipe(Effect.provide(store(() => Effect.fail(storeError))))
  )

  it.live("does not wait for a store that does not answer", () =>
    Effect.gen(function* () {
      const started = Date.now()
      expect(yield* consume("k", 2)).toMatchObject({ allowed: true, remaining: 1 })
      expect(Date.now() - started).toBeLessThan(5_000)
    }).pipe(Effect.provide(store(() => Effect.never)))
  )
})

describe("RateLimit over Redis that does not answer", () => {
  it.live("stops the start, without showing the password of the URL", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Layer.build(RateLimit.layerRedis({ url: Redacted.make("redis://kassa:s3cr3t-pw@127.0.0.1:1") }))
      )
      assert(Exit.isFailure(exit))
      expect(Cause.hasDies(exit.cause)).toBe(true)
      expect(Cause.pretty(exit.cause)).not.toContain("s3cr3t-pw")
    })
  )
})

describe.each(redisStores)("RateLimit over %s", () => {
  const prefix = `kassa-test:${crypto.randomUUID()}:`
  const layer = (keyPrefix: string) => RateLimit.layerRedis({ url: Redacted.make(redisUrl), prefix: keyPrefix })

  it.live("two limiters over the same Redis and prefix share one budget", () =>
    Effect.gen(function* () {
      // Two layers built apart: two Redis clients, as in two server processes.
      const a = Context.get(yield* Layer.build(layer(prefix)), RateLimit)
      const b = Context.get(yield* Layer.build(layer(prefix)), RateLimit)
      expect(yield* a.consume("shared", 3)).toMatchObject({ allowed: true, remaining: 2 })
      expect(yield* b.consume("shared", 3)).toMatchObject({ allowed: true, remaining: 1 })
      expect(yield* a.consume("shared", 3)).toMatchObject({ allowed: true, remaining: 0 })
      const refused = yield* b.consume("shared", 3)
      expect(refused.allowed).toBe(false)
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60)
    })
  )

  it.live("another prefix is another budget", () =>
    Effect.gen(function* () {
      const own = yield* consume("separate", 1).pipe(Effect.provide(layer(prefix)))
      const other = yield* consume("separate", 1).pipe(Effect.provide(layer(`${prefix}other:`)))
      expect([own.allowed, other.allowed]).toEqual([true, true])
      const again = yield* consume("separate", 1).pipe(Effect.provide(layer(prefix)))
      expect(again.allowed).toBe(false)
    })
  )
})

// --- over HTTP -------------------------------------------------------------------------------------------------------

const probe = "/api/v1/payments/00000000-0000-4000-8000-000000000000"
type Answer = Awaited<ReturnType<RunningServer["request"]>>

const rateHeaders = (answer: Answer) => ({
  limit: answer.headers.get("ratelimit-limit"),
  remaining: answer.headers.get("ratelimit-remaining"),
  reset: Number(answer.headers.get("ratelimit-reset"))
})

const expectRateLimited = (answer: Answer, limit: number) => {
  expect(answer.status).toBe(429)
  expect(answer.body).toEqual({ error: { code: "rate_limited", message: expect.any(String) } })
  const retryAfter = answer.headers.get("retry-after")
  expect(retryAfter).toMatch(/^\d+$/)
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
  expect(Number(retryAfter)).toBeLessThanOrEqual(60)
  expect(rateHeaders(answer)).toMatchObject({ limit: String(limit), remaining: "0" })
  expect(answer.headers.get("request-id")).toMatch(/^req_/)
}

describe.each(databases)("rate limit over HTTP on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  it("120 a minute by default, reported on every response", async () => {
    const app = await server.createApplication()
    const answer = await server.request(probe, { key: app.testKey })
    expect(rateHeaders(answer)).toMatchObject({ limit: "120", remaining: "119" })
  })

  it("the application's own limit: the request over it gets 429 with Retry-After", async () => {
    const app = await server.createApplication({ rate_limit_per_minute: 3 })
    const answers = [
      await server.request(probe, { key: app.testKey }),
      await server.request(probe, { key: app.testKey }),
      await server.request(probe, { key: app.testKey })
    ]
    for (const answer of answers) expect([401, 403, 429]).not.toContain(answer.status)
    expect(answers.map((answer) => rateHeaders(answer).remaining)).toEqual(["2", "1", "0"])
    for (const answer of answers) {
      expect(rateHeaders(answer).limit).toBe("3")
      expect(rateHeaders(answer).reset).toBeGreaterThanOrEqual(1)
      expect(rateHeaders(answer).reset).toBeLessThanOrEqual(60)
    }
    expectRateLimited(await server.request(probe, { key: app.testKey }), 3)
    expectRateLimited(await server.request("/api/v1/payments", { key: app.testKey }), 3)
  })

  it("every authenticated request counts, also those the endpoint refuses", async () => {
    const app = await server.createApplication({ rate_limit_per_minute: 2 })
    // Not JSON: refused after authentication with 400 `http_error`.
    const broken = await server.request("/api/v1/payments", { method: "POST", key: app.testKey, body: "{not json" })
    expect(broken.status).toBe(400)
    expect(rateHeaders(broken)).toMatchObject({ limit: "2", remaining: "1" })
    const invalid = await server.request("/api/v1/payments", { method: "POST", key: app.testKey, body: {} })
    expect(invalid.status).toBeGreaterThanOrEqual(400)
    expect(rateHeaders(invalid)).toMatchObject({ limit: "2", remaining: "0" })
    expectRateLimited(await server.request(probe, { key: app.testKey }), 2)
  })

  it("the limit is per key: another key of the application has its own budget", async () => {
    const app = await server.createApplication({ rate_limit_per_minute: 1 })
    await server.request(probe, { key: app.testKey })
    expectRateLimited(await server.request(probe, { key: app.testKey }), 1)
    const live = await server.request(probe, { key: app.liveKey })
    expect([401, 403, 429]).not.toContain(live.status)
    expect(rateHeaders(live)).toMatchObject({ limit: "1", remaining: "0" })
  })

  it("refusals before the rate limit are not counted and carry no RateLimit headers", async () => {
    const app = await server.createApplication({ rate_limit_per_minute: 1, ip_allowlist: ["203.0.113.7"] })
    const refused = await server.request(probe, { key: app.testKey })
    expect(refused.status).toBe(403)
    expect(refused.headers.get("ratelimit-limit")).toBeNull()
    expect((await server.request(probe)).headers.get("ratelimit-limit")).toBeNull()
  })
})

/** The same key (id and hash) in a second server's database, so both servers authenticate it. */
const shareKey = async (from: RunningServer, app: TestApplication, to: RunningServer) => {
  const [row] = await from.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql`SELECT id, key_hash FROM api_keys WHERE application_id = ${app.application.id} AND mode = 'test'`
    })
  )
  assert(row !== undefined)
  const copy = await to.createApplication({ rate_limit_per_minute: app.application.rate_limit_per_minute })
  await to.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`
        UPDATE api_keys SET id = ${String(row.id)}, key_hash = ${String(row.key_hash)}
        WHERE application_id = ${copy.application.id} AND mode = 'test'
      `
    })
  )
}

describe.each(databases.flatMap((database) => redisStores.map((store) => [database, store] as const)))(
  "rate limit shared by two servers on %s through %s",
  (database) => {
    let first: RunningServer
    let second: RunningServer
    beforeAll(async () => {
      const settings = { redisUrl: Option.some(Redacted.make(redisUrl)) }
      first = await startServer(database, settings)
      second = await startServer(database, settings)
    })
    afterAll(async () => {
      await first.close()
      await second.close()
    })

    it("one budget per key across servers", async () => {
      const app = await first.createApplication({ rate_limit_per_minute: 3 })
      await shareKey(first, app, second)
      const answers = [
        await first.request(probe, { key: app.testKey }),
        await second.request(probe, { key: app.testKey }),
        await first.request(probe, { key: app.testKey })
      ]
      expect(answers.map((answer) => answer.status).filter((status) => [401, 403, 429].includes(status))).toEqual([])
      expect(answers.map((answer) => rateHeaders(answer).remaining)).toEqual(["2", "1", "0"])
      expectRateLimited(await second.request(probe, { key: app.testKey }), 3)
      expectRateLimited(await first.request(probe, { key: app.testKey }), 3)
    })
  }
)

describe.each(databases)("rate limit without Redis on %s", (database) => {
  let first: RunningServer
  let second: RunningServer
  beforeAll(async () => {
    first = await startServer(database)
    second = await startServer(database)
  })
  afterAll(async () => {
    await first.close()
    await second.close()
  })

  it("each server process counts on its own", async () => {
    const app = await first.createApplication({ rate_limit_per_minute: 1 })
    await shareKey(first, app, second)
    await first.request(probe, { key: app.testKey })
    expectRateLimited(await first.request(probe, { key: app.testKey }), 1)
    const other = await second.request(probe, { key: app.testKey })
    expect(other.status).not.toBe(429)
    expect(rateHeaders(other)).toMatchObject({ limit: "1", remaining: "0" })
  })
})
