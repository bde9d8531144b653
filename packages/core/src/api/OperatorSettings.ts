/**
 * The settings of an application an operator sets (decisions §8), declared once: for each, its wire schema with the
 * contract's messages, its label and description, and how typed text becomes its wire value — from a dashboard form
 * field or a `kassa admin apps` flag. The operator API's bodies, the CLI's flags, the operator dashboard's form and
 * the tests that walk every setting all read {@link settings}; adding a setting here adds it everywhere.
 *
 * Every per-field rule lives in the schemas, so the API's parse options (every issue, unknown fields refused) report
 * all invalid fields in one `validation_failed`. Rules that need more than the field itself (`min_amount` ≤
 * `max_amount` against the stored values on PATCH, https-only webhook and logo URLs in production) are
 * {@link ruleErrors}. The checkout branding's rules are `CheckoutBranding`'s.
 */
import { Result, Schema, Struct } from "effect"
import { IpNetwork, NetAddress } from "effect/net"
import { ApplicationStatus, PaymentTtlSeconds } from "../domain/Application.ts"
import { BrandColor, LogoUrl, logoInsecureInProduction } from "../domain/CheckoutBranding.ts"
import * as Money from "../domain/Money.ts"
import * as Text from "../domain/Text.ts"
import { HttpUrl } from "../payments/PaymentRequests.ts"

// --- the field rules ----------------------------------------------------------------------------------------------

export const ApplicationName = Schema.String.check(
  Schema.isBetweenLength(1, 200, { message: "name must be 1 to 200 characters" }),
  Schema.isPattern(/\S/, { message: "name must not be blank" }),
  Text.storable("name")
)

// May be empty (decisions §8): the operator can switch every method off; creates then get `method_not_enabled`.
const Methods = Schema.Array(Money.Method.annotate({ message: "each method must match [a-z0-9_]{1,32}" })).check(
  Schema.isMaxLength(32, { message: "methods may list at most 32 methods" }),
  Schema.isUnique({ message: "methods must not repeat" })
)

const Currencies = Schema.Array(
  Money.Currency.annotate({ message: "each currency must be three upper-case letters" })
).check(
  Schema.isMinLength(1, { message: "currencies must list at least one currency" }),
  Schema.isMaxLength(32, { message: "currencies may list at most 32 currencies" }),
  Schema.isUnique({ message: "currencies must not repeat" })
)

// One DNS label: letters, digits and inner hyphens, at most 63 characters.
const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
const hostWithPort = new RegExp(`^(?:(${label}(?:\\.${label})*)|\\[([0-9a-f:.]+)\\])(?::([0-9]{1,5}))?$`, "i")

const isIpv6 = (text: string) => {
  const parsed = NetAddress.ipFromString(text)
  return Result.isSuccess(parsed) && parsed.success._tag === "Ipv6Address"
}

/**
 * What `return_url`'s host is compared with (case-insensitively, with or without its port — see the core's create
 * rule): an ASCII host name, IPv4 address or bracketed IPv6 address, optionally with a port; no scheme, path or user.
 */
export const ReturnUrlHost = Schema.String.check(
  Schema.makeFilter(
    (value: string) => {
      const match = hostWithPort.exec(value)
      if (match === null) return false
      const [, name, ipv6, port] = match
      if (name !== undefined && name.length > 253) return false
      if (ipv6 !== undefined && !isIpv6(ipv6)) return false
      return port === undefined || Number(port) <= 65_535
    },
    {
      message:
        "return_url_host must be a host name, optionally with a port (shop.example or localhost:3000), without scheme or path",
      expected: "a host name with an optional port"
    }
  )
)

/** `webhook_url`: an absolute http(s) URL (https only in production, see {@link ruleErrors}). */
// Each rule keeps its own message: an annotation after the length check would replace that check's message only,
// so an over-long URL would be reported as not a URL.
export const WebhookUrl = HttpUrl.annotate({ message: "webhook_url must be an absolute http or https URL" }).check(
  Schema.isMaxLength(2048, { message: "webhook_url must be at most 2048 characters" })
)

/** Decisions §7: in production a webhook URL must be https (for a URL `WebhookUrl` accepted). */
export const insecureInProduction = (url: string, production: boolean): boolean =>
  production && new URL(url).protocol !== "https:"

