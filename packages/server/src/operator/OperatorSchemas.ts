/**
 * Request bodies and answers of the operator API (decisions §8). Every per-field rule lives in these schemas, so
 * the API's parse options (every issue, unknown fields refused) report all invalid fields in one `validation_failed`.
 * Rules that need more than the field itself — `min_amount` ≤ `max_amount` against the stored values on PATCH, and
 * https-only webhook URLs in production — are checked by the handlers once the fields are valid.
 */
import { isIP } from "node:net"
import {
  Application,
  Credentials,
  DashboardAccess,
  Ids,
  Mode,
  Money,
  PaymentRequests,
  Text,
  Timestamp,
  WebhookEvent
} from "@kassa/core"
import { Effect, Result, Schema, Struct } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { IpNetwork, NetAddress } from "effect/net"
import { DeliveryStatus } from "../webhooks/DeliveryRepository.ts"

const ApplicationName = Schema.String.check(
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
      if (ipv6 !== undefined && isIP(ipv6) !== 6) return false
      return port === undefined || Number(port) <= 65_535
    },
    {
      message:
        "return_url_host must be a host name, optionally with a port (shop.example or localhost:3000), without scheme or path",
      expected: "a host name with an optional port"
    }
  )
)

/** `webhook_url`: an absolute http(s) URL (https only in production, checked by the handlers). */
export const WebhookUrl = PaymentRequests.HttpUrl.check(
  Schema.isMaxLength(2048, { message: "webhook_url must be at most 2048 characters" })
).annotate({ message: "webhook_url must be an absolute http or https URL" })

/** Decisions §7: in production a webhook URL must be https (for a URL `WebhookUrl` accepted). */
export const insecureInProduction = (url: string, production: boolean): boolean =>
  production && new URL(url).protocol !== "https:"

/**
 * The rules a single field cannot check: `min_amount` ≤ `max_amount` over the resulting settings (stored values
 * fill in on PATCH), and https webhook URLs in production (decisions §7). A rule is reported on the fields the
 * request sent, so the operator sees what to change. Shared by the operator API's handlers and the operator's dashboard pages; empty when the
 * settings hold.
 */
export const settingsRuleErrors = (
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
  return fields
}

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

/** Every setting an operator may send; `name` is required on create only. */
const settingsFields = {
  status: Application.ApplicationStatus.annotate({
    message: "status must be one of pending_review, active, suspended, disabled"
  }),
  methods: Methods,
  currencies: Currencies,
  locale: Money.Locale.annotate({ message: "locale must look like en or nl-NL" }),
  min_amount: Money.NonNegativeAmount.annotate({ message: "min_amount must be an integer from 0 to 9007199254740991" }),
  max_amount: Money.Amount.annotate({ message: "max_amount must be an integer from 1 to 9007199254740991" }),
  return_url_host: Schema.NullOr(ReturnUrlHost),
  webhook_url: Schema.NullOr(WebhookUrl),
  ip_allowlist: IpAllowlist,
  payment_ttl_seconds: Application.PaymentTtlSeconds.annotate({
    message: "payment_ttl_seconds must be an integer from 60 to 604800"
  }),
  rate_limit_per_minute: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 })).annotate({
    message: "rate_limit_per_minute must be an integer from 1 to 1000000"
  })
}

/** Every setting, optional: the create body fills the rest from `Application.defaults`, the update keeps them. */
const optionalSettings = Struct.map(settingsFields, Schema.optionalKey)

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

/** `POST /applications/{id}/keys`. */
export const CreateKeyBody = Schema.Struct({
  mode: Mode.Mode.annotate({ message: "mode must be test or live" })
}).annotate({ identifier: "CreateKeyBody" })

/**
 * `{id}` and `{key_id}` are read as plain strings and parsed by the handlers, so a malformed id gets the same
 * 404 as an unknown one, with a message naming what was looked for.
 */
export const ApplicationParams = {
  id: Schema.String.annotate({ description: "The application's id, a lower-case UUID." })
}
/** `{id}` of a payment (operator API): a plain string, so a malformed id gets the same 404 as an unknown one. */
export const PaymentParams = {
  id: Schema.String.annotate({ description: "The payment's id, a lower-case UUID." })
}
export const KeyParams = {
  key_id: Schema.String.annotate({ description: "The key record's id (never the key), a lower-case UUID." })
}

const WebhookSecretValue = Schema.String.annotate({
  description: "`whsec_` and 32 base62 characters. Shown this once; stored encrypted."
})

/** 201 of `POST /applications`: the application and its first webhook secret, shown this once. */
export const ApplicationCreated = Schema.Struct({
  application: Application.Application,
  webhook_secret: WebhookSecretValue
})
  .annotate({ identifier: "ApplicationCreated" })
  .pipe(HttpApiSchema.status(201))

