/** `kassa payments …` against the real server, on PGlite and (when reachable) PostgreSQL. */
import type { KassaPayment } from "@kassa/client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication
} from "../../server/test/support/TestServer.ts"
import { json, kassa, kassaProcess } from "./support.ts"

describe.each(databases)("against the server on %s", (database) => {
  let server: RunningServer
  let app: TestApplication
  let env: Record<string, string>

  beforeAll(async () => {
    server = await startServer(database)
    app = await server.createApplication()
    env = { KASSA_BASE_URL: server.baseUrl, KASSA_API_KEY: app.testKey }
  })
  afterAll(() => server.close())

  /** A pending payment, made through the API: setup for the commands under test (`create` has its own tests). */
  const create = async (orderReference: string, amount = 1250) => {
    const created = await server.request("/api/v1/payments", {
      method: "POST",
      key: app.testKey,
      body: { amount, order_reference: orderReference }
    })
    expect(created.status, created.text).toBe(201)
    return created.body as KassaPayment
  }

  describe.concurrent("kassa payments", () => {
    it("create: --json prints the payment; the table shows its id, status and amount", async () => {
      const result = await kassa(
        ["payments", "create", "--amount", "1250", "--order-reference", "cli-create-1", "--json"],
        {
          env
        }
      )
      expect(result.code, result.stderr).toBe(0)
      const payment = json<KassaPayment>(result)
      expect(payment).toMatchObject({ status: "pending", amount: 1250, order_reference: "cli-create-1", mode: "test" })
      expect(payment.id).toMatch(/^[0-9a-f-]{36}$/)
      const withMetadata = await kassa(
        [
          "payments",
          "create",
          "--amount",
          "1250",
          "--order-reference",
          "cli-meta",
          "--metadata",
          "cart=42",
          "--metadata",
          "gift=yes",
          "--json"
        ],
        { env }
      )
      expect(json<KassaPayment>(withMetadata).metadata).toEqual({ cart: "42", gift: "yes" })

      const table = await kassa(
        ["payments", "create", "--amount", "990", "--order-reference", "cli-create-2", "--description", "Two mugs"],
        { env }
      )
      expect(table.code).toBe(0)
      expect(table.stdout).toMatch(/ID\s+[0-9a-f-]{36}/)
      expect(table.stdout).toContain("pending")
      expect(table.stdout).toContain("9.90 EUR")
      expect(table.stdout).toContain("cli-create-2")
      expect(table.stdout).toContain("Two mugs")
    })

    it("create: an API error prints code, message, fields and Request-Id, exit 1", async () => {
      const result = await kassa(["payments", "create", "--amount", "1", "--order-reference", "cli-small", "--json"], {
        env
      })
      expect(result.code).toBe(1)
      const { error } = json<{ error: Record<string, unknown> }>(result)
      expect(error).toMatchObject({ code: "amount_below_minimum", status: 422, min_amount: 100 })
      expect(error.request_id).toEqual(expect.any(String))
      expect(error.message).toEqual(expect.any(String))

      const text = await kassa(["payments", "create", "--amount", "1", "--order-reference", "cli-small"], { env })
      expect(text.code).toBe(1)
      expect(text.stdout).toBe("")
      expect(text.stderr).toContain("code: amount_below_minimum")
      expect(text.stderr).toContain("min_amount: 100")
      expect(text.stderr).toMatch(/request_id: \S+/)
    })

    it("create: a wrong key is exit 1 with invalid_api_key", async () => {
      const result = await kassa(["payments", "list", "--json"], {
        env: { ...env, KASSA_API_KEY: "pk_test_nonexistentnonexistent00" }
      })
      expect(result.code).toBe(1)
      expect(json<{ error: { code: string } }>(result).error.code).toBe("invalid_api_key")
    })

    it("usage errors are exit 2: a missing or malformed amount, an unknown command, --wizard", async () => {
      const missingAmount = await kassa(["payments", "create", "--order-reference", "x"], { env })
      expect(missingAmount.code).toBe(2)
      expect(missingAmount.stderr).toContain("--amount")
      const badAmount = await kassa(["payments", "create", "--amount", "ten", "--order-reference", "x"], { env })
      expect(badAmount.code).toBe(2)
      const unknown = await kassa(["payments", "frobnicate"], { env })
      expect(unknown.code).toBe(2)
      // A process whose stdin is a pipe, not a terminal: the CLI itself decides that --wizard does not exist.
      const wizard = await kassaProcess(["payments", "list", "--wizard"], { env })
      expect(wizard.code).toBe(2)
    })

    it("a missing key is a usage error, not a prompt; bare kassa prints the usage; --version", async () => {
      const noKey = await kassa(["payments", "list"], { env: { KASSA_BASE_URL: server.baseUrl } })
      expect(noKey.code).toBe(2)
      expect(noKey.stderr).toContain("--api-key")
      const bare = await kassa([], { env })
      expect(bare.code).toBe(2)
      expect(bare.stdout).toContain("payments")
      const version = await kassa(["--version"], { env })
      expect(version.code).toBe(0)
    })

    it("get: --json and table; an unknown id is exit 1 not_found", async () => {
      const payment = await create("cli-get")
      const got = await kassa(["payments", "get", payment.id, "--json"], { env })
      expect(got.code).toBe(0)
      expect(json<KassaPayment>(got)).toEqual(payment)
      const table = await kassa(["payments", "get", payment.id], { env })
      expect(table.stdout).toContain(payment.id)
      expect(table.stdout).toContain(payment.checkout_url)

      const missing = await kassa(["payments", "get", "pay_00000000000000000000000000", "--json"], { env })
      expect(missing.code).toBe(1)
      expect(json<{ error: { code: string } }>(missing).error.code).toBe("not_found")
      const noId = await kassa(["payments", "get"], { env })
      expect(noId.code).toBe(2)
    })

    it("list: --json page and table, filtered by order reference and status", async () => {
      const payment = await create("cli-list")
      const listed = await kassa(["payments", "list", "--order-reference", "cli-list", "--json"], { env })
      expect(listed.code).toBe(0)
      const page = json<{ data: Array<KassaPayment>; has_more: boolean }>(listed)
      expect(page.data.map((p) => p.id)).toEqual([payment.id])
      expect(page.has_more).toBe(false)
      const table = await kassa(["payments", "list", "--order-reference", "cli-list"], { env })
      expect(table.stdout).toMatch(/ID\s+STATUS\s+AMOUNT/)
      expect(table.stdout).toContain(payment.id)
      expect(table.stdout).toContain("12.50 EUR")
      const none = await kassa(["payments", "list", "--order-reference", "cli-list", "--status", "paid"], { env })
      expect(none.stdout.trim()).toBe("No payments.")
      const badStatus = await kassa(["payments", "list", "--status", "lost"], { env })
      expect(badStatus.code).toBe(2)
    })

    it("cancel: a pending payment, then again is exit 1 payment_not_cancellable", async () => {
      const payment = await create("cli-cancel")
      const cancelled = await kassa(["payments", "cancel", payment.id, "--json"], { env })
      expect(cancelled.code).toBe(0)
      expect(json<KassaPayment>(cancelled).status).toBe("cancelled")
      const again = await kassa(["payments", "cancel", payment.id], { env })
      expect(again.code).toBe(1)
      expect(again.stderr).toContain("payment_not_cancellable")
      expect(again.stderr).toContain("payment_status: cancelled")
    })

    it("simulate paid, then refund: partially refunded, refunded; over-refunding is exit 1", async () => {
      const payment = await create("cli-refund", 2000)
      const paid = await kassa(["payments", "simulate", payment.id, "--outcome", "paid", "--json"], { env })
      expect(paid.code).toBe(0)
      expect(json<KassaPayment>(paid).status).toBe("paid")
      const partial = await kassa(
        ["payments", "refund", payment.id, "--amount", "500", "--reason", "one mug", "--json"],
        {
          env
        }
      )
      expect(partial.code).toBe(0)
      expect(json<KassaPayment>(partial)).toMatchObject({ status: "partially_refunded", refunded_amount: 500 })
      const tooMuch = await kassa(["payments", "refund", payment.id, "--amount", "5000", "--json"], { env })
      expect(tooMuch.code).toBe(1)
      expect(json<{ error: Record<string, unknown> }>(tooMuch).error).toMatchObject({
        code: "refund_amount_exceeds_refundable",
        refundable_amount: 1500
      })
      const rest = await kassa(["payments", "refund", payment.id], { env })
      expect(rest.code).toBe(0)
      expect(rest.stdout).toContain("refunded")
      expect(rest.stdout).toContain("20.00 EUR")
      expect(rest.stdout).toContain("one mug")
    })

    it("simulate: an unknown outcome is exit 2; a payment no longer pending is exit 1 payment_not_pending", async () => {
      const payment = await create("cli-simulate", 2000)
      const paid = await server.request(`/api/v1/test/payments/${payment.id}/simulate`, {
        method: "POST",
        key: app.testKey,
        body: { outcome: "paid" }
      })
      expect(paid.status, paid.text).toBe(200)
      const badOutcome = await kassa(["payments", "simulate", payment.id, "--outcome", "lost"], { env })
      expect(badOutcome.code).toBe(2)
      const notPending = await kassa(["payments", "simulate", payment.id, "--outcome", "failed"], { env })
      expect(notPending.code).toBe(1)
      expect(notPending.stderr).toContain("payment_not_pending")
    })
  })
})
