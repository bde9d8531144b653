/**
 * The merchant API's errors: every error class has an envelope that encodes to exactly `ApiError.toWire` and decodes
 * back; in process, every endpoint renders every error it declares (status, body, headers) and the typed client
 * decodes each back to its class; and the requests the pipeline itself refuses (authentication, validation, malformed
 * ids, bodies that are not JSON, other content types, oversized bodies).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as ErrorEnvelope from "../src/api/ErrorEnvelope.ts"
import * as ApiError from "../src/errors/ApiError.ts"
import { CreatePaymentBody } from "../src/payments/PaymentRequests.ts"
import { validate } from "../src/payments/RequestValidation.ts"
import {
  base,
  type Endpoint,
  endpointTags,
  isOneOf,
  json,
  jsonBody,
  makeClient,
  maxBodySize,
  middlewareTags,
  paymentId,
  samples,
  samplesByTag,
  send,
  validRequests,
  WebHandler,
  type WireRequest,
  withError
} from "./support/MerchantApiSupport.ts"

const envelopeOf = (error: ApiError.ApiError): Schema.Codec<unknown, unknown> =>
  error._tag === "HttpError"
    ? ErrorEnvelope.httpErrors[error.httpStatus as ErrorEnvelope.HttpErrorStatus]
    : ErrorEnvelope.byTag[error._tag]

// What the wire carries besides the body.
const headersOf = (error: ApiError.ApiError): Record<string, string> =>
  error._tag === "RateLimited" ? { "retry-after": String(error.retryAfterSeconds) } : {}

const isApiError = Schema.is(ApiError.ApiError)

/** Same class, same fields (`message` is not an own enumerable property of an error, so it is compared apart). */
const assertSameError = (actual: unknown, expected: ApiError.ApiError) => {
  assert.strictEqual(Object.getPrototypeOf(actual), Object.getPrototypeOf(expected), expected._tag)
  if (!isApiError(actual)) return assert.fail(`${expected._tag}: not an ApiError`)
  assert.strictEqual(actual.message, expected.message, expected._tag)
  assert.deepStrictEqual({ ...actual }, { ...expected }, expected._tag)
}

const WithHeaders = Schema.Struct({ body: Schema.Unknown, headers: Schema.Record(Schema.String, Schema.Unknown) })

/** The error a call failed with; a success is a test failure. */
const failureOf = <A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<E, never, R> =>
  Effect.flip(call).pipe(Effect.orDie)

// --- the envelopes ------------------------------------------------------------------------------------------------

describe("ErrorEnvelope", () => {
  it("covers every error class", () => {
    const covered = [...Object.keys(ErrorEnvelope.byTag), "HttpError"].sort()
    assert.deepStrictEqual(covered, Object.keys(ApiError.catalogue).sort())
    assert.deepStrictEqual(Object.keys(ErrorEnvelope.httpErrors), ["400", "405", "413", "415"])
  })

  it("encodes every error to exactly ApiError.toWire", () => {
    for (const error of samples) {
      const encoded = Schema.encodeUnknownSync(envelopeOf(error))(error)
      // `RateLimited` encodes to a body plus its `Retry-After` header.
      const body = error._tag === "RateLimited" ? Schema.decodeUnknownSync(WithHeaders)(encoded).body : encoded
      assert.deepStrictEqual(body, ApiError.toWire(error), error._tag)
    }
  })

  it("decodes every wire object back to an equal error", () => {
    for (const error of samples) {
      const schema = envelopeOf(error)
      const decoded = Schema.decodeUnknownSync(schema)(Schema.encodeUnknownSync(schema)(error))
      assertSameError(decoded, error)
    }
  })

  it("refuses a wire object with another code", () => {
    const wire = { error: { code: "payment_busy", message: "x" } }
    assert.isFalse(Schema.is(Schema.toEncoded(ErrorEnvelope.NotFound))(wire))
    assert.throws(() => Schema.decodeUnknownSync(ErrorEnvelope.NotFound)(wire))
  })
})

// --- in process ---------------------------------------------------------------------------------------------------