/** Every application, oldest first. Not paged: an installation has few. */
export const ApplicationList = Schema.Struct({ data: Schema.Array(Application.Application) }).annotate({
  identifier: "ApplicationList"
})

/** A key record as listed: the display form only, never the key. */
export const ApiKeyView = Schema.Struct({
  id: Ids.ApiKeyId,
  mode: Mode.Mode,
  display: Schema.String.annotate({ description: "Prefix, first four and last four characters: `pk_test_AbCd…wxyz`." }),
  created_at: Timestamp.Timestamp,
  last_used_at: Schema.NullOr(Timestamp.Timestamp),
  revoked_at: Schema.NullOr(Timestamp.Timestamp)
}).annotate({ identifier: "ApiKey" })

/** Keys of an application, revoked ones included, oldest first. */
export const ApiKeyList = Schema.Struct({ data: Schema.Array(ApiKeyView) }).annotate({ identifier: "ApiKeyList" })

/** 201 of creating or rolling a key: the only answer that carries `key`. */
export const IssuedApiKeyView = Schema.Struct({
  id: Ids.ApiKeyId,
  mode: Mode.Mode,
  key: Schema.String.annotate({ description: "The whole key, shown this once; only its hash is stored." }),
  display: Schema.String,
  created_at: Timestamp.Timestamp
})
  .annotate({ identifier: "IssuedApiKey" })
  .pipe(HttpApiSchema.status(201))

/** 201 of `POST /applications/{id}/webhook-secret`. */
export const WebhookSecretCreated = Schema.Struct({ webhook_secret: WebhookSecretValue })
  .annotate({ identifier: "WebhookSecretCreated" })
  .pipe(HttpApiSchema.status(201))

/** `{id}` of a delivery, parsed by the handler like the other ids (a malformed one is a 404). */
export const DeliveryParams = {
  id: Schema.String.annotate({ description: "The delivery's id, a lower-case UUID." })
}

/**
 * The query of `GET /applications/{id}/deliveries`: a page of `limit` (1–100, default 10), newest first, after the
 * delivery `starting_after`, optionally only one `status`, `event`, `payment_id` or `mode`.
 */
export const ListDeliveriesQuery = {
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }, { message: "must be from 1 to 100" })).pipe(
    Schema.withDecodingDefaultTypeKey(Effect.succeed(10))
  ),
  starting_after: Schema.optionalKey(
    Ids.DeliveryId.annotate({ description: "Continue after this delivery: the last `id` of the previous page." })
  ),
  status: Schema.optionalKey(DeliveryStatus.annotate({ description: "Only deliveries in this status." })),
  event: Schema.optionalKey(WebhookEvent.EventName.annotate({ description: "Only deliveries of this event name." })),
  payment_id: Schema.optionalKey(Ids.PaymentId.annotate({ description: "Only deliveries of this payment's events." })),
  mode: Schema.optionalKey(Mode.Mode.annotate({ description: "Only test or only live events." }))
}

/** One attempt of a delivery (decisions §7): what was sent where, and what came back. */
export const DeliveryAttemptView = Schema.Struct({
  number: Schema.Int.annotate({ description: "1 for the first attempt, in the order they were made." }),
  kind: Schema.Literals(["scheduled", "manual"]),
  started_at: Timestamp.Timestamp,
  url: Schema.NullOr(Schema.String).annotate({ description: "The webhook URL used; null when none was set." }),
  response_status: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String).annotate({
    description:
      "Why no status came: timeout, connection_refused, connection_reset, dns, tls, blocked_address, https_required, " +
      "invalid_url, no_webhook_url, unreachable, invalid_response, connection_error."
  }),
  duration_ms: Schema.Int,
  response_body: Schema.NullOr(Schema.String).annotate({
    description: "At most the first 1,024 bytes of the answer, as text."
  })
}).annotate({ identifier: "DeliveryAttempt" })

/** A delivery of one event, with every attempt (decisions §8). */
export const DeliveryView = Schema.Struct({
  id: Ids.DeliveryId,
  event_id: Ids.EventId,
  event: WebhookEvent.EventName,
  payment_id: Ids.PaymentId,
  mode: Mode.Mode,
  status: DeliveryStatus,
  next_attempt_at: Schema.NullOr(Timestamp.Timestamp).annotate({
    description: "When the next scheduled attempt is due; null once the delivery succeeded or failed."
  }),
  created_at: Timestamp.Timestamp,
  attempts: Schema.Array(DeliveryAttemptView)
}).annotate({ identifier: "Delivery" })

export const DeliveryList = Schema.Struct({ data: Schema.Array(DeliveryView), has_more: Schema.Boolean }).annotate({
  identifier: "DeliveryList"
})

/** 202 of a resend: the delivery as it is when the manual attempt starts. */
export const DeliveryResent = DeliveryView.pipe(HttpApiSchema.status(202))

