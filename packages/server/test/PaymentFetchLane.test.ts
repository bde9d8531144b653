/**
 * The fetch lane (http/PaymentFetchLane, issue 23) answers `GET /api/v1/payments/{id}` below effect's router; it must
 * answer exactly as the contract's route does. Every request here is sent twice: as is (the lane takes it) and with
 * an empty query (`…/{id}?`, which the lane leaves to the router and the route reads as no query), and
 * the two answers must agree byte for byte in the body and in every header but those that name the request
 * (`Request-Id`, `Date`) or count it (the `RateLimit-*` figures and `Retry-After` move with every request the
 * budget counts: both answers carry the same ones, as whole numbers).
 */
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Lane from "../src/http/Lane.ts"
import * as PaymentFetchLane from "../src/http/PaymentFetchLane.ts"
import { createPayment, eventsOf, query } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

/** Requests the lane has taken so far. */
const lanes = () => Lane.taken[PaymentFetchLane.route] ?? 0

type Answer = Awaited<ReturnType<RunningServer["request"]>>

const named = new Set(["request-id", "date", "connection", "keep-alive"])
const counted = new Set(["ratelimit-remaining", "ratelimit-reset", "retry-after"])

const headersOf = (answer: Answer) =>
  Object.fromEntries([...answer.headers].filter(([name]) => !named.has(name) && !counted.has(name)))

/** The lane's answer and the router's to the same request, sent in that order. */
const both = async (server: RunningServer, path: string, headers: Record<string, string> = {}) => {
  const before = lanes()
  const lane = await server.request(path, { headers })
  const tookIt = lanes() === before + 1
  const router = await server.request(`${path}?`, { headers })
  expect(lanes(), "the router's request went to the router").toBe(before + 1)
  return { lane, router, tookIt }
}

const expectSame = ({ lane, router, tookIt }: Awaited<ReturnType<typeof both>>) => {
  expect(tookIt, "the lane took the request").toBe(true)
  expect(lane.status).toBe(router.status)
  expect(lane.text).toBe(router.text)
  expect(headersOf(lane)).toEqual(headersOf(router))
  expect(lane.headers.get("request-id")).toMatch(/^req_[0-9a-f]{32}$/)
  for (const name of counted) {
    const [a, b] = [lane.headers.get(name), router.headers.get(name)]
    expect(a === null, name).toBe(b === null)
    if (a !== null) expect(`${a} ${b}`, name).toMatch(/^\d+ \d+$/)
  }
}

const path = (id: string) => `/api/v1/payments/${id}`
const unknownId = "00000000-0000-4000-8000-000000000000"

