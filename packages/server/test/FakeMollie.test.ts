/**
 * The fake Mollie's own contract, through Mollie's `mollie-api-typescript` SDK as the connector builds it (plain HTTP,
 * no retries): the behaviours it imitates, each as research/mollie.md describes Mollie's: idempotency (§6), no
 * `testmode`/`profileId` with an API key (§7), `isCancelable` only for bank transfers (§3), expiry, the webhook's
 * pings and their retry schedule (§4), lost and repeated pings, and the test checkout page.
 */
import { randomUUID } from "node:crypto"
import { Client } from "mollie-api-typescript"
import * as MollieErrors from "mollie-api-typescript/models/errors"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type FakeMollie, retryMinutes, startFakeMollie } from "./support/FakeMollie.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

let fake: FakeMollie
let receiver: WebhookReceiver
let mollie: Client

beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
})
beforeEach(async () => {
  fake = await startFakeMollie({ minuteMs: 2 })
  mollie = new Client({ security: { apiKey: fake.apiKey }, serverURL: fake.url, retryConfig: { strategy: "none" } })
  receiver.requests.length = 0
})
afterEach(async () => {
  // No ping of this test may reach the next one's receiver.
  await fake.settled()
  await fake.close()
})

const create = (method: string, idempotencyKey = randomUUID(), value = "10.00") =>
  mollie.payments.create({
    idempotencyKey,
    paymentRequest: {
      amount: { currency: "EUR", value },
      description: "Order 1",
      redirectUrl: "https://shop.example/return",
      cancelUrl: "https://shop.example/cancelled",
      webhookUrl: receiver.url("/mollie"),
      method: method as "ideal"
    }
  })

const statusOf = async (promise: Promise<unknown>) => {
  try {
    await promise
    return 200
  } catch (error) {
    if (error instanceof MollieErrors.ClientError) return error.statusCode
    throw error
  }
}