/**
 * One entry of `ip_allowlist`: an IPv4/IPv6 address or a CIDR range (`10.0.0.0/8`, `2001:db8::/32`). Parsed with
 * effect's `effect/net`, as the authentication check parses the stored list, so every accepted entry takes effect.
 */
export const IpAllowlistEntry = Schema.String.check(
  Schema.makeFilter(
    (value: string) => {
      const [address = "", prefix, ...rest] = value.split("/")
      if (rest.length > 0 || (prefix !== undefined && !/^[0-9]{1,3}$/.test(prefix))) return false
      const parsed = NetAddress.ipFromString(address)
      if (Result.isFailure(parsed)) return false
      return prefix === undefined || Result.isSuccess(IpNetwork.fromAddress(parsed.success, Number(prefix)))
    },
    {
      message: "each ip_allowlist entry must be an IPv4 or IPv6 address or a CIDR range (203.0.113.0/24)",
      expected: "an IP address or CIDR range"
    }
  )
)

const IpAllowlist = Schema.Array(IpAllowlistEntry).check(
  Schema.isMaxLength(100, { message: "ip_allowlist may list at most 100 entries" }),
  Schema.isUnique({ message: "ip_allowlist must not repeat an entry" })
)

// --- the catalogue ----------------------------------------------------------------------------------------------

/**
 * How a setting is typed as text (a form field, a flag):
 * - `Text`: as typed.
 * - `OptionalText`: as typed; nothing clears it (`null`) — an empty field, or `--flag none` / `--flag ""`.
 * - `Integer`: a whole number.
 * - `List`: entries separated by commas, or in a form one per line where `formSeparator` is `"line"`; blanks dropped.
 * - `Choice`: one of `choices`.
 */
export type Input =
  | { readonly _tag: "Text" }
  | { readonly _tag: "OptionalText"; readonly url: boolean }
  | { readonly _tag: "Integer" }
  | { readonly _tag: "List"; readonly formSeparator: "comma" | "line" }
  | { readonly _tag: "Choice"; readonly choices: readonly [string, ...Array<string>] }

/** One setting: what it is called, what it means, its wire rule and how it is typed. */
export interface Setting<S extends Schema.Top = Schema.Top> {
  /** A form field's label. */
  readonly label: string
  /** What it is, one line: the CLI flag's help and the OpenAPI field's description. */
  readonly description: string
  /** How to type it, one line: the form field's hint. */
  readonly hint: string
  /** The `kassa admin apps create|update` flag. */
  readonly flag: string
  readonly input: Input
  /** The wire rule, with the messages `validation_failed` reports. */
  readonly schema: S
}

const setting = <S extends Schema.Top>(value: Setting<S>): Setting<S> => value

const text: Input = { _tag: "Text" }
const integer: Input = { _tag: "Integer" }

/**
 * Every setting, in the order forms and help show them. `name` is required on create; `status` moves through the
 * lifecycle (`ApplicationLifecycle`) on the dashboard, so its form has no field for it.
 */
