/**
 * The fingerprint of a request body for idempotency: lowercase hex SHA-256 of the UTF-8 bytes of the body's
 * canonical JSON.
 *
 * Only the body is fingerprinted. The method and path are stored beside it in the idempotency record and compared
 * as plain strings (see `IdempotencyDecision`), so a mismatch can say whether the endpoint or the body differs.
 *
 * "No body" (`undefined`, i.e. an empty request body) fingerprints as `{}`: decisions §1 treats an empty cancel body
 * and `{}` as the same body, and no endpoint gives the two different meanings.
 *
 * @since 0.1.0
 */
import { Effect, type Result, Schema } from "effect"
import { Digest } from "effect/crypto"
import * as CanonicalJson from "./CanonicalJson.ts"

/** A body fingerprint: 64 lowercase hex characters. */
export const RequestFingerprint = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/)).pipe(
  Schema.brand("RequestFingerprint")
)
export type RequestFingerprint = typeof RequestFingerprint.Type

/** The body that is fingerprinted: the parsed body, with "no body" (`undefined`) read as `{}`. */
export const normalizeBody = (body: unknown): unknown => (body === undefined ? {} : body)

/** The canonical JSON text that `fromBody` hashes, exposed for logs and tests. */
export const canonicalBody = (body: unknown): Result.Result<string, CanonicalJson.NonJsonValue> =>
  CanonicalJson.canonicalize(normalizeBody(body))

const utf8 = new TextEncoder()

/** Fingerprints a parsed JSON body (`undefined` for no body); fails with `NonJsonValue` when it is not JSON. */
export const fromBody = Effect.fn("RequestFingerprint.fromBody")(function* (
  body: unknown
): Effect.fn.Return<RequestFingerprint, CanonicalJson.NonJsonValue, Digest.Digest> {
  const canonical = yield* Effect.fromResult(canonicalBody(body))
  const digest = yield* Digest.Digest
  const hex = yield* digest.digestHex(Digest.sha256, utf8.encode(canonical))
  return RequestFingerprint.make(hex)
})