describe.each(databases)("the fetch lane on %s", (database) => {
  let server: RunningServer
  let testKey: string
  let liveKey: string
  beforeAll(async () => {
    server = await startServer(database)
    ;({ testKey, liveKey } = await server.createApplication({
      rate_limit_per_minute: 100_000,
      currencies: ["EUR", "USD", "JPY", "GBP"]
    }))
  })
  afterAll(() => server.close())

  it("answers every payment as the contract does, byte for byte", async () => {
    const body = fc.record(
      {
        amount: fc.integer({ min: 100, max: 10_000_000 }),
        currency: fc.constantFrom("EUR", "USD", "JPY", "GBP"),
        description: fc.option(fc.string({ minLength: 1, maxLength: 40 }), { nil: null }),
        metadata: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 }), {
          maxKeys: 3
        }),
        customer: fc.record({ name: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: null }) }),
        locale: fc.constantFrom("en", "de", "nl", "fr")
      },
      { requiredKeys: ["amount", "currency"] }
    )
    await fc.assert(
      fc.asyncProperty(
        body,
        fc.constantFrom("pending", "paid", "failed", "expired", "cancelled"),
        async (fields, outcome) => {
          const created = await createPayment(server, testKey, fields)
          expect(created.status, created.text).toBe(201)
          const id = (created.body as { id: string }).id
          if (outcome !== "pending") {
            const settled = await server.request(
              outcome === "cancelled" ? `${path(id)}/cancel` : `/api/v1/test/payments/${id}/simulate`,
              { method: "POST", key: testKey, body: outcome === "cancelled" ? {} : { outcome } }
            )
            expect(settled.status, settled.text).toBe(200)
          }
          const answers = await both(server, path(id), { authorization: `Bearer ${testKey}` })
          expect(answers.lane.status).toBe(200)
          expectSame(answers)
        }
      ),
      { numRuns: 12 }
    )
  })

  it("answers a refunded payment, with its refunds, as the contract does", async () => {
    const id = ((await createPayment(server, testKey, { amount: 5000 })).body as { id: string }).id
    await server.request(`/api/v1/test/payments/${id}/simulate`, {
      method: "POST",
      key: testKey,
      body: { outcome: "paid" }
    })
    const refund = await server.request(`${path(id)}/refunds`, { method: "POST", key: testKey, body: { amount: 1200 } })
    expect(refund.status).toBe(201)
    const answers = await both(server, path(id), { authorization: `Bearer ${testKey}` })
    expect((answers.lane.body as { refunds: Array<unknown> }).refunds).toHaveLength(1)
    expectSame(answers)
  })

  it("answers a payment past its expiry as the contract does: expired by the lane's read, with its event", async () => {
    const id = ((await createPayment(server, testKey)).body as { id: string }).id
    // Due: still pending in the database, its expiry passed (the sweeper has not come by).
    await query(server, (sql) => sql`UPDATE payments SET expires_at = now() - interval '1 minute' WHERE id = ${id}`)
    const answers = await both(server, path(id), { authorization: `Bearer ${testKey}` })
    expect(answers.lane.body).toMatchObject({ id, status: "expired" })
    expectSame(answers)
    expect((await eventsOf(server, id)).map((event) => event.event)).toEqual(["payment.expired"])
  })

  it("refuses as the contract does: unknown, another mode's, another application's payment", async () => {
    const id = ((await createPayment(server, testKey)).body as { id: string }).id
    const other = await server.createApplication()
    for (const [key, target] of [
      [testKey, unknownId],
      [liveKey, id],
      [other.testKey, id]
    ] as const) {
      const answers = await both(server, path(target), { authorization: `Bearer ${key}` })
      expect(answers.lane.status).toBe(404)
      expectSame(answers)
    }
  })

  it("refuses a caller as the contract does, in decisions §5's order", async () => {
    const id = ((await createPayment(server, testKey)).body as { id: string }).id
    const suspended = await server.createApplication({ status: "suspended" })
    const walled = await server.createApplication({ ip_allowlist: ["203.0.113.0/24"] })
    const cases: Array<[Record<string, string>, number]> = [
      [{}, 401],
      [{ authorization: "Basic abc" }, 401],
      [{ authorization: "Bearer " }, 401],
      [{ authorization: "Bearer pk_test_unknown" }, 401],
      [{ authorization: `Bearer ${suspended.testKey}` }, 403],
      [{ authorization: `Bearer ${walled.testKey}` }, 403]
    ]
    for (const [headers, status] of cases) {
      const answers = await both(server, path(id), headers)
      expect(answers.lane.status).toBe(status)
      expectSame(answers)
    }
  })

  it("counts against the key's budget like every other request, and answers 429 as the contract does", async () => {
    const limited = await server.createApplication({ rate_limit_per_minute: 3 })
    const id = ((await createPayment(server, limited.testKey)).body as { id: string }).id
    // The create spent one of three: the lane's request and the router's spend the other two.
    const allowed = await both(server, path(id), { authorization: `Bearer ${limited.testKey}` })
    expect(allowed.lane.status).toBe(200)
    expectSame(allowed)
    const refused = await both(server, path(id), { authorization: `Bearer ${limited.testKey}` })
    expect(refused.lane.status).toBe(429)
    expectSame(refused)
  })

  it("leaves every other request to the router", async () => {
    const id = ((await createPayment(server, testKey)).body as { id: string }).id
    const before = lanes()
    const auth = { authorization: `Bearer ${testKey}` }
    const answers = [
      await server.request(`${path(id)}?expand=refunds`, { headers: auth }),
      await server.request(`${path(id)}/`, { headers: auth }),
      await server.request(path(id.toUpperCase()), { headers: auth }),
      await server.request(path("not-an-id"), { headers: auth }),
      await server.request(path(id), { method: "HEAD", headers: auth })
    ]
    expect(lanes()).toBe(before)
    for (const answer of answers) {
      expect(answer.status).toBeLessThan(500)
      expect(answer.headers.get("request-id")).toMatch(/^req_[0-9a-f]{32}$/)
    }
  })
})
