/**
 * CSRF protection for the checkout form: a random nonce in a `SameSite=Strict`, HttpOnly cookie, and in the
 * form a token = HMAC(server key, nonce + payment id). A cross-site post carries neither the cookie (SameSite)
 * nor a token it could compute (HMAC), and the token only fits the payment it was made for. Comparison is in
 * constant time. The checkout form and the dashboards' sign-in form both use it (the dashboards' other forms carry a
 * token of their session, SessionStore).
 */

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Redacted } from "effect"

export const cookieName = "kassa_checkout"

export const newNonce = (): string => randomBytes(24).toString("base64url")

/** The nonce a form's cookie already holds, or a new one. */
export const nonceOf = (existing: string | undefined): string =>
  existing !== undefined && existing.length > 0 ? existing : newNonce()

/**
 * Whether a form post comes from a page of `ownOrigin`: browsers send `Origin` and `Sec-Fetch-Site` on every POST, and
 * a cross-site post carries another origin or site. (Both absent: not a browser, and the token still has to match.)
 */
export const sameOrigin = (headers: Readonly<Record<string, string | undefined>>, ownOrigin: string): boolean => {
  const origin = headers.origin
  const site = headers["sec-fetch-site"]
  return (origin === undefined || origin === ownOrigin) && (site === undefined || site === "same-origin")
}

export const token = (key: Redacted.Redacted<Uint8Array>, nonce: string, paymentId: string): string =>
  createHmac("sha256", Redacted.value(key)).update(`${nonce}:${paymentId}`).digest("base64url")

/** Whether a posted token is the expected one, compared in constant time (a missing one never is). */
export const matches = (expected: string, candidate: string | undefined): boolean => {
  if (candidate === undefined) return false
  const want = Buffer.from(expected)
  const given = Buffer.from(candidate)
  return want.length === given.length && timingSafeEqual(want, given)
}

export const verify = (
  key: Redacted.Redacted<Uint8Array>,
  nonce: string | undefined,
  paymentId: string,
  candidate: string | undefined
): boolean => nonce !== undefined && nonce.length > 0 && matches(token(key, nonce, paymentId), candidate)
