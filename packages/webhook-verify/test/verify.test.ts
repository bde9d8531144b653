import {
  isKnownEventName,
  type KassaEvent,
  sign,
  signatureHeaderName,
  verify,
  verifyRequest,
  WebhookVerificationError,
  type WebhookVerificationErrorReason
} from "@kassa/webhook-verify"
import { describe, expect, it } from "vitest"
import { otherSecret, paidEvent, rejection, secret } from "./helpers.ts"

const t = 1_795_342_530
const body = JSON.stringify(paidEvent)
const signed = (payload: string | Uint8Array = body, secrets: string | ReadonlyArray<string> = secret, at = t) =>
  sign(payload, secrets, { timestamp: at })

const expectReason = async (
  promise: () => Promise<unknown>,
  reason: WebhookVerificationErrorReason
): Promise<WebhookVerificationError> => {
  const error = await rejection(promise)
  expect(error).toBeInstanceOf(WebhookVerificationError)
  const verificationError = error as WebhookVerificationError
  expect(verificationError.reason).toBe(reason)
  expect(verificationError.name).toBe("WebhookVerificationError")
  expect(verificationError.message.startsWith(`${reason}: `)).toBe(true)
  return verificationError
}

describe("verify", () => {
  it("returns the event of a correctly signed body", async () => {
    const event = await verify(body, await signed(), secret, { now: t })
    expect(event).toEqual(paidEvent)
    expect(event.event).toBe("payment.paid")
  })

  describe("body types", () => {
    const bytes = new TextEncoder().encode(body)
    it.each<[string, () => unknown]>([
      ["string", () => body],
      ["Uint8Array", () => bytes],
      ["ArrayBuffer", () => bytes.slice().buffer],
      ["Buffer", () => Buffer.from(body)],
      ["Uint8Array view into a larger buffer", () => Buffer.concat([Buffer.from("xx"), Buffer.from(body)]).subarray(2)],
      ["DataView", () => new DataView(bytes.slice().buffer)]
    ])("accepts a %s", async (_, make) => {
      const event = await verify(make() as Uint8Array, await signed(), secret, { now: t })
      expect(event.id).toBe(paidEvent.id)
    })

    it("rejects an already-parsed object and says how to keep the raw body", async () => {
      const error = await expectReason(
        async () => verify(paidEvent as unknown as string, await signed(), secret, { now: t }),
        "body_already_parsed"
      )
      expect(error.message).toContain("express.raw({ type: 'application/json' })")
      expect(error.message).toContain("parseAs: 'buffer'")
    })

    it.each([undefined, null])("rejects a missing body (%s)", async (missing) => {
      const error = await expectReason(
        async () => verify(missing as unknown as string, await signed(), secret, { now: t }),
        "invalid_body"
      )
      expect(error.message).toContain("express.raw")
    })

    it("rejects a number as body", async () => {
      await expectReason(
        async () => verify(42 as unknown as string, await signed(), secret, { now: t }),
        "invalid_body"
      )
    })
  })

  describe("header", () => {
    it.each([undefined, null, "", "   ", []])("rejects a missing header (%j)", async (header) => {
      const error = await expectReason(() => verify(body, header, secret, { now: t }), "missing_header")
      expect(error.message).toContain("x-service-signature")
    })

    it("accepts a header that Node.js hands over as an array", async () => {
      const header = await signed()
      const [timestamp, v1] = header.split(",")
      await expect(verify(body, [`${timestamp}`, `${v1}`], secret, { now: t })).resolves.toEqual(paidEvent)
    })

    it("accepts white space around entries and skips unknown schemes", async () => {
      const header = (await signed()).replace(",", " , v0=abc , ")
      await expect(verify(body, header, secret, { now: t })).resolves.toEqual(paidEvent)
    })

    const v1 = "a".repeat(64)
    it.each([
      ["no t", `v1=${v1}`],
      ["no v1", `t=${t}`],
      ["only an unknown scheme", `t=${t},v2=${v1}`],
      ["a non-numeric t", `t=abc,v1=${v1}`],
      ["a t with trailing junk", `t=${t}abc,v1=${v1}`],
      ["a negative t", `t=-5,v1=${v1}`],
      ["a fractional t", `t=${t}.5,v1=${v1}`],
      ["a t with leading zeros", `t=0${t},v1=${v1}`],
      ["a t beyond safe integers", `t=99999999999999999999,v1=${v1}`],
      ["two t", `t=${t},t=${t},v1=${v1}`],
      ["an empty t", `t=,v1=${v1}`],
      ["a short v1", `t=${t},v1=abc`],
      ["an upper-case v1", `t=${t},v1=${v1.toUpperCase()}`],
      ["a non-hex v1", `t=${t},v1=${"g".repeat(64)}`],
      ["an entry without =", `t=${t},v1=${v1},junk`],
      ["an empty entry", `t=${t},,v1=${v1}`],
      ["an entry with an empty key", `t=${t},=x,v1=${v1}`],
      ["Stripe-like spaces instead of commas", `t=${t} v1=${v1}`],
      ["an oversized header", `t=${t},${`v1=${v1},`.repeat(100)}v1=${v1}`]
    ])("rejects %s as malformed", async (_, header) => {
      await expectReason(() => verify(body, header, secret, { now: t }), "malformed_header")
    })

    it("rejects a non-string header as malformed", async () => {
      await expectReason(() => verify(body, 42 as unknown as string, secret, { now: t }), "malformed_header")
    })
  })

  describe("signatures", () => {
    it("rejects a wrong secret", async () => {
      const error = await expectReason(
        async () => verify(body, await signed(body, otherSecret), secret, { now: t }),
        "no_matching_signature"
      )
      expect(error.message).toContain("whsec_")
    })

    it("keys the HMAC with the whole secret, whsec_ included", async () => {
      const withoutPrefix = secret.slice("whsec_".length)
      await expectReason(
        async () => verify(body, await signed(body, withoutPrefix), secret, { now: t }),
        "no_matching_signature"
      )
    })

    it("rejects a body re-serialised after parsing", async () => {
      const pretty = JSON.stringify(paidEvent, null, 2)
      await expectReason(async () => verify(pretty, await signed(), secret, { now: t }), "no_matching_signature")
    })

    it("accepts any matching v1 among several (rotation, new first)", async () => {
      const header = await signed(body, [otherSecret, secret])
      expect(header.split(",")).toHaveLength(3)
      await expect(verify(body, header, secret, { now: t })).resolves.toEqual(paidEvent)
      await expect(verify(body, header, otherSecret, { now: t })).resolves.toEqual(paidEvent)
    })

    it("accepts several secrets, any of which may match", async () => {
      await expect(verify(body, await signed(body, secret), [otherSecret, secret], { now: t })).resolves.toEqual(
        paidEvent
      )
      await expect(verify(body, await signed(body, otherSecret), [otherSecret, secret], { now: t })).resolves.toEqual(
        paidEvent
      )
      await expectReason(
        async () => verify(body, await signed(body, "whsec_third"), [otherSecret, secret], { now: t }),
        "no_matching_signature"
      )
    })

    it("rejects a signature made for another timestamp", async () => {
      const header = (await signed(body, secret, t)).replace(`t=${t}`, `t=${t + 1}`)
      await expectReason(() => verify(body, header, secret, { now: t }), "no_matching_signature")
    })

    it("checks the signature before the timestamp", async () => {
      const header = await signed(body, otherSecret, t - 10_000)
      await expectReason(() => verify(body, header, secret, { now: t }), "no_matching_signature")
    })
  })

  describe("tolerance", () => {
    it.each([
      ["exactly 300 s old", -300],
      ["exactly 300 s ahead", 300],
      ["current", 0]
    ])("accepts a timestamp %s", async (_, offset) => {
      await expect(verify(body, await signed(body, secret, t + offset), secret, { now: t })).resolves.toEqual(paidEvent)
    })

    it.each([
      ["301 s old", -301, "past"],
      ["301 s ahead", 301, "future"]
    ])("rejects a timestamp %s", async (_, offset, direction) => {
      const error = await expectReason(
        async () => verify(body, await signed(body, secret, t + offset), secret, { now: t }),
        "timestamp_outside_tolerance"
      )
      expect(error.message).toContain(`301 s in the ${direction}`)
    })

    it("honours a custom tolerance", async () => {
      const header = await signed(body, secret, t - 60)
      await expect(verify(body, header, secret, { now: t, toleranceSeconds: 60 })).resolves.toEqual(paidEvent)
      await expectReason(
        () => verify(body, header, secret, { now: t, toleranceSeconds: 59 }),
        "timestamp_outside_tolerance"
      )
    })

    it("takes now as a Date, Unix seconds or a function", async () => {
      const header = await signed(body, secret, t)
      const date = new Date((t + 300) * 1000 + 999)
      await expect(verify(body, header, secret, { now: date })).resolves.toEqual(paidEvent)
      await expect(verify(body, header, secret, { now: () => date })).resolves.toEqual(paidEvent)
      await expect(verify(body, header, secret, { now: () => t - 300 })).resolves.toEqual(paidEvent)
      await expectReason(
        () => verify(body, header, secret, { now: new Date((t + 301) * 1000) }),
        "timestamp_outside_tolerance"
      )
    })

    it("uses the system clock by default", async () => {
      const now = Math.floor(Date.now() / 1000)
      await expect(verify(body, await signed(body, secret, now), secret)).resolves.toEqual(paidEvent)
      await expectReason(
        async () => verify(body, await signed(body, secret, now - 3600), secret),
        "timestamp_outside_tolerance"
      )
    })
  })

  describe("body parsing after verification", () => {
    it.each([
      ["not JSON", "not json"],
      ["not UTF-8", new Uint8Array([0x7b, 0xff, 0x7d])],
      ["a JSON array", "[]"],
      ["missing data", JSON.stringify({ ...paidEvent, data: undefined })],
      ["an id without evt_", JSON.stringify({ ...paidEvent, id: "6b3f2a9c" })],
      ["an event without a name", JSON.stringify({ ...paidEvent, event: undefined })]
    ])("rejects a signed body that is %s", async (_, payload) => {
      await expectReason(async () => verify(payload, await signed(payload), secret, { now: t }), "invalid_body")
    })

    it("returns an authentic event with a name this version does not know, so receivers can ignore it", async () => {
      const payload = JSON.stringify({ ...paidEvent, event: "payment.disputed" })
      const event = await verify(payload, await signed(payload), secret, { now: t })
      expect(event.event).toBe("payment.disputed")
      expect(isKnownEventName(event.event)).toBe(false)
      expect(isKnownEventName("payment.paid")).toBe(true)
    })

    it("never parses an unauthenticated body", async () => {
      const header = await signed("not json", otherSecret)
      await expectReason(() => verify("not json", header, secret, { now: t }), "no_matching_signature")
    })

    it("returns every event name as a discriminated union", async () => {
      const names = new Set<KassaEvent["event"]>()
      for (const name of [
        "payment.paid",
        "payment.failed",
        "payment.cancelled",
        "payment.expired",
        "payment.partially_refunded",
        "payment.refunded"
      ] as const) {
        const payload = JSON.stringify({ ...paidEvent, event: name })
        names.add((await verify(payload, await signed(payload), secret, { now: t })).event)
      }
      expect(names.size).toBe(6)
    })
  })

  describe("configuration errors", () => {
    it.each<[string, unknown]>([
      ["undefined", undefined],
      ["an empty string", ""],
      ["an empty array", []],
      ["an array with an empty secret", [secret, ""]]
    ])("throws a TypeError for %s as secret", async (_, secrets) => {
      const error = await rejection(async () => verify(body, await signed(), secrets as string, { now: t }))
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toContain("KASSA_WEBHOOK_SECRET")
    })

    it.each([-1, Number.NaN])("throws a TypeError for tolerance %s", async (toleranceSeconds) => {
      const error = await rejection(async () => verify(body, await signed(), secret, { now: t, toleranceSeconds }))
      expect(error).toBeInstanceOf(TypeError)
    })

    it("throws a TypeError for an invalid now", async () => {
      const error = await rejection(async () => verify(body, await signed(), secret, { now: new Date(Number.NaN) }))
      expect(error).toBeInstanceOf(TypeError)
    })
  })
})

