import { sign, verify } from "@kassa/webhook-verify"
import { describe, expect, it } from "vitest"
import { vectors } from "./helpers.ts"

// The same file is checked by @kassa/core's WebhookSignature tests.
describe("test vectors", () => {
  it("cover a rotation with two secrets and a non-ASCII UTF-8 body", () => {
    expect(vectors.some((vector) => vector.secrets.length === 2)).toBe(true)
    expect(vectors.some((vector) => Buffer.byteLength(vector.body) > vector.body.length)).toBe(true)
  })

  describe.each(vectors)("$name", (vector) => {
    it("sign produces the expected header", async () => {
      expect(await sign(vector.body, vector.secrets, { timestamp: vector.timestamp })).toBe(vector.header)
    })

    it("verify accepts the header under each secret, for a string and for bytes", async () => {
      for (const secret of vector.secrets) {
        for (const body of [vector.body, Buffer.from(vector.body, "utf8")]) {
          const event = await verify(body, vector.header, secret, { now: vector.timestamp })
          expect(event).toEqual(JSON.parse(vector.body))
        }
      }
    })

    it("verify rejects the header under another secret", async () => {
      await expect(verify(vector.body, vector.header, "whsec_other", { now: vector.timestamp })).rejects.toMatchObject({
        reason: "no_matching_signature"
      })
    })
  })
})