/** `POST /users`: a dashboard user. `operator_admin` users see and change every application. */
export const CreateUserBody = Schema.Struct({
  email: Credentials.Email,
  password: Credentials.Password,
  operator_admin: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "CreateUserBody" })

/**
 * `PATCH /users/{id}`: an operator's change. A new `password` clears the lock-out and ends every session of the user;
 * `active: false` deactivates the account (sign-in refused, sessions end, memberships kept), `true` reactivates it.
 */
export const UpdateUserBody = Schema.Struct({
  password: Schema.optionalKey(Credentials.Password),
  operator_admin: Schema.optionalKey(Schema.Boolean),
  active: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "UpdateUserBody" })

export const UserParams = {
  id: Schema.String.annotate({ description: "The user's id, a lower-case UUID." })
}

export const MembershipParams = {
  id: Schema.String.annotate({ description: "The user's id, a lower-case UUID." }),
  application_id: Schema.String.annotate({ description: "The application's id, a lower-case UUID." })
}

/** `PUT /users/{id}/memberships/{application_id}`. */
export const MembershipBody = Schema.Struct({
  role: DashboardAccess.Role.annotate({ message: "role must be owner, developer or viewer" })
}).annotate({ identifier: "MembershipBody" })

export const MembershipView = Schema.Struct({
  application_id: Ids.ApplicationId,
  role: DashboardAccess.Role
}).annotate({ identifier: "Membership" })

/** A dashboard user as the operator API shows it (never the password or its hash). */
export const UserView = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  operator_admin: Schema.Boolean,
  created_at: Timestamp.Timestamp,
  last_login_at: Schema.NullOr(Timestamp.Timestamp),
  active: Schema.Boolean.annotate({ description: "False once an operator deactivated the account." }),
  deactivated_at: Schema.NullOr(Timestamp.Timestamp),
  memberships: Schema.Array(MembershipView)
}).annotate({ identifier: "User" })

export const UserCreated = UserView.pipe(HttpApiSchema.status(201))

export const UserList = Schema.Struct({ data: Schema.Array(UserView) }).annotate({ identifier: "UserList" })

/** The query of `GET /audit`: newest first, `limit` 1–100 (default 50), before the entry `before`. */
export const ListAuditQuery = {
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }, { message: "must be from 1 to 100" })).pipe(
    Schema.withDecodingDefaultTypeKey(Effect.succeed(50))
  ),
  before: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt())),
  application_id: Schema.optionalKey(Ids.ApplicationId)
}

export const AuditEntryView = Schema.Struct({
  id: Schema.Int,
  at: Timestamp.Timestamp,
  actor: Schema.String,
  action: Schema.String,
  application_id: Schema.NullOr(Schema.String),
  target: Schema.NullOr(Schema.String),
  details: Schema.Record(Schema.String, Schema.Unknown),
  ip: Schema.NullOr(Schema.String)
}).annotate({ identifier: "AuditEntry" })

export const AuditList = Schema.Struct({ data: Schema.Array(AuditEntryView), has_more: Schema.Boolean }).annotate({
  identifier: "AuditList"
})

/**
 * `PUT /applications/{id}/provider-account` (decisions §10): a Stripe secret or restricted key, live or test. Checked
 * here for its form (a publishable `pk_` key is the usual mistake), then with Stripe.
 */
export const LinkProviderBody = Schema.Struct({
  provider: Schema.Literal("stripe").annotate({ message: "provider must be stripe" }),
  secret_key: Schema.String.check(
    Schema.isPattern(/^[sr]k_(?:live|test)_[0-9A-Za-z]{8,247}$/, {
      message:
        "secret_key must be a Stripe secret or restricted key (sk_live_…, rk_live_…, sk_test_… or rk_test_…), never a publishable pk_ key"
    })
  ).annotate({ description: "Shown this once: stored encrypted, then only as `key_display`." })
}).annotate({ identifier: "LinkProviderBody" })

/** A provider link (decisions §10): the key only as its display form, never again whole. */
export const ProviderLinkView = Schema.Struct({
  provider: Schema.Literal("stripe"),
  account_id: Schema.String.annotate({ description: "The provider's account (`acct_…`) the key opens." }),
  key_display: Schema.String.annotate({ description: "Kind, mode and last four characters: `rk_live_…wxyz`." }),
  livemode: Schema.Boolean.annotate({
    description: "False for a test key: live payments then use Stripe's test cards."
  }),
  webhook_endpoint_id: Schema.String.annotate({
    description: "The endpoint (`we_…`) Stripe posts this link's events to."
  }),
  status: Schema.Literals(["active", "retired"]),
  linked_at: Timestamp.Timestamp,
  retired_at: Schema.NullOr(Timestamp.Timestamp)
}).annotate({ identifier: "ProviderLink" })
