/**
 * The `Idempotency-Key` request header: 1–255 printable ASCII characters (0x20–0x7E), decisions §4.
 *
 * A refused key becomes 422 `validation_failed` with `fields["Idempotency-Key"] = [message]`; the error catalogue
 * is not this module's business, so it only returns the message.
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"

/** The header name, as it appears in `fields` of a `validation_failed` error. */
export const headerName = "Idempotency-Key"

/** The longest accepted key, in characters (= bytes, since only ASCII is accepted). */
export const maxLength = 255

/** A valid idempotency key. */
export const IdempotencyKey = Schema.String.check(
  Schema.isMinLength(1, { message: "must not be empty" }),
  Schema.isMaxLength(maxLength, { message: `must be at most ${maxLength} characters` }),
  Schema.isPattern(/^[\x20-\x7E]*$/, { message: "must contain only printable ASCII characters (0x20–0x7E)" })
).pipe(Schema.brand("IdempotencyKey"))
export type IdempotencyKey = typeof IdempotencyKey.Type

/** The header value is not a valid idempotency key; `message` is the text for `fields["Idempotency-Key"]`. */
export class InvalidIdempotencyKey extends Schema.TaggedError<InvalidIdempotencyKey>()("InvalidIdempotencyKey", {
  message: Schema.String
}) {}

const decode = Schema.decodeUnknownResult(IdempotencyKey)

/**
 * Validates the raw header value (as the HTTP layer hands it over, already trimmed of surrounding white space).
 * An absent header means "no idempotency" and is the caller's case; an empty value present is refused.
 */
export const parse = (value: string): Result.Result<IdempotencyKey, InvalidIdempotencyKey> =>
  Result.mapError(decode(value), (error) => new InvalidIdempotencyKey({ message: error.message }))
