import { type KassaEvent, sign, signedRequest, verify, verifyRequest } from "@kassa/webhook-verify"
import { describe, expect, it } from "vitest"
import { paidEvent, rejection, secret } from "./helpers.ts"

describe("sign", () => {
  it("accepts the timestamp as a Date or Unix seconds and defaults to now", async () => {
    const date = new Date("2026-11-22T10:15:30.999Z")
    expect(await sign("{}", secret, { timestamp: date })).toBe(await sign("{}", secret, { timestamp: 1_795_342_530 }))
    const before = Math.floor(Date.now() / 1000)
    const t = Number((await sign("{}", secret)).split(",")[0]?.slice(2))
    expect(t).toBeGreaterThanOrEqual(before)
    expect(t).toBeLessThanOrEqual(Math.floor(Date.now() / 1000))
  })

  it.each([-1, Number.NaN, Date.now()])("rejects the timestamp %s (milliseconds included)", async (timestamp) => {
    expect(await rejection(() => sign("{}", secret, { timestamp }))).toBeInstanceOf(RangeError)
  })

  it.each([[""], [[] as Array<string>]])("rejects an empty secret %j", async (secrets) => {
    expect(await rejection(() => sign("{}", secrets))).toBeInstanceOf(TypeError)
  })
})

describe("signedRequest", () => {
  const refunded: KassaEvent = { ...paidEvent, event: "payment.refunded" }

  it("builds a delivery with Kassa's headers", async () => {
    const init = await signedRequest(refunded, secret, { timestamp: 1_795_342_530 })
    expect(init.method).toBe("POST")
    expect(init.headers).toMatchObject({
      "Content-Type": "application/json",
      "User-Agent": "Kassa-Webhooks/1.0",
      "X-Service-Event": "payment.refunded"
    })
    expect(init.body).toBe(JSON.stringify(refunded))
    const event = await verify(init.body, init.headers["X-Service-Signature"], secret, { now: 1_795_342_530 })
    expect(event).toEqual(refunded)
  })

  it("can be used as a RequestInit", async () => {
    const request = new Request("https://shop.example.com/webhooks/kassa", await signedRequest(refunded, secret))
    expect(await verifyRequest(request, secret)).toEqual(refunded)
  })
})
