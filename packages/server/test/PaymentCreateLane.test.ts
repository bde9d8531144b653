/**
 * The create lane (http/PaymentCreateLane, issue 23) answers `POST /api/v1/payments` below effect's router; it must
 * answer exactly as the contract's route does. Each request is sent to the lane (as is) and to the router (the same
 * request with an empty query, `/api/v1/payments?`, which the lane leaves alone and the route reads as none). Refusals
 * must agree byte for byte; two creates make two payments, so their answers must agree once the payment's own values
 * (id, timestamps, checkout URL, `Location`) are set aside. Headers must agree but for the request's id, the date and
 * the rate-limit figures.
 */
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Lane from "../src/http/Lane.ts"
import * as PaymentCreateLane from "../src/http/PaymentCreateLane.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

type Answer = Awaited<ReturnType<RunningServer["request"]>>

const lanes = () => Lane.taken[PaymentCreateLane.route] ?? 0
const named = new Set(["request-id", "date", "connection", "keep-alive", "location"])
const counted = new Set(["ratelimit-remaining", "ratelimit-reset", "retry-after"])
const headersOf = (answer: Answer) =>
  Object.fromEntries([...answer.headers].filter(([name]) => !named.has(name) && !counted.has(name)))

const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const instant = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g
const ownReference = /lane-\d+-\d+-\d{6}/g

/** An answer without what differs between two payments made from the same body: ids, instants, references. */
const comparable = (answer: Answer) =>
  answer.text.replace(uuid, "<id>").replace(instant, "<instant>").replace(ownReference, "<reference>")

interface Sent {
  readonly body?: string
  readonly headers?: Record<string, string>
}

/** The lane's answer and the router's to the same request, in that order. */
const both = async (server: RunningServer, lane: Sent, router: Sent = lane) => {
  const send = (path: string, { body, headers }: Sent) =>
    server.request(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body })
    })
  const before = lanes()
  const viaLane = await send("/api/v1/payments", lane)
  expect(lanes(), "the lane took the request").toBe(before + 1)
  const viaRouter = await send("/api/v1/payments?", router)
  expect(lanes(), "the router's request went to the router").toBe(before + 1)
  return { lane: viaLane, router: viaRouter }
}

const expectSame = ({ lane, router }: { lane: Answer; router: Answer }) => {
  expect(lane.status, lane.text).toBe(router.status)
  expect(comparable(lane)).toBe(comparable(router))
  expect(headersOf(lane)).toEqual(headersOf(router))
  expect(lane.headers.get("location")?.replace(uuid, "<id>")).toBe(
    router.headers.get("location")?.replace(uuid, "<id>")
  )
  expect(lane.headers.get("request-id")).toMatch(/^req_[0-9a-f]{32}$/)
  for (const name of counted) {
    expect(lane.headers.get(name) === null, name).toBe(router.headers.get(name) === null)
  }
}

let references = 0
// Of one length, so that two answers' Content-Length agree.
const reference = () => `lane-${process.pid}-${Date.now()}-${String(references++).padStart(6, "0")}`

