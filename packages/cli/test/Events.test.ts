/** `kassa events …` against the real server, on PGlite and (when reachable) PostgreSQL. */
import type { KassaEvent, KassaPayment } from "@kassa/client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication
} from "../../server/test/support/TestServer.ts"
import { json, kassa } from "./support.ts"

interface EventPage {
  readonly data: ReadonlyArray<KassaEvent>
  readonly has_more: boolean
}

describe.each(databases)("against the server on %s", (database) => {
  let server: RunningServer
  let app: TestApplication
  let env: Record<string, string>
  /** The application's events as the API lists them, newest first. */
  let events: ReadonlyArray<KassaEvent>
  let paid: KassaPayment
  let cancelled: KassaPayment

  const api = async (path: string, method = "GET", body?: unknown) => {
    const answer = await server.request(path, { method, key: app.testKey, ...(body === undefined ? {} : { body }) })
    expect(answer.status, answer.text).toBeLessThan(300)
    return answer.body
  }

  // Setup through the API (the commands under test only read): a payment paid then partly refunded, one cancelled.
  beforeAll(async () => {
    server = await startServer(database)
    app = await server.createApplication()
    env = { KASSA_BASE_URL: server.baseUrl, KASSA_API_KEY: app.testKey }
    const create = (order_reference: string) =>
      api("/api/v1/payments", "POST", { amount: 2000, order_reference }) as Promise<KassaPayment>
    paid = await create("cli-events-paid")
    await api(`/api/v1/test/payments/${paid.id}/simulate`, "POST", { outcome: "paid" })
    await api(`/api/v1/payments/${paid.id}/refunds`, "POST", { amount: 500 })
    cancelled = await create("cli-events-cancelled")
    await api(`/api/v1/payments/${cancelled.id}/cancel`, "POST", {})
    events = ((await api("/api/v1/events?limit=100")) as EventPage).data
    expect(events).toHaveLength(3)
  })
  afterAll(() => server.close())

  describe.concurrent("kassa events", () => {
    it("list: --json prints the page as the API answers it; the table shows each event's payment", async () => {
      const listed = await kassa(["events", "list", "--json"], { env })
      expect(listed.code, listed.stderr).toBe(0)
      expect(json<EventPage>(listed)).toEqual({ data: events, has_more: false })

      const table = await kassa(["events", "list"], { env })
      expect(table.code, table.stderr).toBe(0)
      const lines = table.stdout.trim().split("\n")
      expect(lines[0]).toMatch(/^ID\s+EVENT\s+PAYMENT\s+STATUS\s+AMOUNT\s+CREATED AT$/)
      expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 4))).toEqual(
        events.map(({ id, event, data }) => [id, event, data.id, data.status])
      )
      expect(table.stdout).toContain("20.00 EUR")
    })

    it("list: --type, --payment and --limit with --starting-after for the next page", async () => {
      const byType = await kassa(["events", "list", "--type", "payment.cancelled", "--json"], { env })
      expect(json<EventPage>(byType).data.map(({ event, data }) => [event, data.id])).toEqual([
        ["payment.cancelled", cancelled.id]
      ])
      const byPayment = json<EventPage>(await kassa(["events", "list", "--payment", paid.id, "--json"], { env }))
      expect(byPayment.data).toEqual(events.filter(({ data }) => data.id === paid.id))
      expect(byPayment.data.map(({ event }) => event).sort()).toEqual(["payment.paid", "payment.partially_refunded"])

      const first = await kassa(["events", "list", "--limit", "2"], { env })
      const next = first.stdout.trim().match(/More events follow: --starting-after (evt_\S+)$/)
      expect(next?.[1], first.stdout).toBe(events[1]?.id)
      const rest = await kassa(["events", "list", "--limit", "2", "--starting-after", next?.[1] ?? "", "--json"], {
        env
      })
      expect(json<EventPage>(rest)).toEqual({ data: events.slice(2), has_more: false })

      const none = await kassa(["events", "list", "--type", "payment.expired"], { env })
      expect(none.code).toBe(0)
      expect(none.stdout.trim()).toBe("No events.")
    })

    it("get: --json prints the event as the API answers it; the table shows the payment at the event's time", async () => {
      const paidEvent = events.find(({ event }) => event === "payment.paid") as KassaEvent
      const got = await kassa(["events", "get", paidEvent.id, "--json"], { env })
      expect(got.code, got.stderr).toBe(0)
      expect(json<KassaEvent>(got)).toEqual(await api(`/api/v1/events/${paidEvent.id}`))

      // The payment is partly refunded now; the paid event shows it as it was, nothing refunded.
      const table = await kassa(["events", "get", paidEvent.id], { env })
      expect(table.code, table.stderr).toBe(0)
      expect(table.stdout).toMatch(new RegExp(`^ID\\s+${paidEvent.id}$`, "m"))
      expect(table.stdout).toMatch(/^Event\s+payment\.paid$/m)
      expect(table.stdout).toMatch(/^Status\s+paid$/m)
      expect(table.stdout).toMatch(/^Refunded\s+0\.00 EUR$/m)
    })

    it("get: an unknown or malformed id is exit 1 not_found; no id is exit 2", async () => {
      for (const id of [`evt_${crypto.randomUUID()}`, "evt_nope"]) {
        const missing = await kassa(["events", "get", id, "--json"], { env })
        expect(missing.code).toBe(1)
        expect(json<{ error: Record<string, unknown> }>(missing).error).toMatchObject({
          code: "not_found",
          status: 404,
          message: "No event with this id."
        })
      }
      const text = await kassa(["events", "get", `evt_${crypto.randomUUID()}`], { env })
      expect(text.code).toBe(1)
      expect(text.stdout).toBe("")
      expect(text.stderr).toContain("code: not_found")
      expect(text.stderr).toMatch(/request_id: req_/)
      const noId = await kassa(["events", "get"], { env })
      expect(noId.code).toBe(2)
    })

    it("usage errors are exit 2 (an unknown --type, no API key); a --limit out of range is exit 1 validation_failed", async () => {
      const badType = await kassa(["events", "list", "--type", "payment.exploded"], { env })
      expect(badType.code).toBe(2)
      expect(badType.stderr).toContain("--type")
      const noKey = await kassa(["events", "list"], { env: { KASSA_BASE_URL: server.baseUrl } })
      expect(noKey.code).toBe(2)
      expect(noKey.stderr).toContain("--api-key")
      const badLimit = await kassa(["events", "list", "--limit", "500", "--json"], { env })
      expect(badLimit.code).toBe(1)
      const { error } = json<{ error: { code: string; fields: Record<string, unknown> } }>(badLimit)
      expect(error.code).toBe("validation_failed")
      expect(Object.keys(error.fields)).toEqual(["limit"])
    })

    it("a wrong key is exit 1 invalid_api_key", async () => {
      const result = await kassa(["events", "list", "--json"], {
        env: { ...env, KASSA_API_KEY: "pk_test_nonexistentnonexistent00" }
      })
      expect(result.code).toBe(1)
      expect(json<{ error: { code: string } }>(result).error.code).toBe("invalid_api_key")
    })
  })
})
