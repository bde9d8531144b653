import {
  type KassaEvent,
  kassaEventNames,
  type RawBody,
  sign,
  verify,
  WebhookVerificationError,
  type WebhookVerificationErrorReason
} from "@kassa/webhook-verify"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { paidEvent } from "./helpers.ts"

const encoder = new TextEncoder()

/** The reason `verify` rejects with, or "accepted". */
const outcome = async (
  body: RawBody,
  header: string,
  secrets: string | ReadonlyArray<string>,
  now: number,
  toleranceSeconds?: number
): Promise<WebhookVerificationErrorReason | "accepted"> => {
  try {
    await verify(body, header, secrets, toleranceSeconds === undefined ? { now } : { now, toleranceSeconds })
    return "accepted"
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason
    throw error
  }
}

const secretArb = fc.string({ minLength: 1, maxLength: 64, unit: "binary" })
const timestampArb = fc.integer({ min: 0, max: 4_102_444_800 })

/** A valid event with arbitrary text in it, serialised in an arbitrary layout. */
const eventBodyArb = fc
  .record({
    event: fc.constantFrom(...kassaEventNames),
    description: fc.option(fc.string({ unit: "binary" })),
    order_reference: fc.string({ unit: "grapheme" }),
    metadata: fc.dictionary(
      fc.string({ maxLength: 10 }),
      fc.oneof(fc.string({ unit: "grapheme" }), fc.integer(), fc.boolean(), fc.constant(null))
    ),
    indent: fc.constantFrom(undefined, 2, "\t")
  })
  .map(({ event, description, order_reference, metadata, indent }) => {
    const value = { ...paidEvent, event, data: { ...paidEvent.data, description, order_reference, metadata } }
    return { value: value as KassaEvent, text: JSON.stringify(value, null, indent) }
  })

type Encoding = "string" | "Uint8Array" | "ArrayBuffer" | "Buffer"
const encodingArb = fc.constantFrom<Encoding>("string", "Uint8Array", "ArrayBuffer", "Buffer")
const encode = (text: string, encoding: Encoding): RawBody => {
  switch (encoding) {
    case "string":
      return text
    case "Uint8Array":
      return encoder.encode(text)
    case "ArrayBuffer":
      return encoder.encode(text).buffer
    case "Buffer":
      return Buffer.from(text, "utf8")
  }
}

const bytesArb = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 512 }),
  fc.string({ minLength: 1, unit: "binary" }).map((text) => encoder.encode(text))
)

const hexDigits = "0123456789abcdef"

describe("properties", () => {
  it("sign then verify returns the event, for any body encoding, secret and time", async () => {
    await fc.assert(
      fc.asyncProperty(eventBodyArb, encodingArb, secretArb, timestampArb, async (body, encoding, secret, t) => {
        const header = await sign(body.text, secret, { timestamp: t })
        expect(await verify(encode(body.text, encoding), header, secret, { now: t })).toEqual(body.value)
      })
    )
  })

  it("the signature holds for arbitrary bytes; only the JSON check can then fail", async () => {
    await fc.assert(
      fc.asyncProperty(bytesArb, secretArb, timestampArb, async (bytes, secret, t) => {
        const header = await sign(bytes, secret, { timestamp: t })
        expect(["accepted", "invalid_body"]).toContain(await outcome(bytes, header, secret, t))
      })
    )
  })

  it("flipping any bit pattern of any body byte breaks the signature", async () => {
    await fc.assert(
      fc.asyncProperty(
        bytesArb,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        secretArb,
        timestampArb,
        async (bytes, index, mask, secret, t) => {
          const header = await sign(bytes, secret, { timestamp: t })
          const tampered = bytes.slice()
          const at = index % tampered.length
          tampered[at] = (tampered[at] ?? 0) ^ mask
          expect(await outcome(tampered, header, secret, t)).toBe("no_matching_signature")
        }
      )
    )
  })

  it("changing any character of the signature breaks it", async () => {
    await fc.assert(
      fc.asyncProperty(
        bytesArb,
        fc.integer({ min: 0, max: 63 }),
        fc.integer({ min: 1, max: 15 }),
        secretArb,
        timestampArb,
        async (bytes, index, shift, secret, t) => {
          const header = await sign(bytes, secret, { timestamp: t })
          const [prefix, signature = ""] = header.split("v1=")
          const digit = hexDigits.indexOf(signature.charAt(index))
          const changed = `${signature.slice(0, index)}${hexDigits.charAt((digit + shift) % 16)}${signature.slice(index + 1)}`
          expect(await outcome(bytes, `${prefix}v1=${changed}`, secret, t)).toBe("no_matching_signature")
        }
      )
    )
  })

  it("changing any digit of the timestamp breaks the signature", async () => {
    await fc.assert(
      fc.asyncProperty(
        bytesArb,
        fc.nat(),
        fc.integer({ min: 1, max: 9 }),
        secretArb,
        timestampArb,
        async (bytes, index, shift, secret, t) => {
          const header = await sign(bytes, secret, { timestamp: t })
          const text = String(t)
          const at = index % text.length
          const digit = (Number(text.charAt(at)) + shift) % 10
          // A changed leading digit must stay non-zero to remain well formed.
          fc.pre(!(at === 0 && digit === 0 && text.length > 1))
          const changed = `${text.slice(0, at)}${digit}${text.slice(at + 1)}`
          const now = Number(changed)
          expect(await outcome(bytes, header.replace(`t=${text}`, `t=${changed}`), secret, now)).toBe(
            "no_matching_signature"
          )
        }
      )
    )
  })

  it("a different secret never verifies", async () => {
    await fc.assert(
      fc.asyncProperty(bytesArb, secretArb, secretArb, timestampArb, async (bytes, secret, wrong, t) => {
        // Lone surrogates encode to U+FFFD, so compare the key bytes, not the strings.
        fc.pre(Buffer.compare(encoder.encode(secret), encoder.encode(wrong)) !== 0)
        const header = await sign(bytes, secret, { timestamp: t })
        expect(await outcome(bytes, header, wrong, t)).toBe("no_matching_signature")
      })
    )
  })

  it("with several v1 and several secrets, any one shared secret verifies", async () => {
    await fc.assert(
      fc.asyncProperty(
        eventBodyArb,
        fc.uniqueArray(secretArb, { minLength: 1, maxLength: 4 }),
        fc.array(secretArb, { maxLength: 3 }),
        fc.nat(),
        timestampArb,
        async (body, signing, others, pick, t) => {
          const header = await sign(body.text, signing, { timestamp: t })
          expect(header.split(",v1=")).toHaveLength(signing.length + 1)
          const shared = signing[pick % signing.length] ?? ""
          expect(await outcome(body.text, header, [...others, shared], t)).toBe("accepted")
          expect(await outcome(body.text, header, shared, t)).toBe("accepted")
        }
      )
    )
  })

  it("accepts exactly the timestamps within the tolerance, in both directions", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 100_000 }),
        fc.integer({ min: -200_000, max: 200_000 }),
        timestampArb,
        async (tolerance, offset, t) => {
          fc.pre(t + offset >= 0)
          const body = JSON.stringify(paidEvent)
          const header = await sign(body, "whsec_x", { timestamp: t + offset })
          expect(await outcome(body, header, "whsec_x", t, tolerance)).toBe(
            Math.abs(offset) <= tolerance ? "accepted" : "timestamp_outside_tolerance"
          )
        }
      )
    )
  })
})
