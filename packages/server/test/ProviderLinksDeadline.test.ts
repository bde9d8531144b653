/**
 * Linking fits its request (issue 21 §10, "Linking outlives its request"), on both databases, with the stateful fake
 * Stripe answering slowly: the link's provider calls share a budget shorter than the request deadline, so a PUT
 * whose calls do not fit is answered 502 `provider_error` ("try again") before the deadline, stores nothing, and
 * leaves no webhook endpoint at Stripe: the endpoint the attempt made is deleted in the background, whether its answer
 * came late, never came (found again by the link's Idempotency-Key), or the store after it never finished.
 */
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AuditLog } from "../src/audit/AuditLog.ts"
import { linkBudget } from "../src/providers/ProviderLinking.ts"
import { apiVersion } from "../src/providers/StripeConnector.ts"
import { eventually } from "./support/Eventually.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { holdDatabase } from "./support/HeldDatabase.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

/** A server (with its own fake Stripe) and what the tests ask of it. */
const harness = (database: (typeof databases)[number], settings: { deadline?: number; callTimeout?: number }) => {
  const state = {} as { fake: FakeStripe; server: RunningServer }
  beforeAll(async () => {
    state.fake = await startFakeStripe({ apiVersion })
    state.server = await startServer(
      database,
      {
        stripeApiUrl: state.fake.url,
        ...(settings.deadline === undefined ? {} : { requestDeadline: Duration.seconds(settings.deadline) })
      },
      settings.callTimeout === undefined ? {} : { stripeCallTimeout: Duration.seconds(settings.callTimeout) }
    )
  })
  afterAll(async () => {
    await state.server?.close()
    await state.fake?.close()
  })
  const link = async (applicationId: string, secretKey: string) => {
    const started = performance.now()
    const response = await operatorRequest(state.server, `/applications/${applicationId}/provider-account`, {
      method: "PUT",
      body: { provider: "stripe", secret_key: secretKey }
    })
    return { ...response, seconds: (performance.now() - started) / 1000 }
  }
  const stored = () =>
    state.server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ application_id: string; webhook_endpoint_id: string | null }>`
          SELECT application_id, webhook_endpoint_id FROM provider_links
        `.pipe(Effect.orDie)
      })
    )
  /** Endpoints at the fake that no stored link owns: what a failed attempt left behind. */
  const orphans = async () => {
    const owned = new Set((await stored()).map((row) => row.webhook_endpoint_id))
    return state.fake.webhookEndpoints().filter((endpoint) => !owned.has(String(endpoint.id)))
  }
  const creates = () =>
    state.fake.requests.filter((request) => request.method === "POST" && request.path === "/v1/webhook_endpoints")
  return { state, link, stored, orphans, creates }
}

