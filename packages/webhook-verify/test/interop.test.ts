// @kassa/webhook-verify against the signer Kassa actually runs, in both directions.

import { assert, describe, it, layer } from "@effect/vitest"
import * as WebhookEvent from "@kassa/core/domain/WebhookEvent"
import * as WebhookSignature from "@kassa/core/webhooks/WebhookSignature"
import {
  eventHeaderName,
  type KassaEvent,
  kassaEventNames,
  sign,
  signatureHeaderName,
  userAgent,
  verify
} from "@kassa/webhook-verify"
import { Effect, Layer, Schema } from "effect"
import { Mac, SecureRandom } from "effect/crypto"
import fc from "fast-check"
import { otherSecret, paidEvent, secret, vectors } from "./helpers.ts"

const CryptoLive = Mac.layerWebCrypto.pipe(Layer.provide(SecureRandom.layerWebCrypto))
const runCore = <A, E>(effect: Effect.Effect<A, E, Mac.Mac>): Promise<A> =>
  Effect.runPromise(effect.pipe(Effect.provide(CryptoLive)))

const secretArb = fc.string({ minLength: 1, maxLength: 64, unit: "binary" })
const timestampArb = fc.integer({ min: 0, max: 4_102_444_800 })
const payloadArb = fc.oneof(fc.string({ unit: "binary" }), fc.uint8Array({ maxLength: 512 }))

describe("interoperability with @kassa/core", () => {
  it("uses the same header names and User-Agent", () => {
    assert.strictEqual(signatureHeaderName, WebhookSignature.signatureHeaderName)
    assert.strictEqual(eventHeaderName, WebhookSignature.eventHeaderName)
    assert.strictEqual(userAgent, WebhookSignature.userAgent)
  })

  it("describes the event the core sends", () => {
    // Compile-time: every event the core can encode is a KassaEvent.
    const asKassaEvent = (event: WebhookEvent.WebhookEventEncoded): KassaEvent => event
    assert.deepStrictEqual([...kassaEventNames], [...WebhookEvent.EventName.literals])
    for (const vector of vectors) {
      const encoded = Schema.encodeSync(WebhookEvent.WebhookEvent)(
        Schema.decodeUnknownSync(Schema.fromJsonString(WebhookEvent.WebhookEvent))(vector.body)
      )
      assert.deepStrictEqual(asKassaEvent(encoded), JSON.parse(vector.body), vector.name)
    }
  })

  layer(CryptoLive)((it) => {
    it.effect("verify accepts a delivery signed by the core during a rotation", () =>
      Effect.gen(function* () {
        const body = JSON.stringify(paidEvent)
        const now = Math.floor(Date.now() / 1000)
        const header = yield* WebhookSignature.sign({ secrets: [otherSecret, secret], timestamp: now, payload: body })
        for (const key of [secret, otherSecret]) {
          const event = yield* Effect.promise(() => verify(body, header, key))
          assert.deepStrictEqual(event, paidEvent)
        }
      })
    )
  })

  it("core sign → verify: the signature holds for any payload, secrets and time", async () => {
    await fc.assert(
      fc.asyncProperty(
        payloadArb,
        fc.uniqueArray(secretArb, { minLength: 1, maxLength: 3 }),
        timestampArb,
        async (payload, secrets, t) => {
          const [first, ...rest] = secrets
          if (first === undefined) return
          const header = await runCore(WebhookSignature.sign({ secrets: [first, ...rest], timestamp: t, payload }))
          // Arbitrary payloads are rarely events; reaching the JSON check proves the signature held.
          const reason = await verify(payload, header, secrets, { now: t }).then(
            () => "accepted",
            (error: { reason?: string }) => error.reason
          )
          assert.include(["accepted", "invalid_body"], reason)
        }
      )
    )
  })

  it("webhook-verify sign → core parse and re-sign give the same header", async () => {
    await fc.assert(
      fc.asyncProperty(
        payloadArb,
        fc.array(secretArb, { minLength: 1, maxLength: 3 }),
        timestampArb,
        async (payload, secrets, t) => {
          const [first, ...rest] = secrets
          if (first === undefined) return
          const header = await sign(payload, secrets, { timestamp: t })
          const parsed = await runCore(WebhookSignature.parse(header))
          assert.strictEqual(parsed.timestamp, t)
          assert.strictEqual(parsed.signatures.length, secrets.length)
          const resigned = await runCore(WebhookSignature.sign({ secrets: [first, ...rest], timestamp: t, payload }))
          assert.strictEqual(resigned, header)
        }
      )
    )
  })

  it("both parsers agree on which headers are well formed", async () => {
    const v1 = "ab".repeat(32)
    const entry = fc.oneof(
      fc.constant(`v1=${v1}`),
      fc.constant("v1=AB"),
      fc.constant("v2=xyz"),
      fc.constant("junk"),
      fc.constant(""),
      fc.integer({ min: -5, max: 2_000_000_000 }).map((n) => `t=${n}`),
      fc.string({ maxLength: 6 }).map((text) => `t=${text}`),
      fc.string({ maxLength: 8 })
    )
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 5 }), async (entries) => {
        const header = entries.join(",")
        const core = await runCore(
          WebhookSignature.parse(header).pipe(
            Effect.as("well formed"),
            Effect.catchTag("MalformedSignatureHeader", () => Effect.succeed("malformed"))
          )
        )
        const receiver = await verify("{}", header, secret, {
          now: 0,
          toleranceSeconds: Number.POSITIVE_INFINITY
        }).then(
          () => "accepted",
          (error: { reason?: string }) => error.reason
        )
        const receiverView =
          receiver === "malformed_header" || receiver === "missing_header" ? "malformed" : "well formed"
        assert.strictEqual(receiverView, core, header)
      })
    )
  })
})
