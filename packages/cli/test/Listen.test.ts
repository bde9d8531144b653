/**
 * `kassa listen --forward-to`: follows the events API of a real server and posts each new event, signed with the
 * session's secret, to a local receiver that verifies it with the secret the command printed.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { type KassaEvent, verify } from "@kassa/webhook-verify"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer, type TestApplication } from "../../server/test/support/TestServer.ts"
import { kassa, killLeftovers, start } from "./support.ts"

let server: RunningServer
let app: TestApplication
let env: Record<string, string>

interface Receiver {
  readonly url: string
  /** Verified events, in the order they arrived; a request whose signature failed is recorded as `invalid`. */
  readonly received: Array<KassaEvent | "invalid">
  readonly close: () => Promise<void>
}

/** A local app answering `status`; it verifies each request with the secret `secret()` gives at that moment. */
const receiver = async (secret: () => string, status: number): Promise<Receiver> => {
  const received: Array<KassaEvent | "invalid"> = []
  const http: Server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      verify(Buffer.concat(chunks), request.headers["x-service-signature"], secret())
        .then((event) => {
          expect(request.headers["x-service-event"]).toBe(event.event)
          received.push(event)
        })
        .catch(() => received.push("invalid"))
        .finally(() => response.writeHead(status).end())
    })
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/hooks`,
    received,
    close: () => new Promise((resolve) => http.close(() => resolve()))
  }
}

const api = async (path: string, body: unknown) => {
  const answer = await server.request(path, { method: "POST", key: app.testKey, body })
  expect(answer.status, answer.text).toBeLessThan(300)
  return answer.body as { id: string }
}

beforeAll(async () => {
  server = await startServer("pglite")
  app = await server.createApplication()
  env = { KASSA_BASE_URL: server.baseUrl, KASSA_API_KEY: app.testKey }
  // An event from before the session: it must not be forwarded.
  const before = await api("/api/v1/payments", { amount: 700, order_reference: "listen-before" })
  await api(`/api/v1/test/payments/${before.id}/simulate`, { outcome: "paid" })
})
afterAll(async () => {
  killLeftovers()
  await server.close()
})

const waitUntil = async (done: () => boolean, what: string) => {
  for (let waited = 0; waited < 15_000; waited += 50) {
    if (done()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

// One after the other: both follow the same application's events.
describe("kassa listen --forward-to", () => {
  it("forwards each event created after the start once, in order, signed with the printed secret; SIGINT stops it (exit 0)", async () => {
    let secret = ""
    const hooks = await receiver(() => secret, 200)
    const listener = start(["listen", "--forward-to", hooks.url, "--poll-interval", "100"], env)
    try {
      const [, printed = ""] = await listener.waitFor(/Session secret .*: (whsec_[0-9A-Za-z]{32})$/m)
      secret = printed
      const paid = await api("/api/v1/payments", { amount: 1200, order_reference: "listen-1" })
      await api(`/api/v1/test/payments/${paid.id}/simulate`, { outcome: "paid" })
      await api(`/api/v1/payments/${paid.id}/refunds`, { amount: 200 })
      const cancelled = await api("/api/v1/payments", { amount: 300, order_reference: "listen-2" })
      await api(`/api/v1/payments/${cancelled.id}/cancel`, {})

      await waitUntil(() => hooks.received.length >= 3, "three forwards")
      // A few more polls: nothing is forwarded twice.
      await new Promise((resolve) => setTimeout(resolve, 500))
      const listed = (await server.request("/api/v1/events?limit=3", { key: app.testKey })).body as {
        data: ReadonlyArray<KassaEvent>
      }
      expect(hooks.received).toEqual([...listed.data].reverse())
      expect(hooks.received.map((event) => (event === "invalid" ? event : `${event.event} ${event.data.id}`))).toEqual([
        `payment.paid ${paid.id}`,
        `payment.partially_refunded ${paid.id}`,
        `payment.cancelled ${cancelled.id}`
      ])
      for (const event of listed.data) {
        expect(listener.output.stdout).toMatch(
          new RegExp(
            `${event.event.replace(".", "\\.")}\\s+${event.id}\\s+payment ${event.data.id} .*-> ${hooks.url}: HTTP 200 in \\d+ ms`
          )
        )
      }
      listener.child.kill("SIGINT")
      expect(await listener.exited).toBe(0)
    } finally {
      await listener.stop()
      await hooks.close()
    }
  })

  it("shows a receiver's 500 as such, and an unreachable one as failed (--json)", async () => {
    let secret = ""
    const failing = await receiver(() => secret, 500)
    const listener = start(["listen", "--forward-to", failing.url, "--poll-interval", "100", "--json"], env)
    try {
      const [line = ""] = await listener.waitFor(/^\{"forward_to".*$/m)
      secret = (JSON.parse(line) as { secret: string }).secret
      const payment = await api("/api/v1/payments", { amount: 900, order_reference: "listen-500" })
      await api(`/api/v1/test/payments/${payment.id}/simulate`, { outcome: "failed" })
      const [forward = ""] = await listener.waitFor(/^\{"id":"evt_.*$/m)
      expect(JSON.parse(forward)).toMatchObject({
        event: "payment.failed",
        payment_id: payment.id,
        forwarded: { url: failing.url, status: 500, ms: expect.any(Number) }
      })
      expect(failing.received).toHaveLength(1)
    } finally {
      expect(await listener.stop()).toBe(0)
      await failing.close()
    }

    // Nothing listens on the receiver's port any more.
    const gone = start(["listen", "--forward-to", failing.url, "--poll-interval", "100", "--timeout", "2000"], env)
    try {
      await gone.waitFor(/Session secret/)
      const payment = await api("/api/v1/payments", { amount: 901, order_reference: "listen-gone" })
      await api(`/api/v1/payments/${payment.id}/cancel`, {})
      await gone.waitFor(new RegExp(`payment ${payment.id} \\(cancelled\\)\\s+-> \\S+: failed \\(.+\\) in \\d+ ms`))
    } finally {
      expect(await gone.stop()).toBe(0)
    }
  })

  it("a failed poll is shown and the session goes on: the events of the outage are forwarded after it", async () => {
    // The events API through a proxy that can be made to answer 503.
    let broken = false
    const proxy = createServer((request, response) => {
      if (broken) return void response.writeHead(503, { "content-type": "text/plain" }).end("down")
      fetch(`${server.baseUrl}${request.url ?? "/"}`, {
        headers: { authorization: request.headers.authorization ?? "" }
      })
        .then(async (answer) =>
          response
            .writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" })
            .end(Buffer.from(await answer.arrayBuffer()))
        )
        .catch(() => response.writeHead(502).end())
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    let secret = ""
    const hooks = await receiver(() => secret, 200)
    const listener = start(["listen", "--forward-to", hooks.url, "--poll-interval", "100"], {
      ...env,
      KASSA_BASE_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
    })
    try {
      const [, printed = ""] = await listener.waitFor(/Session secret .*: (whsec_[0-9A-Za-z]{32})$/m)
      secret = printed
      broken = true
      const payment = await api("/api/v1/payments", { amount: 1100, order_reference: "listen-outage" })
      await api(`/api/v1/payments/${payment.id}/cancel`, {})
      await waitUntil(() => /poll failed: /.test(listener.output.stderr), "a failed poll")
      expect(hooks.received).toEqual([])
      broken = false
      await waitUntil(() => hooks.received.length === 1, "the forward after the outage")
      expect(hooks.received.map((event) => (event === "invalid" ? event : event.data.id))).toEqual([payment.id])
    } finally {
      expect(await listener.stop()).toBe(0)
      await hooks.close()
      await new Promise((resolve) => proxy.close(resolve))
    }
  })

  it("an event that becomes visible after a newer one was forwarded is forwarded too; --events filters by name", async () => {
    let secret = ""
    const hooks = await receiver(() => secret, 200)
    const listener = start(
      ["listen", "--forward-to", hooks.url, "--poll-interval", "100", "--events", "payment.paid,payment.cancelled"],
      env
    )
    try {
      const [, printed = ""] = await listener.waitFor(/Session secret .*: (whsec_[0-9A-Za-z]{32})$/m)
      secret = printed
      const failed = await api("/api/v1/payments", { amount: 500, order_reference: "listen-filtered" })
      await api(`/api/v1/test/payments/${failed.id}/simulate`, { outcome: "failed" })
      const paid = await api("/api/v1/payments", { amount: 600, order_reference: "listen-late" })
      await api(`/api/v1/test/payments/${paid.id}/simulate`, { outcome: "paid" })
      await waitUntil(() => hooks.received.length === 1, "the paid event")
      // A transaction that started 3 s ago commits now: its event is older than the one just forwarded. (Written
      // by hand: a copy of the paid event under a new id, as the cancel of the same payment would look.)
      const late = `evt_${crypto.randomUUID()}`
      await server.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`
            INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
            SELECT ${late}, application_id, payment_id, mode, 'payment.cancelled',
              replace(replace(body, id, ${late}), '"payment.paid"', '"payment.cancelled"'), created_at - interval '3 seconds'
            FROM events WHERE payment_id = ${paid.id} AND event = 'payment.paid'`
        })
      )
      await waitUntil(() => hooks.received.length === 2, "the late event")
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(hooks.received.map((event) => (event === "invalid" ? event : `${event.event} ${event.id}`))).toEqual([
        expect.stringMatching(/^payment\.paid evt_/),
        `payment.cancelled ${late}`
      ])
      // The failed payment's event was filtered out, not forwarded late.
      expect(listener.output.stdout).not.toContain(failed.id)
    } finally {
      expect(await listener.stop()).toBe(0)
      await hooks.close()
    }
  })

  it("a wrong key is exit 1 before it starts; no --forward-to or a malformed one is exit 2", async () => {
    const wrongKey = await kassa(["listen", "--forward-to", "http://127.0.0.1:9/x"], {
      env: { ...env, KASSA_API_KEY: "pk_test_nonexistentnonexistent00" }
    })
    expect(wrongKey.code).toBe(1)
    expect(wrongKey.stderr).toContain("invalid_api_key")
    expect((await kassa(["listen"], { env })).code).toBe(2)
    expect((await kassa(["listen", "--forward-to", "nowhere"], { env })).code).toBe(2)
    const unknown = await kassa(["listen", "--forward-to", "http://127.0.0.1:9/x", "--events", "payment.pad"], { env })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("payment.paid")
  })
})
