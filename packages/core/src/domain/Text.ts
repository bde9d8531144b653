/**
 * Text Kassa can store and give back unchanged. PostgreSQL refuses U+0000 in `text` and `jsonb`, and `jsonb` refuses
 * an unpaired UTF-16 surrogate (`"\ud800"`); sent as UTF-8, such a surrogate becomes U+FFFD, so an answer built from
 * the request would differ from what a later fetch reads. Both are refused where a string enters the system — the
 * request schemas — as `validation_failed` on the field, never left for the database to reject with a 500.
 */
import { Schema } from "effect"

// With the `u` flag, `\p{Cs}` matches only a surrogate that is not half of a pair.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding U+0000 is the point
const unstorable = /[\u0000\p{Cs}]/u
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding U+0000 is the point
const unstorableEach = /[\u0000\p{Cs}]/gu

/** Whether `value` can be stored and read back as it is: no U+0000, no unpaired surrogate. */
export const isStorable = (value: string): boolean => !unstorable.test(value)

/** The check behind {@link StorableString}, for schemas that add their own checks. */
export const storable = (field?: string) =>
  Schema.makeFilter(isStorable, {
    message: `${field === undefined ? "" : `${field} `}must not contain U+0000 or an unpaired surrogate`,
    expected: "text without U+0000 or unpaired surrogates"
  })

/** Any string that can be stored. */
export const StorableString = Schema.String.check(storable())

/**
 * `value` made storable, for a lookup (query filters) or a log: each offending character becomes U+FFFD, so a filter
 * matches nothing stored and a log keeps what was attempted.
 */
export const toStorable = (value: string): string => value.replace(unstorableEach, "\uFFFD")
