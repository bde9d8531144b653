/**
 * Request bodies of the merchant API (decisions §1–2). The schemas describe the accepted shape for the
 * contract and OpenAPI; `validate` in `RequestValidation.ts` turns every violation into one
 * `validation_failed` with all fields at once.
 */
import { Schema, SchemaTransformation } from "effect"
import { Amount, Currency, Locale, Method } from "../domain/Money.ts"
import * as Text from "../domain/Text.ts"

const text = (max: number, field: string) =>
  Schema.String.check(
    Schema.isMaxLength(max, { message: `${field} must be at most ${max} characters` }),
    Text.storable(field)
  )

// Characters the URL parser would silently drop (tab, CR, LF inside; C0 and space at the ends) or turn into U+FFFD:
// a URL that needs them is a mistake to report, not to repair. Everything else (non-ASCII, U+2028, …) is
// percent-encoded or punycoded by the parser.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const urlUnsafe = /[\u0000-\u001f\u007f\p{Cs}]/u

const parsesAsHttpUrl = (value: string): boolean => {
  if (urlUnsafe.test(value) || !URL.canParse(value)) return false
  const { protocol } = new URL(value)
  return protocol === "http:" || protocol === "https:"
}

const httpUrlCheck = Schema.makeFilter(parsesAsHttpUrl, {
  message: "must be an absolute http or https URL",
  expected: "an absolute http(s) URL"
})

/**
 * An absolute http(s) URL, decoded to its WHATWG-normalised `href`: non-ASCII and other characters a header cannot
 * carry percent-encoded, the host lower-cased (and punycoded), so what is stored, answered and later sent as a
 * `Location` is plain ASCII. Both sides carry the check, so `Schema.is(HttpUrl)` still tells a URL from any string.
 * The host rule (`return_url_not_allowed`) is a create rule, checked later.
 */
export const HttpUrl = Schema.String.check(httpUrlCheck).pipe(
  Schema.decodeTo(
    Schema.String.check(httpUrlCheck),
    SchemaTransformation.transform<string, string>({ decode: (value) => new URL(value).href, encode: (href) => href })
  )
)

// Deliberately loose: the address is the application's word for its customer; a strict RFC 5322 check
// refuses real addresses more often than it catches mistakes.
export const Email = Schema.String.check(
  Schema.isMaxLength(255, { message: "must be at most 255 characters" }),
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "must be an e-mail address" }),
  Text.storable()
)

export const Phone = Schema.String.check(
  Schema.isMaxLength(32, { message: "must be at most 32 characters" }),
  Schema.isPattern(/^\+?[0-9][0-9 ]*$/, { message: "must be digits, optionally with a leading + and spaces" })
)

export const CustomerInput = Schema.Struct({
  name: Schema.optionalKey(Schema.NullOr(text(255, "name"))),
  email: Schema.optionalKey(Schema.NullOr(Email)),
  phone: Schema.optionalKey(Schema.NullOr(Phone))
})

export const MetadataInput = Schema.Record(
  Schema.String.check(
    Schema.isMaxLength(40, { message: "metadata keys must be at most 40 characters" }),
    Text.storable("metadata keys")
  ),
  Schema.Union([text(500, "metadata values"), Schema.Finite, Schema.Boolean, Schema.Null])
).check(Schema.isMaxProperties(50, { message: "metadata may have at most 50 keys" }))

/** `POST /api/v1/payments` body. */
export const CreatePaymentBody = Schema.Struct({
  amount: Amount.annotate({ message: "amount must be an integer from 1 to 9007199254740991 (minor units)" }),
  currency: Schema.optionalKey(Currency.annotate({ message: "currency must be three upper-case letters" })),
  method: Schema.optionalKey(Method.annotate({ message: "method must match [a-z0-9_]{1,32}" })),
  order_reference: Schema.String.check(
    Schema.isBetweenLength(1, 255, { message: "order_reference must be 1 to 255 characters" }),
    Text.storable("order_reference")
  ),
  description: Schema.optionalKey(Schema.NullOr(text(1000, "description"))),
  customer: Schema.optionalKey(Schema.NullOr(CustomerInput)),
  locale: Schema.optionalKey(Locale.annotate({ message: "locale must look like en or nl-NL" })),
  return_url: Schema.optionalKey(Schema.NullOr(HttpUrl)),
  metadata: Schema.optionalKey(Schema.NullOr(MetadataInput))
}).annotate({ identifier: "CreatePaymentBody" })
export type CreatePaymentBody = typeof CreatePaymentBody.Type

/** `POST /api/v1/payments/{id}/refunds` body; `amount` defaults to the whole refundable amount. */
export const RefundBody = Schema.Struct({
  amount: Schema.optionalKey(Amount.annotate({ message: "amount must be an integer from 1 to 9007199254740991" })),
  reason: Schema.optionalKey(Schema.NullOr(text(255, "reason")))
}).annotate({ identifier: "RefundBody" })
export type RefundBody = typeof RefundBody.Type

/** Outcomes the test simulator can force. */
export const SimulatedOutcome = Schema.Literals(["paid", "failed", "expired"])
export type SimulatedOutcome = typeof SimulatedOutcome.Type

/** `POST /api/v1/test/payments/{id}/simulate` body. */
export const SimulateBody = Schema.Struct({
  outcome: SimulatedOutcome.annotate({ message: "outcome must be one of paid, failed, expired" })
}).annotate({ identifier: "SimulateBody" })
export type SimulateBody = typeof SimulateBody.Type

/**
 * `POST /api/v1/payments/{id}/cancel` takes no body, or `{}`: every key is refused as unknown. (An empty
 * `Schema.Struct` would admit any value, arrays and strings included.)
 */
export const CancelBody = Schema.Record(
  Schema.String,
  Schema.Never.annotate({ message: "is not a known field" })
).annotate({ identifier: "CancelBody", description: "No fields: send no body or `{}`." })
