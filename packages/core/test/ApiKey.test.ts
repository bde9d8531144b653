import { createHmac } from "node:crypto"
import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Redacted, Schema } from "effect"
import { Mac, SecureRandom } from "effect/crypto"
import { Mode } from "../src/domain/Mode.ts"
import * as ApiKey from "../src/keys/ApiKey.ts"
import * as Base62 from "../src/keys/Base62.ts"

const keyShape = /^pk_(test|live)_[0-9A-Za-z]{32}$/

// A byte source that counts 0, 1, 2, … so generated keys are known in advance.
const counting = () => {
  let next = 0
  return SecureRandom.make((size) => Uint8Array.from({ length: size }, () => next++ & 0xff))
}

const key = (text: string): ApiKey.ApiKey => ApiKey.ApiKey.make(text)
const sample = key("pk_test_AbCdEFGHIJKLMNOPQRSTUVWXYZ01wxyz")

const crypto = Layer.mergeAll(
  SecureRandom.layerWebCrypto,
  Mac.layerWebCrypto.pipe(Layer.provide(SecureRandom.layerWebCrypto))
)

describe("ApiKey", () => {
  describe("generate (deterministic SecureRandom)", () => {
    it.effect("uses the mode's prefix and 32 base62 characters from the random bytes", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* ApiKey.generate("test"), "pk_test_0123456789ABCDEFGHIJKLMNOPQRSTUV")
      }).pipe(Effect.provideService(SecureRandom.SecureRandom, counting()))
    )

    it.effect("gives a live key for live mode", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* ApiKey.generate("live"), "pk_live_0123456789ABCDEFGHIJKLMNOPQRSTUV")
      }).pipe(Effect.provideService(SecureRandom.SecureRandom, counting()))
    )
  })

  layer(crypto)("with WebCrypto", (it) => {
    it.effect.prop("generated keys have the key shape and parse back to their mode", [Mode], ([mode]) =>
      Effect.gen(function* () {
        const generated = yield* ApiKey.generate(mode)
        assert.match(generated, keyShape)
        assert.isTrue(generated.startsWith(ApiKey.prefix(mode)))
        const parsed = Option.getOrThrow(ApiKey.parse(generated))
        assert.strictEqual(parsed.key, generated)
        assert.strictEqual(parsed.mode, mode)
        assert.strictEqual(ApiKey.modeOf(generated), mode)
      })
    )

    it.effect("generated keys differ", () =>
      Effect.gen(function* () {
        const keys = yield* Effect.replicateEffect(ApiKey.generate("test"), 200)
        assert.strictEqual(new Set(keys).size, 200)
      })
    )

    it.effect("hash is the lowercase hex HMAC-SHA256 of the key under the server secret", () =>
      Effect.gen(function* () {
        const k = key("pk_test_0123456789ABCDEFGHIJKLMNOPQRSTUV")
        const expected = "164141d24a533f50f694c6f99b61536f754e927f5a10a41a4908aab7f90edf68"
        assert.strictEqual(yield* ApiKey.hash(k, "kassa-server-secret"), expected)
        assert.strictEqual(yield* ApiKey.hash(k, Redacted.make("kassa-server-secret")), expected)
        assert.notStrictEqual(yield* ApiKey.hash(k, "kassa-server-secret-2"), expected)
      })
    )

    it.effect("hash fails with CryptoError for an empty server secret", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(ApiKey.hash(sample, ""))
        assert.strictEqual(error._tag, "CryptoError")
      })
    )

    it.effect.prop(
      "hash is deterministic, matches node:crypto, and depends on key and secret",
      [Mode, Schema.String.check(Schema.isMinLength(1)), Schema.String.check(Schema.isMinLength(1))],
      ([mode, secret, otherSecret]) =>
        Effect.gen(function* () {
          const k = yield* ApiKey.generate(mode)
          const other = yield* ApiKey.generate(mode)
          const digest = yield* ApiKey.hash(k, secret)
          assert.match(digest, /^[0-9a-f]{64}$/)
          assert.strictEqual(yield* ApiKey.hash(k, secret), digest)
          assert.strictEqual(digest, createHmac("sha256", Buffer.from(secret, "utf8")).update(k).digest("hex"))
          assert.notStrictEqual(yield* ApiKey.hash(other, secret), digest)
          // Secrets are compared as HMAC sees them: UTF-8 bytes (lone surrogates become U+FFFD) without trailing
          // zero bytes (HMAC pads short keys with zeros, so "s" and "s\0" are the same key).
          const unpadded = (text: string) =>
            Buffer.from(text, "utf8")
              .toString("hex")
              .replace(/(00)+$/, "")
          if (unpadded(otherSecret) !== unpadded(secret)) {
            assert.notStrictEqual(yield* ApiKey.hash(k, otherSecret), digest)
          }
        })
    )
  })

  describe("parse", () => {
    it("reads the mode from the prefix", () => {
      const test = Option.getOrThrow(ApiKey.parse("pk_test_0123456789ABCDEFGHIJKLMNOPQRSTUV"))
      const live = Option.getOrThrow(ApiKey.parse("pk_live_abcdefghijklmnopqrstuvwxyz012345"))
      assert.strictEqual(test.mode, "test")
      assert.strictEqual(live.mode, "live")
    })

    it("is None for anything that is not exactly a key", () => {
      const random32 = "0123456789ABCDEFGHIJKLMNOPQRSTUV"
      const notKeys = [
        "",
        "pk_test_",
        `pk_test_${random32.slice(1)}`,
        `pk_test_${random32}W`,
        `pk_prod_${random32}`,
        `PK_TEST_${random32}`,
        `sk_test_${random32}`,
        `pk_test-${random32}`,
        `pk_test_${random32.slice(1)}-`,
        `pk_test_${random32.slice(1)}é`,
        ` pk_test_${random32}`,
        `pk_test_${random32} `,
        `pk_test_${random32}\n`,
        `Bearer pk_test_${random32}`,
        `whsec_${random32}`
      ]
      for (const token of notKeys) assert.isTrue(Option.isNone(ApiKey.parse(token)), JSON.stringify(token))
    })

    it.prop("never throws, and is Some exactly for the key shape", [Schema.String], ([token]) => {
      assert.strictEqual(Option.isSome(ApiKey.parse(token)), keyShape.test(token))
    })
  })

  describe("display", () => {
    it("shows the prefix, the first four, an ellipsis and the last four", () => {
      assert.strictEqual(ApiKey.display(sample), "pk_test_AbCd…wxyz")
      assert.strictEqual(ApiKey.display(key("pk_live_0123456789ABCDEFGHIJKLMNOPQRSTUV")), "pk_live_0123…STUV")
    })

    it.effect.prop("never reveals more than 8 characters of the random part", [Mode], ([mode]) =>
      Effect.gen(function* () {
        const generated = yield* ApiKey.generate(mode)
        const shown = ApiKey.display(generated)
        const random = generated.slice(8)
        assert.strictEqual(shown.length, 8 + 4 + 1 + 4)
        assert.strictEqual(shown, `${ApiKey.prefix(mode)}${random.slice(0, 4)}…${random.slice(-4)}`)
        const revealed = shown.slice(8).replace("…", "")
        assert.strictEqual(revealed.length, 8)
        // The ellipsis is the single character U+2026, not three dots.
        assert.strictEqual(shown.split("…").length, 2)
        assert.notInclude(shown, "...")
      }).pipe(Effect.provide(SecureRandom.layerWebCrypto))
    )
  })

  describe("Base62.random (the shared generator)", () => {
    const fromBytes = (bytes: ReadonlyArray<number>) => {
      let i = 0
      // Past the scripted bytes it repeats byte 0, which maps to "0".
      return SecureRandom.make((size) => Uint8Array.from({ length: size }, () => bytes[i++] ?? 0))
    }

    it("has 62 distinct characters in ASCII order", () => {
      assert.strictEqual(Base62.alphabet.length, 62)
      assert.strictEqual(new Set(Base62.alphabet).size, 62)
      assert.strictEqual([...Base62.alphabet].sort().join(""), Base62.alphabet)
      assert.isTrue(Base62.isBase62(Base62.alphabet))
      assert.isFalse(Base62.isBase62("abc-"))
      assert.strictEqual(Base62.rejectionThreshold, 4 * 62)
    })

    it.effect("maps a byte below 248 to alphabet[byte % 62] and drops bytes 248–255", () =>
      Effect.gen(function* () {
        const text = yield* Base62.random(6)
        // 248…255 are dropped; 0 → "0", 61 → "z", 62 → "0", 247 → 247 % 62 = 61 → "z", 123 → 61 → "z", 124 → "0".
        assert.strictEqual(text, "0z0zz0")
      }).pipe(Effect.provideService(SecureRandom.SecureRandom, fromBytes([248, 0, 255, 61, 62, 249, 247, 123, 124])))
    )

    it.effect("draws again when too many bytes were dropped", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* Base62.random(2), "12")
      }).pipe(Effect.provideService(SecureRandom.SecureRandom, fromBytes([...Array(30).fill(250), 1, 2])))
    )

    it.effect("is exactly uniform over whole cycles of byte values", () =>
      Effect.gen(function* () {
        // Each cycle of the 256 byte values yields 248 characters, every one of the 62 exactly four times.
        const text = yield* Base62.random(248 * 10)
        const counts = new Map<string, number>()
        for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1)
        assert.strictEqual(counts.size, 62)
        for (const count of counts.values()) assert.strictEqual(count, 40)
      }).pipe(Effect.provideService(SecureRandom.SecureRandom, counting()))
    )

    it.effect("gives the empty string for length 0 and dies on a bad length", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* Base62.random(0), "")
        const exit = yield* Effect.exit(Base62.random(-1))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
        const fractional = yield* Effect.exit(Base62.random(2.5))
        assert.isTrue(Exit.isFailure(fractional) && Cause.hasDies(fractional.cause))
      }).pipe(Effect.provideService(SecureRandom.SecureRandom, counting()))
    )
  })
})
