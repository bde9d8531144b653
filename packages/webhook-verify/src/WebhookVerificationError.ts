/**
 * Why a webhook request was rejected.
 *
 * - `missing_header`: no `X-Service-Signature` header.
 * - `malformed_header`: the header is not `t=<unix_seconds>,v1=<hex>[,v1=<hex>…]`.
 * - `timestamp_outside_tolerance`: `t` is further from this server's clock than the tolerance.
 * - `no_matching_signature`: no `v1` matches the body under any of the secrets.
 * - `invalid_body`: no usable body, or the signed body is not a Kassa event.
 * - `body_already_parsed`: the body was parsed or read before verification.
 */
export type WebhookVerificationErrorReason =
  | "missing_header"
  | "malformed_header"
  | "timestamp_outside_tolerance"
  | "no_matching_signature"
  | "invalid_body"
  | "body_already_parsed"

/**
 * Thrown by `verify` and `verifyRequest` when a request must be rejected.
 * Answer it with a 400; Kassa shows the start of the response body in its
 * delivery list, so sending `error.message` back helps whoever debugs it.
 *
 * @example
 * try {
 *   event = await verify(body, header, secret)
 * } catch (error) {
 *   if (error instanceof WebhookVerificationError) return new Response(error.message, { status: 400 })
 *   throw error
 * }
 */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError"
  readonly reason: WebhookVerificationErrorReason

  constructor(reason: WebhookVerificationErrorReason, message: string, options?: { readonly cause?: unknown }) {
    super(`${reason}: ${message}`, options)
    this.reason = reason
  }
}
