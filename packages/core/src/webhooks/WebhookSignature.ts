/**
 * Signing of webhook deliveries: the `X-Service-Signature` header.
 *
 * The header is `t=<unix_seconds>,v1=<hex>[,v1=<hex>…]`. Each `v1` is the
 * lowercase hex HMAC-SHA256 of `t + "." + rawBody`, keyed with the whole secret
 * string (`whsec_…` included) as UTF-8 bytes, the Stripe convention. During a
 * secret rotation a delivery carries one `v1` per secret, newest first.
 *
 * The module is pure: HMAC runs on the `Mac` service from `effect/crypto`, so
 * callers choose the runtime (`Mac.layerWebCrypto` with
 * `SecureRandom.layerWebCrypto`, or a native layer).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import type * as Arr from "effect/Array"
import { type CryptoError, Mac } from "effect/crypto"
import { Hex } from "effect/encoding"

/**
 * Header carrying the timestamp and signatures.
 *
 * @category constants
 * @since 0.1.0
 */
export const signatureHeaderName = "X-Service-Signature"

/**
 * Header carrying the event name, e.g. `payment.paid`.
 *
 * @category constants
 * @since 0.1.0
 */
export const eventHeaderName = "X-Service-Event"

/**
 * `User-Agent` of every delivery.
 *
 * @category constants
 * @since 0.1.0
 */
export const userAgent = "Kassa-Webhooks/1.0"

/**
 * Label of the signature scheme in the header.
 *
 * @category constants
 * @since 0.1.0
 */
export const scheme = "v1"

/**
 * A parsed signature header.
 *
 * @category models
 * @since 0.1.0
 */
export interface SignatureHeader {
  /** Signing time in Unix seconds. */
  readonly timestamp: number
  /** `v1` signatures as 64 lowercase hex characters, in header order. */
  readonly signatures: Arr.NonEmptyReadonlyArray<string>
}

/**
 * A header that does not follow `t=<unix_seconds>,v1=<hex>[,v1=<hex>…]`.
 *
 * @category errors
 * @since 0.1.0
 */
export class MalformedSignatureHeader extends Schema.TaggedError<MalformedSignatureHeader>()(
  "MalformedSignatureHeader",
  {
    header: Schema.String,
    message: Schema.String
  }
) {}

// Canonical decimal only: the HMAC covers `t` as written, so `t=007` and
// `t=7` would sign different strings for the same time.
const timestampPattern = /^(0|[1-9][0-9]*)$/
const signaturePattern = /^[0-9a-f]{64}$/

const encoder = new TextEncoder()

const isTimestamp = (timestamp: number): boolean => Number.isSafeInteger(timestamp) && timestamp >= 0

// Year 5138. Anything larger is almost certainly milliseconds, which every
// receiver would reject as being far in the future.
const maxSigningTimestamp = 99_999_999_999

/**
 * Builds the bytes that are signed: `t`, a period, then the raw body.
 *
 * @category signing
 * @since 0.1.0
 */
export const signedContent = (timestamp: number, payload: string | Uint8Array): Uint8Array => {
  const prefix = encoder.encode(`${timestamp}.`)
  const body = typeof payload === "string" ? encoder.encode(payload) : payload
  const content = new Uint8Array(prefix.length + body.length)
  content.set(prefix, 0)
  content.set(body, prefix.length)
  return content
}

/**
 * Renders a header value. Signatures keep their order.
 *
 * @category formatting
 * @since 0.1.0
 */
export const format = (header: SignatureHeader): string =>
  [`t=${header.timestamp}`, ...header.signatures.map((signature) => `${scheme}=${signature}`)].join(",")

/**
 * Signs a payload with every secret and returns the full header value,
 * `t=…,v1=…[,v1=…]`, with one `v1` per secret in the order given.
 *
 * A timestamp that is not whole, non-negative Unix seconds (milliseconds
 * included) is a defect: it comes from the caller's clock, not from input.
 *
 * **Example** (Signing with a rotated secret)
 *
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Mac, SecureRandom } from "effect/crypto"
 * import * as WebhookSignature from "@kassa/core/webhooks/WebhookSignature"
 *
 * const header = WebhookSignature.sign({
 *   secrets: ["whsec_new…", "whsec_old…"],
 *   timestamp: 1795342530,
 *   payload: body
 * }).pipe(Effect.provide(Mac.layerWebCrypto.pipe(Layer.provide(SecureRandom.layerWebCrypto))))
 * ```
 *
 * @category signing
 * @since 0.1.0
 */
export const sign = Effect.fn("WebhookSignature.sign")(function* (options: {
  readonly secrets: Arr.NonEmptyReadonlyArray<string>
  readonly timestamp: number
  readonly payload: string | Uint8Array
}): Effect.fn.Return<string, CryptoError.CryptoError, Mac.Mac> {
  if (!isTimestamp(options.timestamp) || options.timestamp > maxSigningTimestamp) {
    return yield* Effect.die(
      new RangeError(`webhook timestamp must be whole non-negative Unix seconds, got ${options.timestamp}`)
    )
  }
  const mac = yield* Mac.Mac
  const content = signedContent(options.timestamp, options.payload)
  const signatures = yield* Effect.forEach(options.secrets, (secret) =>
    Mac.key(Mac.hmacSha256, encoder.encode(secret)).pipe(
      Effect.flatMap((key) => mac.sign(key, content)),
      Effect.map(Hex.encode)
    )
  )
  return format({ timestamp: options.timestamp, signatures })
})

/**
 * Parses a header value. Entries are comma-separated `key=value` pairs with
 * optional white space around them; there must be exactly one `t` and at least
 * one `v1`. Unknown keys are skipped so a later scheme can be added next to
 * `v1` without breaking receivers.
 *
 * @category parsing
 * @since 0.1.0
 */
export const parse = Effect.fnUntraced(function* (
  header: string
): Effect.fn.Return<SignatureHeader, MalformedSignatureHeader> {
  const fail = (message: string) => new MalformedSignatureHeader({ header, message })
  let timestamp: number | undefined
  const signatures: Array<string> = []
  for (const entry of header.split(",")) {
    const part = entry.trim()
    const separator = part.indexOf("=")
    if (separator <= 0) {
      return yield* fail(`expected key=value, got "${part}"`)
    }
    const key = part.slice(0, separator)
    const value = part.slice(separator + 1)
    if (key === "t") {
      if (timestamp !== undefined) {
        return yield* fail("more than one t")
      }
      const parsed = Number(value)
      if (!timestampPattern.test(value) || !isTimestamp(parsed)) {
        return yield* fail(`t must be Unix seconds in decimal digits, got "${value}"`)
      }
      timestamp = parsed
    } else if (key === scheme) {
      if (!signaturePattern.test(value)) {
        return yield* fail(`${scheme} must be 64 lowercase hex characters, got "${value}"`)
      }
      signatures.push(value)
    }
  }
  if (timestamp === undefined) {
    return yield* fail("missing t")
  }
  const [first, ...rest] = signatures
  if (first === undefined) {
    return yield* fail(`missing ${scheme}`)
  }
  return { timestamp, signatures: [first, ...rest] }
})
