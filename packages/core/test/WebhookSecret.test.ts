import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Schema } from "effect"
import { SecureRandom } from "effect/crypto"
import * as WebhookSecret from "../src/keys/WebhookSecret.ts"

const shape = /^whsec_[0-9A-Za-z]{32}$/

const secret = (text: string): WebhookSecret.WebhookSecret => WebhookSecret.WebhookSecret.make(text)
const current = secret(`whsec_${"New".repeat(10)}AB`)
const previous = secret(`whsec_${"old".repeat(10)}CD`)

const rotatedAt = DateTime.makeUnsafe("2026-11-22T10:00:00.000Z")
const after = (ms: number): DateTime.Utc => DateTime.makeUnsafe(DateTime.toEpochMillis(rotatedAt) + ms)
const hour = 3_600_000

const counting = () => {
  let next = 0
  return SecureRandom.make((size) => Uint8Array.from({ length: size }, () => next++ & 0xff))
}

describe("WebhookSecret", () => {
  it("has the whsec_ prefix and a 24 h rotation grace", () => {
    assert.strictEqual(WebhookSecret.prefix, "whsec_")
    assert.strictEqual(WebhookSecret.randomLength, 32)
    assert.isTrue(Duration.equals(WebhookSecret.rotationGrace, Duration.hours(24)))
  })

  it.effect("generate takes 32 base62 characters from SecureRandom", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* WebhookSecret.generate, "whsec_0123456789ABCDEFGHIJKLMNOPQRSTUV")
    }).pipe(Effect.provideService(SecureRandom.SecureRandom, counting()))
  )

  it.effect.prop("generated secrets have the secret shape", [Schema.Int], () =>
    Effect.gen(function* () {
      const generated = yield* WebhookSecret.generate
      assert.match(generated, shape)
      assert.isTrue(WebhookSecret.isWebhookSecret(generated))
    }).pipe(Effect.provide(SecureRandom.layerWebCrypto))
  )

  it.effect("generated secrets differ", () =>
    Effect.gen(function* () {
      const secrets = yield* Effect.replicateEffect(WebhookSecret.generate, 200)
      assert.strictEqual(new Set(secrets).size, 200)
    }).pipe(Effect.provide(SecureRandom.layerWebCrypto))
  )

  describe("isWebhookSecret", () => {
    it("accepts only the exact shape", () => {
      assert.isTrue(WebhookSecret.isWebhookSecret("whsec_0123456789ABCDEFGHIJKLMNOPQRSTUV"))
      for (const value of [
        "whsec_0123456789ABCDEFGHIJKLMNOPQRSTU",
        "whsec_0123456789ABCDEFGHIJKLMNOPQRSTUVW",
        "whsec-0123456789ABCDEFGHIJKLMNOPQRSTUV",
        "WHSEC_0123456789ABCDEFGHIJKLMNOPQRSTUV",
        "whsec_0123456789ABCDEFGHIJKLMNOPQRST_V",
        " whsec_0123456789ABCDEFGHIJKLMNOPQRSTUV",
        "pk_test_0123456789ABCDEFGHIJKLMNOPQRSTUV",
        "",
        42,
        null,
        undefined,
        {}
      ]) {
        assert.isFalse(WebhookSecret.isWebhookSecret(value), String(value))
      }
    })

    it.prop("agrees with the shape for any string", [Schema.String], ([value]) => {
      assert.strictEqual(WebhookSecret.isWebhookSecret(value), shape.test(value))
    })
  })

  describe("signingSecrets", () => {
    const secretsAt = (ms: number) =>
      WebhookSecret.signingSecrets({ current, previous: { secret: previous, rotatedAt }, now: after(ms) })

    it("without a previous secret: only the current one", () => {
      assert.deepStrictEqual(WebhookSecret.signingSecrets({ current, previous: null, now: rotatedAt }), [current])
    })

    it("right after the regeneration: both, new first", () => {
      assert.deepStrictEqual(secretsAt(0), [current, previous])
      assert.deepStrictEqual(secretsAt(hour), [current, previous])
    })

    it("both until 24 h exactly, then only the new one", () => {
      assert.deepStrictEqual(secretsAt(24 * hour - 1), [current, previous])
      assert.deepStrictEqual(secretsAt(24 * hour), [current])
      assert.deepStrictEqual(secretsAt(24 * hour + 1), [current])
      assert.deepStrictEqual(secretsAt(30 * 24 * hour), [current])
    })

    it("clock skew before the regeneration still signs with both", () => {
      assert.deepStrictEqual(secretsAt(-1000), [current, previous])
    })

    it("does not repeat a previous secret equal to the current one", () => {
      assert.deepStrictEqual(
        WebhookSecret.signingSecrets({ current, previous: { secret: current, rotatedAt }, now: rotatedAt }),
        [current]
      )
    })

    it.prop("is never empty and always starts with the current secret", [Schema.Int], ([offsetSeconds]) => {
      const secrets = secretsAt(offsetSeconds * 1000)
      assert.strictEqual(secrets[0], current)
      assert.strictEqual(secrets.length, offsetSeconds * 1000 < 24 * hour ? 2 : 1)
    })
  })
})