export const settings = {
  name: setting({
    label: "Name",
    description: "The application's name",
    hint: "Shown to the application's team and in the audit log.",
    flag: "name",
    input: text,
    schema: ApplicationName
  }),
  status: setting({
    label: "Status",
    description: "The application's status",
    hint: "pending_review, active, suspended or disabled.",
    flag: "status",
    input: { _tag: "Choice", choices: ApplicationStatus.literals },
    schema: ApplicationStatus.annotate({ message: "status must be one of pending_review, active, suspended, disabled" })
  }),
  methods: setting({
    label: "Payment methods",
    description: "Payment methods, comma-separated (card,ideal)",
    hint: "Comma-separated, e.g. card, ideal.",
    flag: "methods",
    input: { _tag: "List", formSeparator: "comma" },
    schema: Methods
  }),
  currencies: setting({
    label: "Currencies",
    description: "Currencies, comma-separated (EUR,USD)",
    hint: "Comma-separated ISO codes, e.g. EUR, USD.",
    flag: "currencies",
    input: { _tag: "List", formSeparator: "comma" },
    schema: Currencies
  }),
  locale: setting({
    label: "Checkout locale",
    description: "Checkout language, such as en or nl-NL",
    hint: "en or nl-NL.",
    flag: "locale",
    input: text,
    schema: Money.Locale.annotate({ message: "locale must look like en or nl-NL" })
  }),
  min_amount: setting({
    label: "Minimum amount",
    description: "Smallest payment, minor units",
    hint: "In minor units (cents).",
    flag: "min-amount",
    input: integer,
    schema: Money.NonNegativeAmount.annotate({ message: "min_amount must be an integer from 0 to 9007199254740991" })
  }),
  max_amount: setting({
    label: "Maximum amount",
    description: "Largest payment, minor units",
    hint: "In minor units (cents).",
    flag: "max-amount",
    input: integer,
    schema: Money.Amount.annotate({ message: "max_amount must be an integer from 1 to 9007199254740991" })
  }),
  return_url_host: setting({
    label: "Return-URL host",
    description: "The host return_urls must have (shop.example); none clears it",
    hint: "The host return URLs must use, e.g. shop.example. Empty: any.",
    flag: "return-url-host",
    input: { _tag: "OptionalText", url: false },
    schema: Schema.NullOr(ReturnUrlHost)
  }),
  webhook_url: setting({
    label: "Webhook URL",
    description: "Where webhooks are sent; none clears it",
    hint: "Where events are sent. Empty: none.",
    flag: "webhook-url",
    input: { _tag: "OptionalText", url: true },
    schema: Schema.NullOr(WebhookUrl)
  }),
  ip_allowlist: setting({
    label: "IP allow-list",
    description: "Addresses or CIDR ranges allowed to use the keys, comma-separated; empty allows any",
    hint: "One address or CIDR range per line (203.0.113.7, 10.0.0.0/8, 2001:db8::/32). Empty: any address.",
    flag: "ip-allowlist",
    input: { _tag: "List", formSeparator: "line" },
    schema: IpAllowlist
  }),
  payment_ttl_seconds: setting({
    label: "Payment lifetime (seconds)",
    description: "How long a payment stays payable, 60 to 604800",
    hint: "60 to 604800; a pending payment expires after it.",
    flag: "payment-ttl-seconds",
    input: integer,
    schema: PaymentTtlSeconds.annotate({ message: "payment_ttl_seconds must be an integer from 60 to 604800" })
  }),
  rate_limit_per_minute: setting({
    label: "Rate limit per minute",
    description: "Requests per minute per key",
    hint: "API requests per key and minute.",
    flag: "rate-limit-per-minute",
    input: integer,
    schema: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 })).annotate({
      message: "rate_limit_per_minute must be an integer from 1 to 1000000"
    })
  }),
  checkout_logo_url: setting({
    label: "Checkout logo URL",
    description: "The logo the hosted checkout shows, an https URL; none clears it",
    hint: "An https URL of an image, shown above the name on the checkout. Empty: no logo.",
    flag: "checkout-logo-url",
    input: { _tag: "OptionalText", url: true },
    schema: Schema.NullOr(LogoUrl)
  }),
  checkout_brand_color: setting({
    label: "Checkout brand colour",
    description: "The checkout's button colour as #rrggbb; none clears it",
    hint: "#rrggbb, e.g. #0a7d4f: the checkout's pay button and focus outline. Empty: Kassa's blue.",
    flag: "checkout-brand-color",
    input: { _tag: "OptionalText", url: false },
    schema: Schema.NullOr(BrandColor)
  })
}

export type SettingName = keyof typeof settings

/** The settings' names, in {@link settings}' order. */
export const names = Object.keys(settings) as ReadonlyArray<SettingName>

/** The settings a dashboard form shows (every one but `status`, which moves through the lifecycle actions). */
export const formNames = names.filter((name) => name !== "status") as ReadonlyArray<Exclude<SettingName, "status">>

// --- the bodies -------------------------------------------------------------------------------------------------

interface SchemaOf extends Struct.Lambda {
  <S extends Schema.Top>(self: Setting<S>): S
  readonly "~lambda.out": this["~lambda.in"] extends Setting<infer S> ? S : never
}
const schemaOf = Struct.lambda<SchemaOf>((entry) => entry.schema.annotate({ description: entry.description }))

