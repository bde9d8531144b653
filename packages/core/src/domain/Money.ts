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

const minorUnitDigitsOf = new Map<string, number>()

/**
 * How many digits a currency's minor unit has: 2 for EUR, 0 for JPY, 3 for KWD. Amounts are stored in the minor
 * unit, so dividing by 100 everywhere would show ¥1,000 as ¥10. ICU's ISO 4217 table decides; a code it does not know
 * (but is well formed) gets ICU's default of 2.
 */
export const minorUnitDigits = (currency: string): number => {
  // Remembered per code: a NumberFormat costs ~100 µs to make, and a Mollie create asks once per amount.
  const known = minorUnitDigitsOf.get(currency)
  if (known !== undefined) return known
  let digits = 2
  try {
    digits = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2
  } catch {
    // Not a code ICU takes: its default.
  }
  if (minorUnitDigitsOf.size < 512) minorUnitDigitsOf.set(currency, digits)
  return digits
}

/** An amount in minor units as a person reads it: `format(1050, "EUR", "nl-NL")` is `€ 10,50`. */
export const format = (amount: number, currency: string, locale = "en"): string => {
  const digits = minorUnitDigits(currency)
  try {
    return new Intl.NumberFormat(locale, { style: "currency", currency }).format(amount / 10 ** digits)
  } catch {
    // A locale ICU cannot use still shows the right number, without the locale's symbols.
    return `${(amount / 10 ** digits).toFixed(digits)} ${currency}`
  }
}

/** The amount in major units with its code, locale-free for logs and terminals: `10.50 EUR`, `1000 JPY`. */
export const formatPlain = (amount: number, currency: string): string => {
  const digits = minorUnitDigits(currency)
  return `${(amount / 10 ** digits).toFixed(digits)} ${currency}`
}

/**
 * An amount in minor units as a decimal string in major units with exactly the currency's ISO 4217 decimals, for
 * providers that take money as text (Mollie's `value`): `toDecimalString(1000, "EUR")` is `"10.00"`, JPY `"1000"`,
 * KWD 1234 `"1.234"`. Integer arithmetic on the digits only: a float (`amount / 100`) would round large amounts.
 */
export const toDecimalString = (amount: number, currency: string): string => {
  if (!Number.isSafeInteger(amount) || amount < 0) throw new RangeError(`not an amount in minor units: ${amount}`)
  const digits = minorUnitDigits(currency)
  if (digits === 0) return String(amount)
  const text = String(amount).padStart(digits + 1, "0")
  return `${text.slice(0, -digits)}.${text.slice(-digits)}`
}

/**
 * The inverse of {@link toDecimalString}: a provider's decimal string in major units as minor units, or null when it
 * is not one (a sign, an exponent, more decimals than the currency has, or beyond 2^53−1). Fewer decimals are padded
 * (`"10.5"` EUR is 1050), since a provider may drop trailing zeros.
 */
export const fromDecimalString = (value: string, currency: string): number | null => {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(value)
  if (match === null) return null
  const digits = minorUnitDigits(currency)
  const fraction = match[2] ?? ""
  if (fraction.length > digits) return null
  const minor = Number(`${match[1]}${fraction.padEnd(digits, "0")}`)
  return Number.isSafeInteger(minor) ? minor : null
}