describe("the fake Mollie", () => {
  it("replays a POST under the same key, refuses the key with other parameters (400)", async () => {
    const key = randomUUID()
    const first = await create("ideal", key)
    const again = await create("ideal", key)
    expect(again.id).toBe(first.id)
    expect(fake.requests.at(-1)?.replayed).toBe(true)
    expect(await statusOf(create("ideal", key, "11.00"))).toBe(400)
    expect(fake.payments()).toHaveLength(1)
  })

  it("refuses testmode and profileId with an API key (422), and amounts with the wrong decimals", async () => {
    const { id } = await create("ideal")
    expect(await statusOf(mollie.payments.get({ paymentId: id, testmode: true }))).toBe(422)
    expect(await statusOf(mollie.payments.list({ profileId: fake.profileId }))).toBe(422)
    expect(await statusOf(create("ideal", randomUUID(), "10.0"))).toBe(422)
    expect(await statusOf(create("ideal", randomUUID(), "10"))).toBe(422)
  })

  it("refuses a localhost webhookUrl when told to, as Mollie does (422 naming webhookUrl)", async () => {
    const strict = await startFakeMollie({ refuseLocalWebhookUrl: true })
    const client = new Client({
      security: { apiKey: strict.apiKey },
      serverURL: strict.url,
      retryConfig: { strategy: "none" }
    })
    try {
      const refused = await client.payments
        .create({
          paymentRequest: {
            amount: { currency: "EUR", value: "10.00" },
            description: "Order 1",
            redirectUrl: "https://shop.example/return",
            webhookUrl: receiver.url("/mollie")
          }
        })
        .catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(MollieErrors.ErrorResponse)
      expect(refused).toMatchObject({ statusCode: 422, field: "webhookUrl" })
    } finally {
      await strict.close()
    }
  })

  it("only an open bank transfer is cancelable; a cancel of anything else is 422", async () => {
    const transfer = await create("banktransfer")
    const ideal = await create("ideal")
    expect(transfer.isCancelable).toBe(true)
    expect(ideal.isCancelable).toBe(false)
    expect(await statusOf(mollie.payments.cancel({ paymentId: ideal.id }))).toBe(422)
    expect((await mollie.payments.cancel({ paymentId: transfer.id })).status).toBe("canceled")
  })

  it("expires an open payment at its expiresAt (iDEAL: 15 minutes) on the fake's clock", async () => {
    const { id, expiresAt } = await create("ideal")
    expect(Date.parse(String(expiresAt)) - Date.now()).toBeGreaterThan(14 * 60_000)
    fake.advance(14 * 60)
    expect((await mollie.payments.get({ paymentId: id })).status).toBe("open")
    fake.advance(2 * 60)
    expect((await mollie.payments.get({ paymentId: id })).status).toBe("expired")
  })

  it("pings the webhook with id=tr_… on a status change, not for open or pending", async () => {
    const { id } = await create("ideal")
    fake.setStatus(id, "pending")
    fake.setStatus(id, "paid")
    const [ping] = await receiver.waitFor(1, "/mollie")
    expect(ping?.body).toBe(`id=${id}`)
    expect(ping?.headers["content-type"]).toBe("application/x-www-form-urlencoded")
    await fake.settled()
    expect(fake.pings).toHaveLength(1)
  })

  it("retries a failed ping on Mollie's schedule (compressed), 10 attempts in all", async () => {
    receiver.answer({ status: 500 }, "/mollie")
    const { id } = await create("ideal")
    fake.setStatus(id, "failed")
    await fake.settled()
    const attempts = receiver.received("/mollie")
    expect(attempts).toHaveLength(retryMinutes.length)
    expect(fake.pings.map((ping) => ping.attempt)).toEqual(retryMinutes.map((_, index) => index + 1))
    // The gaps follow the schedule: the 22 h wait (1,320 minutes) is the longest by far.
    const gaps = attempts.slice(1).map((attempt, index) => attempt.receivedAt - (attempts[index]?.receivedAt ?? 0))
    expect(gaps.at(-1)).toBeGreaterThanOrEqual(1_320 * 2)
    expect(gaps[0]).toBeLessThan(gaps.at(-1) ?? 0)
  })

  it("stops retrying once the receiver answers 2xx", async () => {
    let calls = 0
    receiver.answer(() => ({ status: ++calls < 3 ? 503 : 200 }), "/mollie")
    const { id } = await create("ideal")
    fake.setStatus(id, "paid")
    await fake.settled()
    expect(fake.pings.map((ping) => ping.status)).toEqual([503, 503, 200])
  })

  it("drops and repeats pings when told", async () => {
    const { id } = await create("ideal")
    fake.pingFault({ drop: true })
    fake.setStatus(id, "paid")
    await fake.settled()
    expect(receiver.received("/mollie")).toHaveLength(0)
    fake.pingFault({ repeat: 2 })
    fake.chargeBack(id, 500)
    await fake.settled()
    expect(receiver.received("/mollie")).toHaveLength(3)
  })

  it("refunds: the duplicate 409 within the hour, not after it; refund changes ping the payment", async () => {
    const { id } = await create("ideal")
    fake.setStatus(id, "paid")
    await fake.settled()
    receiver.requests.length = 0
    const refund = () =>
      mollie.refunds.create({ paymentId: id, refundRequest: { amount: { currency: "EUR", value: "1.00" } } })
    const first = await refund()
    expect(await statusOf(refund())).toBe(409)
    fake.advance(3_601)
    expect((await refund()).status).toBe("pending")
    fake.settleRefund(first.id, "refunded")
    await fake.settled()
    expect(receiver.received("/mollie").map((ping) => ping.body)).toEqual([`id=${id}`])
    expect(fake.calls("refunds.create")).toBe(3)
  })

  it("the test checkout: canceled goes to cancelUrl, expired and failed to redirectUrl, open changes nothing", async () => {
    for (const [outcome, status, location] of [
      ["canceled", "canceled", "https://shop.example/cancelled"],
      ["expired", "expired", "https://shop.example/return"],
      ["failed", "failed", "https://shop.example/return"],
      ["open", "open", "https://shop.example/return"]
    ] as const) {
      const payment = await create("ideal")
      const href = payment.links.checkout?.href ?? ""
      const answer = await fetch(href, {
        method: "POST",
        body: new URLSearchParams({ final_state: outcome }),
        redirect: "manual"
      })
      expect(answer.headers.get("location"), outcome).toBe(location)
      expect((await mollie.payments.get({ paymentId: payment.id })).status, outcome).toBe(status)
    }
  })
})
