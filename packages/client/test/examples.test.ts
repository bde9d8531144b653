/**
 * The README's examples (test/examples/*.ts, shown there byte for byte; package.test.ts checks that) run against
 * the real server, configured through the environment as a merchant would.
 */
import { Kassa } from "@kassa/client"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "../../server/test/support/TestServer.ts"

let server: RunningServer
let direct: Kassa
beforeAll(async () => {
  server = await startServer("pglite")
  const { testKey } = await server.createApplication()
  process.env.KASSA_API_KEY = testKey
  process.env.KASSA_BASE_URL = server.baseUrl
  direct = new Kassa({ apiKey: testKey, baseUrl: server.baseUrl })
})
afterAll(() => server.close())

const paymentOf = async (order_reference: string) => {
  const [payment] = (await direct.payments.listPage({ order_reference })).data
  if (payment === undefined) throw new Error(`no payment for ${order_reference}`)
  return payment
}

describe("README examples", () => {
  it("Promise: checkoutUrl creates the payment once, however often it is asked; paidTotal walks every page", async () => {
    const { checkoutUrl, paidTotal } = await import("./examples/promise.ts")
    const orders = Array.from({ length: 12 }, (_, n) => [`promise-${n}`, 1000 + n] as const)
    for (const [order, amount] of orders) {
      const url = await checkoutUrl(order, amount)
      expect(await checkoutUrl(order, amount)).toBe(url)
      const payment = await paymentOf(order)
      expect(url).toBe(payment.checkout_url)
      expect(payment).toMatchObject({ amount, description: `Order ${order}` })
      await direct.test.simulate(payment.id, { outcome: "paid" })
    }
    // More than one page (10 per page by default).
    expect(await paidTotal()).toBe(orders.reduce((sum, [, amount]) => sum + amount, 0))
  })

  it("Effect: payOrder reuses an order's payment; refundOrder refunds it", async () => {
    const { KassaLive, payOrder, refundOrder } = await import("./examples/effect.ts")
    const run = <A, E>(effect: Effect.Effect<A, E, Effect.Services<ReturnType<typeof payOrder>>>) =>
      Effect.runPromise(Effect.provide(effect, KassaLive))
    const first = await run(payOrder("effect-1", 2500))
    const again = await run(payOrder("effect-1", 2500))
    expect(again.id).toBe(first.id)
    await direct.test.simulate(first.id, { outcome: "paid" })
    const refunded = await run(refundOrder("effect-1"))
    expect(refunded.map(({ id, status }) => [id, status])).toEqual([[first.id, "refunded"]])
    expect((await direct.payments.get(first.id)).refunds).toMatchObject([{ amount: 2500, reason: "order cancelled" }])
  })
})
