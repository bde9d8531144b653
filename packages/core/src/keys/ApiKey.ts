/**
 * API keys: `pk_test_` or `pk_live_` followed by 32 random base62 characters (decisions §5). The prefix decides
 * the mode of everything done with the key. Keys are stored only as {@link hash}, shown whole once, and afterwards
 * as {@link display}.
 *
 * @since 0.1.0
 */
import { Effect, Option, Redacted, Schema } from "effect"
import { type CryptoError, Mac, type SecureRandom } from "effect/crypto"
import type { Mode } from "../domain/Mode.ts"
import * as Base62 from "./Base62.ts"

/** Number of random base62 characters after the prefix. */
export const randomLength = 32

/** The whole shape of a key. */
export const pattern = /^pk_(test|live)_[0-9A-Za-z]{32}$/

/** A well-formed API key (whether it exists is for the key store to say). */
export const ApiKey = Schema.String.check(Schema.isPattern(pattern)).pipe(Schema.brand("ApiKey"))
export type ApiKey = typeof ApiKey.Type

/** The prefix of keys of a mode: `pk_test_` or `pk_live_`. */
export const prefix = (mode: Mode): `pk_${Mode}_` => `pk_${mode}_`

// Both prefixes have this length, so the random part starts here.
const prefixLength = "pk_test_".length

/** A fresh key of `mode`, from `SecureRandom`. */
export const generate = Effect.fn("ApiKey.generate")(function* (
  mode: Mode
): Effect.fn.Return<ApiKey, never, SecureRandom.SecureRandom> {
  const random = yield* Base62.random(randomLength)
  return ApiKey.make(`${prefix(mode)}${random}`)
})

/** The mode of a key, read from its prefix. */
export const modeOf = (key: ApiKey): Mode => (key.startsWith("pk_live_") ? "live" : "test")

/** A bearer token that has the shape of a key, and its mode. */
export interface ParsedApiKey {
  readonly key: ApiKey
  readonly mode: Mode
}

const decode = Schema.decodeUnknownOption(ApiKey)

/** Reads a bearer token as a key; anything that is not exactly a key's shape is `None`. Never throws. */
export const parse = (token: string): Option.Option<ParsedApiKey> =>
  Option.map(decode(token), (key) => ({ key, mode: modeOf(key) }))

/** The form shown after creation: prefix, first four, "…", last four (`pk_test_AbCd…wxyz`). */
export const display = (key: ApiKey): string => `${key.slice(0, prefixLength + 4)}…${key.slice(-4)}`

const utf8 = new TextEncoder()

const toHex = (bytes: Uint8Array): string => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")

/**
 * The stored form of a key and its lookup value: lowercase hex HMAC-SHA256 of the key's UTF-8 bytes, keyed with
 * the UTF-8 bytes of the server secret. Fails with `CryptoError` for an empty secret.
 */
export const hash = Effect.fn("ApiKey.hash")(function* (
  key: ApiKey,
  serverSecret: Redacted.Redacted<string> | string
): Effect.fn.Return<string, CryptoError.CryptoError, Mac.Mac> {
  const secret = Redacted.isRedacted(serverSecret) ? Redacted.value(serverSecret) : serverSecret
  const macKey = yield* Mac.key(Mac.hmacSha256, utf8.encode(secret))
  const mac = yield* Mac.Mac
  return toHex(yield* mac.sign(macKey, utf8.encode(key)))
})
