import { Schema } from "effect"

/**
 * An amount in the currency's minor unit (cents). Integers only, 1 … 2^53−1 (decisions §2), so
 * every amount is exact in a JavaScript number and in a PostgreSQL `bigint`.
 */
export const Amount = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { expected: "an integer from 1 to 2^53-1" })
)
export type Amount = typeof Amount.Type

/** An amount that may be zero, such as `refunded_amount`. */
export const NonNegativeAmount = Schema.Int.check(
  Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }, { expected: "an integer from 0 to 2^53-1" })
)
export type NonNegativeAmount = typeof NonNegativeAmount.Type

/** An ISO 4217-shaped currency code: three upper-case letters. */
export const Currency = Schema.String.check(Schema.isPattern(/^[A-Z]{3}$/, { expected: "three upper-case letters" }))
export type Currency = typeof Currency.Type

/** A payment method identifier such as `card` or `ideal`. */
export const Method = Schema.String.check(
  Schema.isPattern(/^[a-z0-9_]{1,32}$/, { expected: "a lower-case identifier [a-z0-9_]{1,32}" })
)
export type Method = typeof Method.Type

/** A checkout language: `ll` or `ll-CC` (`en`, `nl-NL`). */
export const Locale = Schema.String.check(Schema.isPattern(/^[a-z]{2}(-[A-Z]{2})?$/, { expected: "ll or ll-CC" }))
export type Locale = typeof Locale.Type