describe.each(databases)("the create lane on %s", (database) => {
  let server: RunningServer
  let auth: Record<string, string>
  beforeAll(async () => {
    server = await startServer(database)
    const { testKey } = await server.createApplication({
      rate_limit_per_minute: 100_000,
      currencies: ["EUR", "USD", "JPY"]
    })
    auth = { authorization: `Bearer ${testKey}` }
  })
  afterAll(() => server.close())

  it("creates as the contract does, for bodies valid and not", async () => {
    const seen = new Set<number>()
    const field = fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: -5, max: 20_000_000 }),
      fc.string({ maxLength: 12 }),
      fc.constant(null),
      fc.boolean()
    )
    const valid = fc.record(
      {
        amount: fc.integer({ min: 100, max: 10_000_000 }),
        currency: fc.constantFrom("EUR", "USD", "JPY"),
        method: fc.constant("card"),
        description: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: null }),
        locale: fc.constantFrom("en", "de", "nl"),
        return_url: fc.constant("http://localhost/done"),
        metadata: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 }),
        customer: fc.record({ email: fc.constant("a@example.com") })
      },
      { requiredKeys: ["amount"] }
    )
    const anything = fc.record(
      {
        amount: fc.oneof(fc.integer({ min: 100, max: 10_000_000 }), field),
        currency: fc.oneof(fc.constantFrom("EUR", "USD", "JPY", "CHF", "eur"), field),
        method: fc.oneof(fc.constantFrom("card", "ideal", "paypal"), field),
        description: fc.oneof(fc.string({ maxLength: 30 }), field),
        locale: fc.oneof(fc.constantFrom("en", "de", "xx"), field),
        return_url: fc.oneof(fc.constantFrom("http://localhost/done", "https://evil.example/"), field),
        metadata: fc.oneof(
          fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 }),
          field
        ),
        customer: fc.oneof(fc.record({ email: fc.constantFrom("a@example.com", "not-an-email") }), field),
        unknown_field: field
      },
      { requiredKeys: [] }
    )
    await fc.assert(
      fc.asyncProperty(fc.oneof(valid, anything), fc.boolean(), async (fields, simulateRefusal) => {
        const headers = simulateRefusal ? { ...auth, "kassa-simulate": "provider_error" } : auth
        const answers = await both(
          server,
          { body: JSON.stringify({ ...fields, order_reference: reference() }), headers },
          { body: JSON.stringify({ ...fields, order_reference: reference() }), headers }
        )
        expectSame(answers)
        seen.add(answers.lane.status)
      }),
      {
        numRuns: 40,
        examples: [
          [{ amount: 1000, currency: "EUR" }, true],
          [{ amount: 1000, method: "card" }, false]
        ]
      }
    )
    // Made, refused by the (simulated) provider, refused by the rules: all three were compared.
    expect([...seen].sort()).toEqual(expect.arrayContaining([201, 422, 502]))
  })

  it("refuses what is not a JSON object as the contract does", async () => {
    for (const body of ["", "{", "null", "[]", '"text"', "12", '{"amount": 1000,}', "\uFEFF{}", "{}"]) {
      expectSame(await both(server, { body, headers: auth }))
    }
  })

  it("refuses headers as the contract does", async () => {
    const body = () => JSON.stringify({ amount: 1000, order_reference: reference() })
    for (const extra of [
      { "idempotency-key": "x".repeat(256) },
      { "idempotency-key": "ünïcode" },
      { "kassa-simulate": "something_else" }
    ]) {
      const headers = { ...auth, ...extra }
      expectSame(await both(server, { body: body(), headers }, { body: body(), headers }))
    }
  })

  it("answers an Idempotency-Key as the contract does: first answer, replay, another body", async () => {
    const body = JSON.stringify({ amount: 4200, order_reference: reference() })
    const headers = { ...auth, "idempotency-key": `key-${reference()}` }
    // The lane makes the payment; the router replays it; the lane replays it too, byte for byte.
    const first = await both(server, { body, headers })
    expect(first.lane.status).toBe(201)
    expect(first.router.headers.get("idempotent-replayed")).toBe("true")
    expect(first.router.text).toBe(first.lane.text)
    const again = await both(server, { body, headers })
    expect(again.lane.text).toBe(first.lane.text)
    expect(headersOf(again.lane)).toEqual(headersOf(again.router))
    const reused = await both(server, { body: JSON.stringify({ amount: 1, order_reference: "other" }), headers })
    expect((reused.lane.body as { error: { code: string } }).error.code).toBe("idempotency_key_reused")
    expectSame(reused)
  })

  it("refuses a caller as the contract does", async () => {
    const suspended = await server.createApplication({ status: "suspended" })
    const limited = await server.createApplication({ rate_limit_per_minute: 1 })
    const body = JSON.stringify({ amount: 1000, order_reference: reference() })
    // The limited key's one request a minute is spent here: both answers below are its 429.
    const spent = await server.request("/api/v1/payments", { method: "POST", key: limited.testKey, body })
    expect(spent.status).toBe(201)
    for (const headers of [
      {},
      { authorization: "Bearer nope" },
      { authorization: `Bearer ${suspended.testKey}` },
      { authorization: `Bearer ${limited.testKey}` }
    ]) {
      const answers = await both(server, { body, headers })
      expect(answers.lane.status).toBeGreaterThanOrEqual(400)
      expectSame(answers)
    }
  })

  it("leaves to the router what it must", async () => {
    const before = lanes()
    const body = JSON.stringify({ amount: 1000, order_reference: reference() })
    const answers = [
      await server.request("/api/v1/payments", {
        method: "POST",
        headers: { ...auth, "content-type": "text/plain" },
        body
      }),
      await server.request("/api/v1/payments", {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ amount: 1000, order_reference: reference(), description: "x".repeat(1024 * 1024) })
      })
    ]
    expect(answers.map((answer) => answer.status)).toEqual([415, 413])
    expect(lanes()).toBe(before)
  })
})
