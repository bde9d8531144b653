import { bodyBytes, type RawBody } from "./body.ts"
import { hmacSha256, signedContent, toHex } from "./crypto.ts"
import type { KassaEvent } from "./events.ts"
import { eventHeaderName, signatureHeaderName, userAgent } from "./header.ts"
import type { Secrets } from "./verify.ts"

export interface SignOptions {
  /** Signing time as a `Date` or Unix seconds. Default: now. */
  readonly timestamp?: Date | number
}

const unixSeconds = (timestamp: Date | number | undefined): number => {
  const seconds = Math.floor(
    timestamp === undefined ? Date.now() / 1000 : timestamp instanceof Date ? timestamp.getTime() / 1000 : timestamp
  )
  // Above 99,999,999,999 (year 5138) it is almost certainly milliseconds.
  if (!Number.isSafeInteger(seconds) || seconds < 0 || seconds > 99_999_999_999) {
    throw new RangeError(`timestamp must be a valid Date or Unix seconds (not milliseconds), got ${String(timestamp)}`)
  }
  return seconds
}

/**
 * Signs a body as Kassa does and returns the `X-Service-Signature` value, for
 * your own tests. With several secrets the header carries one `v1` per secret,
 * in order, like a delivery during a rotation.
 *
 * @example
 * const header = await sign(body, "whsec_test", { timestamp: new Date() })
 * const event = await verify(body, header, "whsec_test")
 */
export const sign = async (payload: RawBody, secrets: Secrets, options: SignOptions = {}): Promise<string> => {
  const list = typeof secrets === "string" ? [secrets] : secrets
  if (list.length === 0 || list.some((secret) => secret === "")) {
    throw new TypeError("sign needs a non-empty secret")
  }
  const timestamp = unixSeconds(options.timestamp)
  const content = signedContent(String(timestamp), bodyBytes(payload))
  const signatures = await Promise.all(list.map((secret) => hmacSha256(secret, content)))
  return [`t=${timestamp}`, ...signatures.map((signature) => `v1=${toHex(signature)}`)].join(",")
}

/** What `signedRequest` returns: a `RequestInit` for `fetch(url, init)` or `new Request(url, init)`. */
export interface SignedRequestInit {
  readonly method: "POST"
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * Builds a delivery of `event` with the headers Kassa sends, for testing your
 * endpoint end to end.
 *
 * @example
 * const response = await fetch("http://localhost:3000/webhooks/kassa", await signedRequest(event, secret))
 */
export const signedRequest = async (
  event: KassaEvent,
  secrets: Secrets,
  options: SignOptions = {}
): Promise<SignedRequestInit> => {
  const body = JSON.stringify(event)
  return {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "User-Agent": userAgent,
      [eventHeaderName]: event.event,
      [signatureHeaderName]: await sign(body, secrets, options)
    },
    body
  }
}
