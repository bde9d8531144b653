/** `kassa trigger <event>`: each event is driven with the API until the server sends it to the webhook URL. */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { KassaPayment } from "@kassa/client"
import { verify } from "@kassa/webhook-verify"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer, type TestApplication } from "../../server/test/support/TestServer.ts"
import { json, kassa } from "./support.ts"

let server: RunningServer
let app: TestApplication
/** An application whose webhook URL answers 500. */
let failingApp: TestApplication
let receiver: Server
let env: Record<string, string>
/** Verified events received, as `event payment_id`. */
const received: Array<string> = []

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      if (request.url === "/failing") return void response.writeHead(500).end("down")
      verify(Buffer.concat(chunks), request.headers["x-service-signature"], app.webhookSecret)
        .then((event) => {
          received.push(`${event.event} ${event.data.id}`)
          response.writeHead(200).end()
        })
        .catch(() => response.writeHead(400).end())
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  server = await startServer("pglite")
  app = await server.createApplication({
    webhook_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  })
  failingApp = await server.createApplication({
    webhook_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/failing`
  })
  env = { KASSA_BASE_URL: server.baseUrl, KASSA_API_KEY: app.testKey }
})
afterAll(async () => {
  await server.close()
  await new Promise((resolve) => receiver.close(resolve))
})

const delivered = async (entry: string) => {
  for (let waited = 0; waited < 10_000; waited += 50) {
    if (received.includes(entry)) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

interface Triggered {
  readonly event: string
  readonly payment: KassaPayment
  readonly steps: ReadonlyArray<{ readonly action: string; readonly status: string }>
}

const cases = [
  ["payment.paid", "paid", 0],
  ["payment.failed", "failed", 0],
  ["payment.expired", "expired", 0],
  ["payment.cancelled", "cancelled", 0],
  ["payment.partially_refunded", "partially_refunded", 500],
  ["payment.refunded", "refunded", 1000]
] as const

describe.concurrent("kassa trigger", () => {
  it.each(cases)("%s: --json, and the event reaches the webhook URL", async (event, status, refunded) => {
    const result = await kassa(["trigger", event, "--json"], { env })
    expect(result.code, result.stderr).toBe(0)
    const triggered = json<Triggered>(result)
    expect(triggered.event).toBe(event)
    expect(triggered.payment).toMatchObject({ status, mode: "test", amount: 1000, refunded_amount: refunded })
    expect(triggered.steps[0]?.action).toContain("create")
    expect(await delivered(`${event} ${triggered.payment.id}`)).toBe(true)
  })

  it("--payment drives an existing payment; the table lists the steps", async () => {
    const paid = json<Triggered>(await kassa(["trigger", "payment.paid", "--amount", "3000", "--json"], { env }))
    const table = await kassa(["trigger", "payment.refunded", "--payment", paid.payment.id], { env })
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(/1\. refund the remaining 3000\s+-> refunded/)
    expect(table.stdout).toContain(paid.payment.id)
    expect(await delivered(`payment.refunded ${paid.payment.id}`)).toBe(true)
  })

  it("an event the payment cannot reach is exit 1; an unknown event is exit 2", async () => {
    // A cancelled payment, made through the API (trigger payment.cancelled has its own test).
    const created = await server.request("/api/v1/payments", {
      method: "POST",
      key: app.testKey,
      body: { amount: 1000, order_reference: "cli-trigger-cancelled" }
    })
    expect(created.status, created.text).toBe(201)
    const cancelled = { payment: created.body as KassaPayment }
    const cancel = await server.request(`/api/v1/payments/${cancelled.payment.id}/cancel`, {
      method: "POST",
      key: app.testKey
    })
    expect(cancel.status, cancel.text).toBe(200)
    const notPending = await kassa(["trigger", "payment.paid", "--payment", cancelled.payment.id, "--json"], { env })
    expect(notPending.code).toBe(1)
    expect(json<{ error: { code: string } }>(notPending).error.code).toBe("payment_not_pending")
    const notRefundable = await kassa(["trigger", "payment.refunded", "--payment", cancelled.payment.id], { env })
    expect(notRefundable.code).toBe(1)
    expect(notRefundable.stderr).toContain("payment_not_refundable")
    const unknown = await kassa(["trigger", "payment.exploded"], { env })
    expect(unknown.code).toBe(2)
    const noEvent = await kassa(["trigger"], { env })
    expect(noEvent.code).toBe(2)
  })

  it("with KASSA_ADMIN_TOKEN it waits for the delivery: exit 0 with the webhook URL's answer, exit 1 delivery_failed when it fails", async () => {
    const ok = await kassa(["trigger", "payment.paid"], { env: { ...env, KASSA_ADMIN_TOKEN: server.adminToken } })
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout).toMatch(
      /Delivered payment\.paid for \S+: HTTP 200 from http:\/\/127\.0\.0\.1:\d+\/hook in \d+ ms\./
    )

    const failingEnv = { ...env, KASSA_API_KEY: failingApp.testKey, KASSA_ADMIN_TOKEN: server.adminToken }
    const failed = await kassa(["trigger", "payment.failed"], { env: failingEnv })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toMatch(/The delivery of payment\.failed for \S+ failed: HTTP 500 from \S+\/failing/)
    expect(failed.stderr).toContain("code: delivery_failed")
    const json = await kassa(["trigger", "payment.cancelled", "--json", "--admin-token", server.adminToken], {
      env: { ...env, KASSA_API_KEY: failingApp.testKey }
    })
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: { code: "delivery_failed", payment_status: "cancelled", response_status: 500, attempt_error: null }
    })

    // No webhook URL at all: the attempt records why.
    const noUrl = await server.createApplication()
    const nowhere = await kassa(["trigger", "payment.paid", "--json"], {
      env: { ...env, KASSA_API_KEY: noUrl.testKey, KASSA_ADMIN_TOKEN: server.adminToken }
    })
    expect(nowhere.code).toBe(1)
    expect(JSON.parse(nowhere.stdout)).toMatchObject({
      error: { code: "delivery_failed", payment_status: "paid", response_status: null, attempt_error: "no_webhook_url" }
    })
  })
})
