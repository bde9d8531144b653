import { bodyBytes, parseEvent, type RawBody } from "./body.ts"
import { hmacSha256, signedContent, timingSafeEqual } from "./crypto.ts"
import type { KassaEvent } from "./events.ts"
import { parseSignatureHeader, type SignatureHeaderValue, signatureHeaderName } from "./header.ts"
import { WebhookVerificationError } from "./WebhookVerificationError.ts"

/** One `whsec_…` secret, or several while you rotate it (any of them may match). */
export type Secrets = string | ReadonlyArray<string>

export interface VerifyOptions {
  /** Largest accepted distance between `t` and this server's clock, in seconds, either direction. Default 300. */
  readonly toleranceSeconds?: number
  /** The current time as a `Date`, Unix seconds, or a function returning either. Default: the system clock. */
  readonly now?: Date | number | (() => Date | number)
}

/** Kassa's limit for the receiver's check of `t`. */
export const defaultToleranceSeconds = 300

const secretList = (secrets: unknown): ReadonlyArray<string> => {
  const list: ReadonlyArray<unknown> = Array.isArray(secrets) ? secrets : [secrets]
  const valid = list.filter((secret): secret is string => typeof secret === "string" && secret !== "")
  // A configuration error, not a bad request: throw a TypeError so it surfaces as a 500.
  if (list.length === 0 || valid.length !== list.length) {
    throw new TypeError(
      "no webhook secret: pass the whsec_… secret from the Kassa dashboard (for example process.env.KASSA_WEBHOOK_SECRET), or a non-empty array of them"
    )
  }
  return valid
}

const nowSeconds = (now: VerifyOptions["now"]): number => {
  const value = typeof now === "function" ? now() : (now ?? new Date())
  const seconds = value instanceof Date ? value.getTime() / 1000 : value
  if (!Number.isFinite(seconds)) {
    throw new TypeError(`now must be a valid Date or Unix seconds, got ${String(value)}`)
  }
  return Math.floor(seconds)
}

/**
 * Verifies a webhook request and returns its event.
 *
 * Checks, in order: the body is raw bytes, the header is well formed, some
 * `v1` matches under some secret (constant-time), `t` is within the tolerance
 * of the clock; only then is the body parsed as JSON.
 *
 * @param rawBody the body exactly as received: string, Uint8Array, ArrayBuffer or Buffer.
 * @param header the `X-Service-Signature` header value.
 * @param secrets the `whsec_…` secret, or several during a rotation.
 * @throws {WebhookVerificationError} with a `reason` when the request must be rejected (answer 400).
 * @throws {TypeError} when no secret is configured or the options are invalid.
 *
 * @example
 * const event = await verify(req.body, req.headers["x-service-signature"], webhookSecret)
 * if (event.event === "payment.paid") await fulfil(event.data.order_reference)
 */
export const verify = async (
  rawBody: RawBody,
  header: SignatureHeaderValue,
  secrets: Secrets,
  options: VerifyOptions = {}
): Promise<KassaEvent> => {
  const toleranceSeconds = options.toleranceSeconds ?? defaultToleranceSeconds
  if (!(toleranceSeconds >= 0)) {
    throw new TypeError(`toleranceSeconds must be a non-negative number, got ${toleranceSeconds}`)
  }
  const keys = secretList(secrets)
  const body = bodyBytes(rawBody)
  const parsed = parseSignatureHeader(header)

  const content = signedContent(parsed.timestampText, body)
  const expected = await Promise.all(keys.map((secret) => hmacSha256(secret, content)))
  // Every pair is compared, so the time taken does not reveal which one matched.
  let matched = false
  for (const computed of expected) {
    for (const candidate of parsed.signatures) {
      matched = timingSafeEqual(computed, candidate) || matched
    }
  }
  if (!matched) {
    throw new WebhookVerificationError(
      "no_matching_signature",
      "no v1 signature matches the body: check the webhook secret (the whole whsec_… string) and that the body is the unmodified raw bytes"
    )
  }

  // Checked after the signature, so only authentic requests learn about clocks.
  const skew = nowSeconds(options.now) - parsed.timestamp
  if (Math.abs(skew) > toleranceSeconds) {
    throw new WebhookVerificationError(
      "timestamp_outside_tolerance",
      `t is ${Math.abs(skew)} s in the ${skew > 0 ? "past" : "future"}, more than the ${toleranceSeconds} s tolerance: a replayed request, or this server's clock is off (check NTP)`
    )
  }
  return parseEvent(rawBody, body)
}

/**
 * Verifies a Web `Request` (Next.js route handlers, Hono's `c.req.raw`,
 * Deno, Bun, Cloudflare Workers) and returns its event. Reads the body, so
 * call it before anything else reads it, or pass `request.clone()`.
 *
 * @example
 * export async function POST(request: Request) {
 *   const event = await verifyRequest(request, webhookSecret)
 *   // handle event
 *   return new Response(null, { status: 200 })
 * }
 */
export const verifyRequest = async (
  request: Request,
  secrets: Secrets,
  options: VerifyOptions = {}
): Promise<KassaEvent> => {
  if (request.bodyUsed) {
    throw new WebhookVerificationError(
      "body_already_parsed",
      "the request body was already read: call verifyRequest before request.json() or request.text(), or pass request.clone()"
    )
  }
  const body = new Uint8Array(await request.arrayBuffer())
  return verify(body, request.headers.get(signatureHeaderName), secrets, options)
}
