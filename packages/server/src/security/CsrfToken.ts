/**
 * CSRF protection for the checkout form: a random nonce in a `SameSite=Strict`, HttpOnly cookie, and in the
 * form a token = HMAC(server key, nonce + payment id). A cross-site post carries neither the cookie (SameSite)
 * nor a token it could compute (HMAC), and the token only fits the payment it was made for. Comparison is in
 * constant time.
 */

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Redacted } from "effect"

export const cookieName = "kassa_checkout"

export const newNonce = (): string => randomBytes(24).toString("base64url")

export const token = (key: Redacted.Redacted<Uint8Array>, nonce: string, paymentId: string): string =>
  createHmac("sha256", Redacted.value(key)).update(`${nonce}:${paymentId}`).digest("base64url")

export const verify = (
  key: Redacted.Redacted<Uint8Array>,
  nonce: string | undefined,
  paymentId: string,
  candidate: string | undefined
): boolean => {
  if (nonce === undefined || candidate === undefined || nonce.length === 0) return false
  const expected = Buffer.from(token(key, nonce, paymentId))
  const given = Buffer.from(candidate)
  return expected.length === given.length && timingSafeEqual(expected, given)
}
