/**
 * Dashboard user credentials: the e-mail address (kept lower-case, so `Ann@Shop` and `ann@shop` are one user) and
 * the password policy — at least 12 characters (NIST SP 800-63B's advice: length, no composition rules), at most 200
 * so hashing cost stays bounded.
 */
import { Effect, Schema } from "effect"
import type { SecureRandom } from "effect/crypto"
import * as Text from "../domain/Text.ts"
import * as Base62 from "../keys/Base62.ts"

export const Email = Schema.String.check(
  Schema.isMaxLength(254, { message: "email must be at most 254 characters" }),
  Schema.isPattern(/^[^\s@]+@[^\s@]+$/, { message: "email must be an e-mail address" }),
  Text.storable("email")
)

export const Password = Schema.String.check(
  Schema.isMinLength(12, { message: "password must be at least 12 characters" }),
  Schema.isMaxLength(200, { message: "password must be at most 200 characters" })
)

/** The stored form of an e-mail address. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase()

/** Length of a generated password: 20 base62 characters, about 119 bits, easy to copy from a terminal. */
export const generatedPasswordLength = 20

/** A fresh random password (the first admin's, or one `kassa admin users create` makes), from `SecureRandom`. */
export const generatePassword: Effect.Effect<string, never, SecureRandom.SecureRandom> = Base62.random(
  generatedPasswordLength
).pipe(Effect.withSpan("Credentials.generatePassword"))
