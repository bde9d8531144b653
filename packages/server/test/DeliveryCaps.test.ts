/**
 * The delivery caps are settings (issue 14 §2): KASSA_DELIVERY_CONCURRENCY_PER_URL bounds what one process has in
 * flight to one URL, as the default of 16 does in Webhooks.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { perUrlLimit } from "../src/webhooks/Dispatcher.ts"
import { pendingPayment, simulate } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const cap = 3

describe.each(databases)("KASSA_DELIVERY_CONCURRENCY_PER_URL on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await startReceiver()
    server = await startServer(database, { deliveryConcurrencyPerUrl: cap, deliveryConcurrency: 8 })
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  it("holds exactly the configured number of attempts in flight to a receiver that hangs", async () => {
    expect(cap).toBeLessThan(perUrlLimit)
    const path = "/hangs"
    receiver.answer({ hang: true }, path)
    const { testKey } = await server.createApplication({ webhook_url: receiver.url(path) })
    const payments = await Promise.all(Array.from({ length: 8 }, () => pendingPayment(server, testKey)))
    for (const payment of payments) await simulate(server, testKey, payment.id, "paid")
    await receiver.waitFor(cap, path)
    // The others stay due: give the engine time to (wrongly) send more.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(receiver.received(path)).toHaveLength(cap)
  })
})