/** The wire schema of every setting, by name, described for the OpenAPI document. */
export const fields = Struct.map(settings, schemaOf)

const { name: _name, ...settingFields } = fields
/** Every setting but `name`, optional: the create body fills the rest from `Application.defaults`, the update keeps them. */
const optionalSettings = Struct.map(settingFields, Schema.optionalKey)

/** `POST /applications`: `name` and any settings; the rest take `Application.defaults`. */
export const CreateApplicationBody = Schema.Struct({ name: ApplicationName, ...optionalSettings }).annotate({
  identifier: "CreateApplicationBody"
})
export type CreateApplicationBody = typeof CreateApplicationBody.Type

/** `PATCH /applications/{id}`: any of the create fields; the ones sent replace the stored values. */
export const UpdateApplicationBody = Schema.Struct({
  name: Schema.optionalKey(ApplicationName),
  ...optionalSettings
}).annotate({ identifier: "UpdateApplicationBody" })
export type UpdateApplicationBody = typeof UpdateApplicationBody.Type

/**
 * The rules a single field cannot check: `min_amount` ≤ `max_amount` over the resulting settings (stored values
 * fill in on PATCH), and https webhook URLs (decisions §7) and checkout logo URLs in production. A rule is reported on the fields the
 * request sent, so the operator sees what to change. Shared by the operator API's handlers and the operator's
 * dashboard; empty when the settings hold.
 */
export const ruleErrors = (
  sent: UpdateApplicationBody,
  result: { readonly min_amount: number; readonly max_amount: number },
  production: boolean
): Record<string, [string, ...Array<string>]> => {
  const fields: Record<string, [string, ...Array<string>]> = {}
  if (result.min_amount > result.max_amount) {
    const message = `min_amount (${result.min_amount}) must not exceed max_amount (${result.max_amount})`
    if (sent.min_amount !== undefined) fields.min_amount = [message]
    if (sent.max_amount !== undefined) fields.max_amount = [message]
  }
  // The schema has already checked that the URL parses.
  if (typeof sent.webhook_url === "string" && insecureInProduction(sent.webhook_url, production)) {
    fields.webhook_url = ["webhook_url must be an https URL in production"]
  }
  // A loopback logo would be fetched from each customer's own machine.
  if (typeof sent.checkout_logo_url === "string" && logoInsecureInProduction(sent.checkout_logo_url, production)) {
    fields.checkout_logo_url = ["checkout_logo_url must be an https URL in production"]
  }
  return fields
}

// --- typed text -------------------------------------------------------------------------------------------------

const split = (value: string, separator: RegExp) =>
  value
    .split(separator)
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)

/**
 * A form field's text as the wire value the body schemas then check, or the message when it cannot be one (a number
 * field that is not a whole number). An empty optional field clears the setting.
 */
export const fromForm = (name: SettingName, value: string): Result.Result<unknown, string> => {
  const { input } = settings[name]
  switch (input._tag) {
    case "Integer":
      return /^-?[0-9]+$/.test(value) ? Result.succeed(Number(value)) : Result.fail(`${name} must be a whole number`)
    case "List":
      return Result.succeed(split(value, input.formSeparator === "line" ? /\r?\n/ : /,/))
    case "OptionalText":
      return Result.succeed(value.length === 0 ? null : value)
    default:
      return Result.succeed(value)
  }
}

/**
 * A flag's text as the wire value: lists comma-separated, `none` or nothing clears an optional setting. (Integer and
 * choice flags are parsed by the CLI's own flag kinds.)
 */
export const fromFlag = (name: SettingName, value: string): unknown => {
  const { input } = settings[name]
  switch (input._tag) {
    case "List":
      return split(value, /,/)
    case "OptionalText":
      return value === "" || value === "none" ? null : value
    case "Integer":
      return Number(value)
    default:
      return value
  }
}

/** A stored value as a form field shows it: lists joined as {@link fromForm} splits them, `null` empty. */
export const toForm = (name: SettingName, value: unknown): string => {
  const { input } = settings[name]
  if (value === null || value === undefined) return ""
  if (Array.isArray(value)) return value.join(input._tag === "List" && input.formSeparator === "line" ? "\n" : ", ")
  return String(value)
}
