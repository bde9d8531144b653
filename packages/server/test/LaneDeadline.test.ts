/**
 * A lane's request past its deadline (issue 23) is answered as the router answers one: 500 `server_error` with
 * `Retry-After`, and — the request having been counted before its work got stuck — the rate-limit budget's headers.
 * The fetch lane reads the payment within authentication's statement, so with `payments` held it is stuck before it
 * is counted: the same 500 without the budget.
 * A request whose work fails logs its 500 with the caller (application, key, mode), through a lane or the router.
 * PostgreSQL only: authentication must get through (a lock on `payments` holds only the work), which PGlite's single
 * connection cannot give.
 */
import { Duration, Logger, References } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Lane from "../src/http/Lane.ts"
import * as PaymentCreateLane from "../src/http/PaymentCreateLane.ts"
import * as PaymentFetchLane from "../src/http/PaymentFetchLane.ts"
import { holdDatabase } from "./support/HeldDatabase.ts"
import { createPayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

type Answer = Awaited<ReturnType<RunningServer["request"]>>

const varying = new Set(["request-id", "date", "connection", "keep-alive", "ratelimit-remaining", "ratelimit-reset"])
const headersOf = (answer: Answer) => Object.fromEntries([...answer.headers].filter(([name]) => !varying.has(name)))

const expectOverDeadline = (answer: Answer, counted: boolean) => {
  expect(answer.status).toBe(500)
  expect(answer.body).toMatchObject({ error: { code: "server_error" } })
  expect(answer.headers.get("ratelimit-limit")).toBe(counted ? "100000" : null)
  if (counted) expect(answer.headers.get("ratelimit-remaining")).toMatch(/^\d+$/)
}

const expectSameOverDeadline = (lane: Answer, router: Answer) => {
  for (const answer of [lane, router]) expectOverDeadline(answer, true)
  expect(lane.text).toBe(router.text)
  expect(headersOf(lane)).toEqual(headersOf(router))
}

const withoutBudget = (answer: Answer) =>
  Object.fromEntries(Object.entries(headersOf(answer)).filter(([name]) => !name.startsWith("ratelimit")))

describe.runIf(databases.includes("postgres"))("a lane's request past its deadline", () => {
  let server: RunningServer
  let testKey: string
  let paymentId: string
  beforeAll(async () => {
    server = await startServer("postgres", { requestDeadline: Duration.seconds(1) })
    testKey = (await server.createApplication({ rate_limit_per_minute: 100_000 })).testKey
    paymentId = ((await createPayment(server, testKey)).body as { id: string }).id
  })
  afterAll(() => server.close())

  it("is answered 500 with the budget's headers, as the router answers it, for the fetch and the create", async () => {
    const taken = (route: string) => Lane.taken[route] ?? 0
    const [fetchesBefore, createsBefore] = [taken(PaymentFetchLane.route), taken(PaymentCreateLane.route)]
    const release = await holdDatabase(server, "postgres", "payments")
    let answers: Array<Answer>
    try {
      const create = (path: string) =>
        server.request(path, {
          method: "POST",
          key: testKey,
          body: { amount: 1000, order_reference: `held-${path.length}` }
        })
      answers = await Promise.all([
        server.request(`/api/v1/payments/${paymentId}`, { key: testKey }),
        server.request(`/api/v1/payments/${paymentId}?`, { key: testKey }),
        create("/api/v1/payments"),
        create("/api/v1/payments?")
      ])
    } finally {
      await release()
    }
    expect([taken(PaymentFetchLane.route), taken(PaymentCreateLane.route)]).toEqual([
      fetchesBefore + 1,
      createsBefore + 1
    ])
    const [laneFetch, routerFetch, laneCreate, routerCreate] = answers as [Answer, Answer, Answer, Answer]
    expectSameOverDeadline(laneCreate, routerCreate)
    // The lane reads the payment in authentication's own statement (decisions, issue 23 session 17): with `payments`
    // held it is stuck before it is counted, so its 500 carries no budget; the router's was counted before its read.
    expectOverDeadline(laneFetch, false)
    expectOverDeadline(routerFetch, true)
    expect(laneFetch.text).toBe(routerFetch.text)
    expect(withoutBudget(laneFetch)).toEqual(withoutBudget(routerFetch))
  })
})

describe.runIf(databases.includes("postgres"))("a request whose work fails", () => {
  it("logs its 500 with the caller's application, key and mode, through the lane and the router alike", async () => {
    const lines: Array<{ readonly message: string; readonly annotations: Record<string, unknown> }> = []
    const logger = Logger.make(({ message, fiber }) => {
      lines.push({
        message: String(Array.isArray(message) ? message[0] : message),
        annotations: fiber.getRef(References.CurrentLogAnnotations)
      })
    })
    // The insert waits on the held table until the statement timeout fails it, well before the deadline.
    const server = await startServer(
      "postgres",
      { requestDeadline: Duration.seconds(10), databaseStatementTimeout: Duration.millis(300) },
      { logger }
    )
    try {
      const { application, testKey } = await server.createApplication()
      const createsBefore = Lane.taken[PaymentCreateLane.route] ?? 0
      const create = (path: string) =>
        server.request(path, { method: "POST", key: testKey, body: { amount: 1000, order_reference: `held${path}` } })
      const release = await holdDatabase(server, "postgres", "payments")
      // The lane takes the first, the router the second (a query string).
      const answers = await Promise.all([create("/api/v1/payments"), create("/api/v1/payments?")]).finally(release)
      expect(Lane.taken[PaymentCreateLane.route]).toBe(createsBefore + 1)
      for (const answer of answers) {
        expect(answer.status).toBe(500)
        const failed = lines.find(
          (line) =>
            line.message === "Request failed" && line.annotations.request_id === answer.headers.get("request-id")
        )
        expect(failed?.annotations).toMatchObject({
          application_id: application.id,
          api_key_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          mode: "test"
        })
      }
    } finally {
      await server.close()
    }
  }, 30_000)
})
