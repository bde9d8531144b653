/**
 * `kassa admin payments refund` (issue 12 §4) against the real server, whose Stripe is the stateful fake: the refund
 * reaches Stripe with the refund id as Idempotency-Key and the payment comes back refunded; an over-refund exits 1
 * with the contract's error and Stripe never hears of it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeMollie, startFakeMollie } from "../../server/test/support/FakeMollie.ts"
import { type FakeStripe, startFakeStripe } from "../../server/test/support/FakeStripe.ts"
import { linkedApplication, paidLivePayment } from "../../server/test/support/LivePaymentFixture.ts"
import { mollieLinkedApplication } from "../../server/test/support/MollieLink.ts"
import { createPayment, query, storedStatus, type WirePayment } from "../../server/test/support/PaymentFixtures.ts"
import { type RunningServer, startServer } from "../../server/test/support/TestServer.ts"
import { json, kassa } from "./support.ts"

let fake: FakeStripe
let mollie: FakeMollie
let server: RunningServer
let env: Record<string, string>

interface Refunded {
  readonly status: string
  readonly refunded_amount: number
  readonly refunds: ReadonlyArray<{ readonly id: string; readonly amount: number; readonly status: string }>
}

beforeAll(async () => {
  fake = await startFakeStripe()
  mollie = await startFakeMollie()
  server = await startServer("pglite", { stripeApiUrl: fake.url, mollieApiUrl: mollie.url })
  env = { KASSA_BASE_URL: server.baseUrl, KASSA_ADMIN_TOKEN: server.adminToken }
})
afterAll(async () => {
  await server.close()
  await fake.settled()
  await fake.close()
  await mollie.close()
})

describe("kassa admin payments refund", () => {
  it("refunds part, then the rest, through Stripe; an over-refund exits 1 before Stripe hears of it", async () => {
    const linked = await linkedApplication(server, fake)
    const { id, paymentIntentId } = await paidLivePayment(server, fake, linked, 1000)
    // Refunds asked of Stripe: POSTs only (Kassa also lists a payment's refunds when Stripe reports one).
    const calls = () =>
      fake.requests.filter(
        (r) => r.method === "POST" && r.path === "/v1/refunds" && r.params.payment_intent === paymentIntentId
      )

    const partial = await kassa(["admin", "payments", "refund", id, "--amount", "400", "--reason", "Returned"], { env })
    expect(partial.code, partial.stderr).toBe(0)
    expect(partial.stdout).toContain("partially_refunded")
    expect(partial.stdout).toContain("The payment provider refunded it.")

    const over = await kassa(["admin", "payments", "refund", id, "--amount", "601", "--json"], { env })
    expect(over.code).toBe(1)
    expect(json<{ error: { code: string } }>(over).error.code).toBe("refund_amount_exceeds_refundable")
    expect(calls()).toHaveLength(1)

    const rest = json<Refunded>(await kassa(["admin", "payments", "refund", id, "--json"], { env }))
    expect(rest).toMatchObject({ status: "refunded", refunded_amount: 1000 })
    expect(rest.refunds.map((refund) => [refund.amount, refund.status])).toEqual([
      [400, "succeeded"],
      [600, "succeeded"]
    ])
    expect(calls().map((call) => call.idempotencyKey)).toEqual(rest.refunds.map((refund) => refund.id))
  })

  it("through Mollie: a second refund of the same amount within the hour exits 1 with Mollie's reason in words", async () => {
    const shop = await mollieLinkedApplication(server, mollie)
    const created = await createPayment(server, shop.liveKey, { method: "card", amount: 2000 })
    expect(created.status, created.text).toBe(201)
    const id = (created.body as WirePayment).id
    const [row] = await query(server, (sql) => sql`SELECT checkout_id FROM provider_payments WHERE payment_id = ${id}`)
    mollie.setStatus(String(row?.checkout_id), "paid", { name: "CLI" })
    for (let attempt = 0; attempt < 400 && (await storedStatus(server, id)) !== "paid"; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const first = await kassa(["admin", "payments", "refund", id, "--amount", "500"], { env })
    expect(first.code, first.stderr).toBe(0)
    const second = await kassa(["admin", "payments", "refund", id, "--amount", "500", "--json"], { env })
    expect(second.code).toBe(1)
    const error = json<{ error: { code: string; message: string } }>(second).error
    expect(error.code).toBe("provider_error")
    expect(error.message).toMatch(/same amount/i)
    expect(mollie.calls("refunds.create")).toBe(2)
  })
})