describe("verifyRequest", () => {
  const request = async (init: { body?: string; header?: string | null } = {}) =>
    new Request("https://shop.example.com/webhooks/kassa", {
      method: "POST",
      headers: init.header === null ? {} : { [signatureHeaderName]: init.header ?? (await signed(init.body ?? body)) },
      body: init.body ?? body
    })

  it("verifies a Web Request", async () => {
    await expect(verifyRequest(await request(), secret, { now: t })).resolves.toEqual(paidEvent)
  })

  it("reads the header case-insensitively", async () => {
    const req = new Request("https://shop.example.com/webhooks/kassa", {
      method: "POST",
      headers: { "x-service-signature": await signed() },
      body
    })
    await expect(verifyRequest(req, secret, { now: t })).resolves.toEqual(paidEvent)
  })

  it("rejects a request without the header", async () => {
    await expectReason(async () => verifyRequest(await request({ header: null }), secret, { now: t }), "missing_header")
  })

  it("rejects a request whose body was already read, and works on a clone", async () => {
    const req = await request()
    const clone = req.clone()
    await req.json()
    const error = await expectReason(() => verifyRequest(req, secret, { now: t }), "body_already_parsed")
    expect(error.message).toContain("request.clone()")
    await expect(verifyRequest(clone, secret, { now: t })).resolves.toEqual(paidEvent)
  })

  it("rejects a tampered body", async () => {
    await expectReason(
      async () =>
        verifyRequest(await request({ body: body.replace("12500", "1"), header: await signed() }), secret, { now: t }),
      "no_matching_signature"
    )
  })
})
