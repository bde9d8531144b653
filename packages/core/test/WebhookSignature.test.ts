import { readFileSync } from "node:fs"
import { assert, describe, it, layer } from "@effect/vitest"
import { Arbitrary, Cause, Effect, Exit, Layer, Schema } from "effect"
import { Mac, SecureRandom } from "effect/crypto"
import { Hex } from "effect/encoding"
import * as WebhookSignature from "../src/webhooks/WebhookSignature.ts"

const CryptoLive = Mac.layerWebCrypto.pipe(Layer.provide(SecureRandom.layerWebCrypto))

// Shared with @kassa/webhook-verify, whose tests check the same vectors.
const Vectors = Schema.Struct({
  vectors: Schema.NonEmptyArray(
    Schema.Struct({
      name: Schema.String,
      secrets: Schema.NonEmptyArray(Schema.String),
      timestamp: Schema.Int,
      body: Schema.String,
      header: Schema.String
    })
  )
})
const { vectors } = Schema.decodeUnknownSync(Schema.fromJsonString(Vectors))(
  readFileSync(new URL("../../webhook-verify/test/fixtures/vectors.json", import.meta.url), "utf8")
)

const secretA = "whsec_3qVb8kR2mT7xZp4LwN9sYc6HdF1gJ5uA"
const secretB = "whsec_Xe7Kp2Wm9Qa4Rt6Ys1Lb8Nc3Vd5Hf0Gj"
const t = 1_795_342_530

const TimestampSchema = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4_102_444_800 }))
const SecretsSchema = Schema.NonEmptyArray(Schema.NonEmptyString)
const signatureArbitrary = Arbitrary.array(
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))),
  { minLength: 32, maxLength: 32 }
).pipe(Arbitrary.map((bytes) => Hex.encode(Uint8Array.from(bytes))))

