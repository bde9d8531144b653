import { createHash } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Digest } from "effect/crypto"
import * as RequestFingerprint from "../src/idempotency/RequestFingerprint.ts"

const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

layer(Digest.layerWebCrypto)("RequestFingerprint", (it) => {
  describe("fromBody", () => {
    it.effect("is the lowercase hex SHA-256 of the canonical JSON", () =>
      Effect.gen(function* () {
        assert.strictEqual(
          yield* RequestFingerprint.fromBody({}),
          "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        )
        assert.strictEqual(
          yield* RequestFingerprint.fromBody({ order_reference: "A-1", amount: 1000 }),
          "6d8d345f5d1c795b04745711d0b573ac561a3333dde660ed539eb017a169e620"
        )
      })
    )

    it.effect("treats no body as {} (cancel: empty or {})", () =>
      Effect.gen(function* () {
        const none = yield* RequestFingerprint.fromBody(undefined)
        assert.strictEqual(none, yield* RequestFingerprint.fromBody({}))
        assert.strictEqual(none, yield* RequestFingerprint.fromBody(JSON.parse(" { } ")))
        assert.strictEqual(Result.getOrThrow(RequestFingerprint.canonicalBody(undefined)), "{}")
      })
    )

    it.effect("ignores key order and white space", () =>
      Effect.gen(function* () {
        const a = yield* RequestFingerprint.fromBody(
          JSON.parse(`{ "amount": 1000,\n  "metadata": {"b": 1, "a": [1, 2]}, "order_reference": "A-1" }`)
        )
        const b = yield* RequestFingerprint.fromBody({
          order_reference: "A-1",
          metadata: { a: [1, 2], b: 1 },
          amount: 1000
        })
        assert.strictEqual(a, b)
      })
    )

    it.effect("differs for different bodies", () =>
      Effect.gen(function* () {
        const bodies: ReadonlyArray<unknown> = [
          { amount: 1000 },
          { amount: 1001 },
          { amount: "1000" },
          { amount: 1000, description: null },
          {},
          [],
          null,
          "",
          0
        ]
        const fingerprints = yield* Effect.forEach(bodies, RequestFingerprint.fromBody)
        assert.strictEqual(new Set(fingerprints).size, bodies.length)
      })
    )

    it.effect("fails with NonJsonValue for a value that is not JSON", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(RequestFingerprint.fromBody({ amount: Number.NaN }))
        assert.strictEqual(error._tag, "NonJsonValue")
        assert.strictEqual(error.path, "/amount")
      })
    )

    it.effect.prop("matches SHA-256 of the canonical text and the schema", [Schema.Json], ([body]) =>
      Effect.gen(function* () {
        const fingerprint = yield* RequestFingerprint.fromBody(body)
        assert.strictEqual(fingerprint, sha256Hex(Result.getOrThrow(RequestFingerprint.canonicalBody(body))))
        assert.isTrue(Schema.is(RequestFingerprint.RequestFingerprint)(fingerprint))
      })
    )

    it.effect.prop("is the same for a re-indented body", [Schema.Json], ([body]) =>
      Effect.gen(function* () {
        const reindented: unknown = JSON.parse(JSON.stringify(body, null, 3))
        assert.strictEqual(yield* RequestFingerprint.fromBody(reindented), yield* RequestFingerprint.fromBody(body))
      })
    )
  })

  describe("RequestFingerprint schema", () => {
    it("accepts 64 lowercase hex characters only", () => {
      const is = Schema.is(RequestFingerprint.RequestFingerprint)
      assert.isTrue(is("a".repeat(64)))
      assert.isFalse(is("A".repeat(64)))
      assert.isFalse(is("a".repeat(63)))
      assert.isFalse(is("g".repeat(64)))
    })
  })
})