layer(WebHandler.layer)("MerchantApi in process", (it) => {
  describe("every declared error renders its envelope", () => {
    it.effect("status, body (= toWire) and headers, for every endpoint and every error it declares", () =>
      Effect.gen(function* () {
        let checked = 0
        for (const [endpoint, tags] of Object.entries(endpointTags)) {
          const request = validRequests[endpoint as Endpoint]
          for (const error of samples) {
            if (
              !isOneOf(error, [...tags, ...middlewareTags]) ||
              (error._tag === "HttpError" && error.httpStatus === 405)
            )
              continue
            const response = yield* send(withError(request, error))
            const label = `${endpoint} ${error._tag}`
            assert.strictEqual(response.status, ApiError.statusOf(error), label)
            assert.strictEqual(response.headers.get("content-type"), "application/json", label)
            assert.deepStrictEqual(json(response), ApiError.toWire(error), label)
            for (const [name, value] of Object.entries(headersOf(error))) {
              assert.strictEqual(response.headers.get(name), value, label)
            }
            checked++
          }
        }
        assert.isAtLeast(checked, 6 * middlewareTags.length)
      })
    )

    it.effect("the typed client decodes every error back to its class", () =>
      Effect.gen(function* () {
        for (const error of samples) {
          if (error._tag === "HttpError" && error.httpStatus === 405) continue
          const client = yield* makeClient(error)
          const failure: unknown = isOneOf(error, [...endpointTags.retrieve, ...middlewareTags])
            ? yield* failureOf(client.payments.retrieve({ params: { id: paymentId } }))
            : isOneOf(error, endpointTags.create)
              ? yield* failureOf(
                  client.payments.create({ headers: {}, payload: { amount: 1000, order_reference: "order-1" } })
                )
              : isOneOf(error, endpointTags.refund)
                ? yield* failureOf(client.payments.refund({ params: { id: paymentId }, headers: {}, payload: {} }))
                : isOneOf(error, endpointTags.cancel)
                  ? yield* failureOf(client.payments.cancel({ params: { id: paymentId }, payload: {} }))
                  : yield* failureOf(client.test.simulate({ params: { id: paymentId }, payload: { outcome: "paid" } }))
          assertSameError(failure, error)
        }
      })
    )

    it.effect("a 405 is the server's to render: no endpoint declares it", () =>
      Effect.gen(function* () {
        const error = samplesByTag.HttpError.find((sample) => sample.httpStatus === 405)
        assert.isDefined(error)
        if (error === undefined) return
        const response = yield* send(withError(validRequests.retrieve, error))
        // Without a schema for it, HttpApi can only answer an empty 500: the pitfall the envelopes exist to avoid.
        assert.strictEqual(response.status, 500)
        assert.strictEqual(response.text, "")
      })
    )
  })
  describe("refused requests", () => {
    it.effect("authentication comes first: no key, or an unknown one, whatever the body", () =>
      Effect.gen(function* () {
        const handler = yield* WebHandler
        const anonymous = yield* Effect.promise(() =>
          handler(new Request(`${base}/api/v1/payments`, { method: "POST", body: "{bad", headers: jsonBody }))
        )
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(
          ((yield* Effect.promise(() => anonymous.json())) as ApiError.WireError).error.code,
          "unauthenticated"
        )
        const unknown = yield* send({ ...validRequests.create, headers: { ...jsonBody, authorization: "Bearer pk_x" } })
        assert.strictEqual(unknown.status, 401)
        assert.strictEqual((json(unknown) as ApiError.WireError).error.code, "invalid_api_key")
      })
    )

    it.effect("every invalid field and every unknown one is named at once, as validate names them", () =>
      Effect.gen(function* () {
        const body = {
          amount: 0,
          order_reference: "",
          currency: "eur",
          customer: { email: "nope", nickname: "x" },
          colour: "red"
        }
        const response = yield* send({ ...validRequests.create, body: JSON.stringify(body) })
        assert.strictEqual(response.status, 422)
        const wire = json(response) as ApiError.WireError
        assert.strictEqual(wire.error.code, "validation_failed")
        const expected = validate(CreatePaymentBody)(body)
        assert.isTrue(expected._tag === "Failure")
        if (expected._tag === "Failure") assert.deepStrictEqual(wire.error.fields, expected.failure.fields)
        assert.includeMembers(Object.keys(wire.error.fields ?? {}), ["colour", "customer.nickname", "amount"])
      })
    )

    it.effect("cancel refuses any field", () =>
      Effect.gen(function* () {
        const response = yield* send({ ...validRequests.cancel, body: `{"reason":"x"}`, headers: jsonBody })
        assert.strictEqual(response.status, 422)
        assert.deepStrictEqual((json(response) as ApiError.WireError).error.fields, {
          reason: ["is not a known field"]
        })
      })
    )

    it.effect("headers and query are validated into fields, headers named as the specification writes them", () =>
      Effect.gen(function* () {
        const badHeaders = yield* send({
          ...validRequests.create,
          headers: { ...jsonBody, "idempotency-key": "k".repeat(256), "kassa-simulate": "timeout" }
        })
        assert.strictEqual(badHeaders.status, 422)
        assert.sameMembers(Object.keys((json(badHeaders) as ApiError.WireError).error.fields ?? {}), [
          "Idempotency-Key",
          "Kassa-Simulate"
        ])
        const badQuery = yield* send({ ...validRequests.list, path: "/api/v1/payments?limit=0&status=lost" })
        assert.strictEqual(badQuery.status, 422)
        assert.sameMembers(Object.keys((json(badQuery) as ApiError.WireError).error.fields ?? {}), ["limit", "status"])
      })
    )

    it.effect("a malformed payment id is not found", () =>
      Effect.gen(function* () {
        const response = yield* send({ method: "GET", path: "/api/v1/payments/not-a-uuid" })
        assert.strictEqual(response.status, 404)
        assert.strictEqual((json(response) as ApiError.WireError).error.code, "not_found")
      })
    )

    it.effect("a body that is not JSON is 400, another content type 415, an oversized body 413", () =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [WireRequest, number]> = [
          [{ ...validRequests.create, body: `{"amount":` }, 400],
          [{ ...validRequests.create, headers: { "content-type": "text/plain" } }, 415],
          [{ ...validRequests.create, body: `{"amount":1000,"order_reference":"${"x".repeat(maxBodySize)}"}` }, 413]
        ]
        for (const [request, status] of cases) {
          const response = yield* send(request)
          assert.strictEqual(response.status, status)
          assert.strictEqual((json(response) as ApiError.WireError).error.code, "http_error")
        }
      })
    )
  })
})