describe("WebhookSignature", () => {
  it("names the headers of a delivery", () => {
    assert.strictEqual(WebhookSignature.signatureHeaderName, "X-Service-Signature")
    assert.strictEqual(WebhookSignature.eventHeaderName, "X-Service-Event")
    assert.strictEqual(WebhookSignature.userAgent, "Kassa-Webhooks/1.0")
  })

  layer(CryptoLive)("sign", (it) => {
    it.effect.each(vectors)("matches the vector: $name", (vector) =>
      Effect.gen(function* () {
        const fromString = yield* WebhookSignature.sign({
          secrets: vector.secrets,
          timestamp: vector.timestamp,
          payload: vector.body
        })
        const fromBytes = yield* WebhookSignature.sign({
          secrets: vector.secrets,
          timestamp: vector.timestamp,
          payload: new TextEncoder().encode(vector.body)
        })
        assert.strictEqual(fromString, vector.header)
        assert.strictEqual(fromBytes, vector.header)
      })
    )

    it.effect("vectors cover rotation and a non-ASCII body", () =>
      Effect.sync(() => {
        assert.isTrue(vectors.some((vector) => vector.secrets.length === 2))
        assert.isTrue(vectors.some((vector) => new TextEncoder().encode(vector.body).length > vector.body.length))
      })
    )

    it.effect("writes one v1 per secret, in the order of the secrets", () =>
      Effect.gen(function* () {
        const sign = (secrets: readonly [string, ...Array<string>]) =>
          WebhookSignature.sign({ secrets, timestamp: t, payload: "{}" }).pipe(
            Effect.flatMap(WebhookSignature.parse),
            Effect.map((header) => header.signatures)
          )
        const [a] = yield* sign([secretA])
        const [b] = yield* sign([secretB])
        assert.notStrictEqual(a, b)
        assert.deepStrictEqual(yield* sign([secretB, secretA]), [b, a])
        assert.deepStrictEqual(yield* sign([secretA, secretB]), [a, b])
      })
    )

    it.effect("keys the HMAC with the whole secret, whsec_ included", () =>
      Effect.gen(function* () {
        const whole = yield* WebhookSignature.sign({ secrets: [secretA], timestamp: t, payload: "{}" })
        const stripped = yield* WebhookSignature.sign({
          secrets: [secretA.slice("whsec_".length)],
          timestamp: t,
          payload: "{}"
        })
        assert.notStrictEqual(whole, stripped)
      })
    )

    it.effect.prop(
      "parses back to its timestamp and one signature per secret",
      [SecretsSchema, TimestampSchema, Schema.String, Schema.Uint8Array],
      ([secrets, timestamp, text, bytes]) =>
        Effect.gen(function* () {
          for (const payload of [text, bytes]) {
            const header = yield* WebhookSignature.parse(yield* WebhookSignature.sign({ secrets, timestamp, payload }))
            assert.strictEqual(header.timestamp, timestamp)
            assert.strictEqual(header.signatures.length, secrets.length)
          }
        })
    )

    it.effect.prop(
      "signs a string as its UTF-8 bytes",
      [SecretsSchema, TimestampSchema, Schema.String],
      ([secrets, timestamp, text]) =>
        Effect.gen(function* () {
          const fromString = yield* WebhookSignature.sign({ secrets, timestamp, payload: text })
          const fromBytes = yield* WebhookSignature.sign({
            secrets,
            timestamp,
            payload: new TextEncoder().encode(text)
          })
          assert.strictEqual(fromString, fromBytes)
        })
    )

    it.effect("treats a timestamp that is not whole non-negative seconds as a defect", () =>
      Effect.gen(function* () {
        for (const timestamp of [-1, 1.5, Number.NaN, Date.now()]) {
          const exit = yield* Effect.exit(WebhookSignature.sign({ secrets: [secretA], timestamp, payload: "{}" }))
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `timestamp ${timestamp}`)
        }
      })
    )

    it.effect("fails with a CryptoError for an empty secret", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(WebhookSignature.sign({ secrets: [""], timestamp: t, payload: "{}" }))
        assert.strictEqual(error._tag, "CryptoError")
        assert.strictEqual(error.reason._tag, "InvalidKey")
      })
    )
  })

  describe("parse", () => {
    it.effect.prop(
      "round-trips with format",
      {
        timestamp: TimestampSchema,
        signatures: Arbitrary.array(signatureArbitrary, { minLength: 1, maxLength: 4 })
      },
      ({ timestamp, signatures }) =>
        Effect.gen(function* () {
          const [first, ...rest] = signatures
          if (first === undefined) return false
          const header = { timestamp, signatures: [first, ...rest] } as const
          const text = WebhookSignature.format(header)
          assert.deepStrictEqual(yield* WebhookSignature.parse(text), header)
          assert.strictEqual(WebhookSignature.format(yield* WebhookSignature.parse(text)), text)
        })
    )

    it.effect("accepts white space around entries and skips unknown schemes", () =>
      Effect.gen(function* () {
        const v1 = "0".repeat(64)
        const header = yield* WebhookSignature.parse(` t=${t} , v0=legacy, v1=${v1} ,v2=future `)
        assert.deepStrictEqual(header, { timestamp: t, signatures: [v1] })
      })
    )

    const v1 = "a".repeat(64)
    it.effect.each([
      ["an empty header", ""],
      ["no t", `v1=${v1}`],
      ["no v1", `t=${t}`],
      ["only an unknown scheme", `t=${t},v2=${v1}`],
      ["a non-numeric t", `t=abc,v1=${v1}`],
      ["a t with trailing junk", `t=${t}x,v1=${v1}`],
      ["a negative t", `t=-1,v1=${v1}`],
      ["a fractional t", `t=1.5,v1=${v1}`],
      ["a t with leading zeros", `t=0${t},v1=${v1}`],
      ["a t beyond safe integers", `t=99999999999999999999,v1=${v1}`],
      ["two t", `t=${t},t=${t},v1=${v1}`],
      ["a short v1", `t=${t},v1=abc`],
      ["an upper-case v1", `t=${t},v1=${v1.toUpperCase()}`],
      ["an entry without =", `t=${t},v1=${v1},junk`],
      ["an empty key", `t=${t},=x,v1=${v1}`]
    ] as const)("rejects %s", ([_, header]) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(WebhookSignature.parse(header))
        assert.strictEqual(error._tag, "MalformedSignatureHeader")
        assert.strictEqual(error.header, header)
        assert.isTrue(error.message.length > 0)
      })
    )
  })
})
