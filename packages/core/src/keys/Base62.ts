/**
 * Uniformly random base62 strings (`0-9A-Za-z`) for API keys and webhook secrets.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SecureRandom } from "effect/crypto"

/** The 62 characters, in ASCII order. */
export const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** Bytes at or above this (4 × 62) are rejected: below it every character has exactly four byte values. */
export const rejectionThreshold = 248

/** Whether `s` is made only of base62 characters (the empty string included). */
export const isBase62 = (s: string): boolean => /^[0-9A-Za-z]*$/.test(s)

/**
 * `length` uniformly random base62 characters. Rejection sampling on random bytes: a byte below 248 gives
 * `alphabet[byte % 62]`, other bytes are dropped, so there is no modulo bias.
 */
export const random = Effect.fnUntraced(function* (
  length: number
): Effect.fn.Return<string, never, SecureRandom.SecureRandom> {
  // A programming error, not a failure the caller could handle; SecureRandom treats bad sizes the same way.
  if (!Number.isSafeInteger(length) || length < 0) return yield* Effect.die(new RangeError(`Invalid length: ${length}`))
  const secureRandom = yield* SecureRandom.SecureRandom
  let out = ""
  while (out.length < length) {
    const missing = length - out.length
    // 3 % of bytes are dropped; asking a few more than needed makes a second round rare.
    const bytes = yield* secureRandom.randomBytes(missing + 8)
    for (const byte of bytes) {
      if (byte < rejectionThreshold) out += alphabet.charAt(byte % alphabet.length)
      if (out.length === length) break
    }
  }
  return out
})