describe.each(databases)("linking within the request deadline on %s", (database) => {
  describe("the issue's case: the default 15 s deadline, Stripe answering each call after 8 s", () => {
    const { state, link, stored, orphans, creates } = harness(database, {})

    it("answers 502 before the deadline, stores nothing, deletes the endpoint it made; the retry links with one endpoint", async () => {
      const { application } = await state.server.createApplication()
      const account = state.fake.addAccount({ livemode: true })
      // Each inside the 10 s call bound; together beyond the link's budget (12 s of the 15 s deadline).
      state.fake.inject({ method: "GET", path: "/v1/account" }, { kind: "delay-after", ms: 8000 })
      state.fake.inject({ method: "POST", path: "/v1/webhook_endpoints" }, { kind: "delay-after", ms: 8000 })
      const slow = await link(application.id, account.key)
      expect(slow.status, slow.text).toBe(502)
      expect(slow.seconds).toBeLessThan(14)
      const { error } = slow.body as ErrorBody
      expect(error.code).toBe("provider_error")
      expect(error.message).toContain("Stripe did not answer within 12s")
      expect(error.message).toContain("Try again")
      expect(await stored()).toEqual([])
      // Stripe made the endpoint (its answer was on its way): deleted once that answer came.
      expect(creates()).toHaveLength(1)
      await eventually(async () => (await orphans()).length === 0, "the endpoint's deletion", 15)

      const retried = await link(application.id, account.key)
      expect(retried.status, retried.text).toBe(200)
      expect(state.fake.webhookEndpoints().map((endpoint) => endpoint.id)).toEqual([
        (retried.body as { webhook_endpoint_id: string }).webhook_endpoint_id
      ])
      expect(await orphans()).toEqual([])
    }, 45_000)
  })

  describe("a 5 s deadline (a 2.5 s budget), Stripe calls bounded at 3 s", () => {
    const { state, link, stored, orphans, creates } = harness(database, { deadline: 5, callTimeout: 3 })

    it("the budget is the deadline less 3 s, never under half of it", () => {
      const budget = (seconds: number) => Duration.toMillis(linkBudget(Duration.seconds(seconds)))
      expect([budget(15), budget(5), budget(30), budget(2)]).toEqual([12_000, 2_500, 27_000, 1_000])
    })

    it("calls that each fit their bound but not the budget: 502 within the deadline, audited, nothing left", async () => {
      const { application } = await state.server.createApplication()
      const account = state.fake.addAccount({ livemode: true })
      state.fake.inject({ method: "GET", path: "/v1/account" }, { kind: "delay-after", ms: 1500 })
      state.fake.inject({ method: "POST", path: "/v1/webhook_endpoints" }, { kind: "delay-after", ms: 1500 })
      const before = creates().length
      const slow = await link(application.id, account.key)
      expect(slow.status, slow.text).toBe(502)
      expect(slow.seconds).toBeLessThan(5)
      expect((slow.body as ErrorBody).error.message).toContain("did not answer within")
      expect(await stored()).toEqual([])
      expect(creates().length).toBe(before + 1)
      await eventually(async () => (await orphans()).length === 0, "the endpoint's deletion")
      const entries = await state.server.run(
        Effect.flatMap(Effect.service(AuditLog), (audit) => audit.list({ applicationId: application.id, limit: 10 }))
      )
      expect(entries.entries.map((entry) => [entry.action, entry.details.reason])).toEqual([
        ["provider_account.link_refused", "ProviderUnavailable"]
      ])
    })

    it("an endpoint whose answer never came is found by the link's Idempotency-Key and deleted", async () => {
      const { application } = await state.server.createApplication()
      const account = state.fake.addAccount({ livemode: true })
      // Stripe makes the endpoint and the answer is lost: Kassa never learns its id from this call.
      state.fake.inject({ method: "POST", path: "/v1/webhook_endpoints" }, { kind: "hang-after" })
      const lost = await link(application.id, account.key)
      expect(lost.status, lost.text).toBe(502)
      expect(lost.seconds).toBeLessThan(5)
      expect(await stored()).toEqual([])
      await eventually(async () => (await orphans()).length === 0, "the lost endpoint's deletion")
      const [first, again] = creates().slice(-2)
      expect(again?.replayed).toBe(true)
      expect(again?.idempotencyKey).toBe(first?.idempotencyKey)
      expect(state.fake.requests.some((request) => request.method === "DELETE" && request.status === 200)).toBe(true)
    })

    it("a request interrupted after the endpoint was made (the store held past the deadline) leaves nothing", async () => {
      const { application } = await state.server.createApplication()
      const account = state.fake.addAccount({ livemode: true })
      state.fake.inject({ method: "POST", path: "/v1/webhook_endpoints" }, { kind: "delay-after", ms: 1000 })
      const before = creates().length
      const pending = link(application.id, account.key)
      await eventually(() => creates().length > before, "the endpoint's creation")
      // The store waits on the database until the request deadline ends the request.
      const release = await holdDatabase(state.server, database, "provider_links")
      const interrupted = await pending
      await release()
      expect(interrupted.status, interrupted.text).toBe(500)
      expect(interrupted.seconds).toBeLessThan(7)
      expect(await stored()).toEqual([])
      await eventually(async () => (await orphans()).length === 0, "the endpoint's deletion")
    })
  })
})
