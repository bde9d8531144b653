/**
 * `kassa admin payments refund` (issue 12 §4) against the real server, whose Stripe is the stateful fake: the refund
 * reaches Stripe with the refund id as Idempotency-Key and the payment comes back refunded; an over-refund exits 1
 * with the contract's error and Stripe never hears of it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeStripe, startFakeStripe } from "../../server/test/support/FakeStripe.ts"
import { linkedApplication, paidLivePayment } from "../../server/test/support/LivePaymentFixture.ts"
import { type RunningServer, startServer } from "../../server/test/support/TestServer.ts"
import { json, kassa } from "./support.ts"

let fake: FakeStripe
let server: RunningServer
let env: Record<string, string>

interface Refunded {
  readonly status: string
  readonly refunded_amount: number
  readonly refunds: ReadonlyArray<{ readonly id: string; readonly amount: number; readonly status: string }>
}

beforeAll(async () => {
  fake = await startFakeStripe()
  server = await startServer("pglite", { stripeApiUrl: fake.url })
  env = { KASSA_BASE_URL: server.baseUrl, KASSA_ADMIN_TOKEN: server.adminToken }
})
afterAll(async () => {
  await server.close()
  await fake.settled()
  await fake.close()
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
    expect(partial.stdout).toContain("Stripe refunded it.")

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
})
