/**
 * The operator API's wire schemas (decisions §8) besides the application settings (those are `OperatorSettings`):
 * keys, webhook secrets, deliveries, users and memberships, the audit log, provider links, and the path and query
 * parameters. Every per-field rule lives in the schemas, so the API's parse options (every issue, unknown fields
 * refused) report all invalid fields in one `validation_failed`.
 */
import { Effect, Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import * as Credentials from "../dashboard/Credentials.ts"
import * as DashboardAccess from "../dashboard/DashboardAccess.ts"
import { Application } from "../domain/Application.ts"
import { DeliveryStatus } from "../domain/Delivery.ts"
import * as Ids from "../domain/Ids.ts"
import * as Mode from "../domain/Mode.ts"
import * as Timestamp from "../domain/Timestamp.ts"
import * as WebhookEvent from "../domain/WebhookEvent.ts"

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
  application: Application,
  webhook_secret: WebhookSecretValue
})
  .annotate({ identifier: "ApplicationCreated" })
  .pipe(HttpApiSchema.status(201))

/** Every application, oldest first. Not paged: an installation has few. */
export const ApplicationList = Schema.Struct({ data: Schema.Array(Application) }).annotate({
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
  id: Ids.UserId,
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

/** The payment providers an application's live payments can go through (decisions §10, §11). */
export const LinkProvider = Schema.Literals(["stripe", "mollie"])
export type LinkProvider = typeof LinkProvider.Type

/**
 * The form of each provider's key, checked before the provider hears of it (a publishable `pk_` key, or a Mollie
 * organization token, is the usual mistake): Stripe's secret or restricted keys (decisions §10); Mollie's API keys,
 * `live_` or `test_` and 30 characters in Mollie's own examples (decisions §11; research/mollie.md §7).
 */
const keyForms: Readonly<Record<LinkProvider, { readonly pattern: RegExp; readonly message: string }>> = {
  stripe: {
    pattern: /^[sr]k_(?:live|test)_[0-9A-Za-z]{8,247}$/,
    message:
      "secret_key must be a Stripe secret or restricted key (sk_live_…, rk_live_…, sk_test_… or rk_test_…), never a publishable pk_ key"
  },
  mollie: {
    pattern: /^(?:live|test)_[0-9A-Za-z]{8,247}$/,
    message:
      "secret_key must be a Mollie API key (live_… or test_…); organization access tokens (access_…) and OAuth are not supported yet"
  }
}

/**
 * `PUT /applications/{id}/provider-account` (decisions §10, §11): the provider, required (the specification's body
 * names it; there is no default), and its secret key, live or test, checked here for the provider's key form, then
 * with the provider.
 */
export const LinkProviderBody = Schema.Struct({
  provider: LinkProvider.annotate({ message: "provider must be stripe or mollie" }),
  secret_key: Schema.String.check(
    Schema.isMaxLength(256, { message: "secret_key must be at most 256 characters" })
  ).annotate({ description: "Shown this once: stored encrypted, then only as `key_display`." })
})
  // The example OpenApiDocument derives cannot know a key's form: Mollie's documented test key form. (Annotated
  // before the check, which would otherwise carry it and hide it from JSON Schema.)
  .annotate({ examples: [{ provider: "mollie", secret_key: "test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM" }] })
  .check(
    Schema.makeFilter(
      (body) =>
        keyForms[body.provider].pattern.test(body.secret_key) || {
          path: ["secret_key"],
          issue: keyForms[body.provider].message
        },
      { expected: "the provider's secret key" }
    )
  )
  .annotate({ identifier: "LinkProviderBody" })

/** A provider link (decisions §10, §11): the key only as its display form, never again whole. */
export const ProviderLinkView = Schema.Struct({
  provider: LinkProvider,
  account_id: Schema.String.annotate({
    description: "The provider's account the key opens: Stripe's account (`acct_…`), Mollie's profile (`pfl_…`)."
  }),
  key_display: Schema.String.annotate({
    description: "Kind, mode and last four characters: `rk_live_…wxyz`, `live_…wxyz`."
  }),
  livemode: Schema.Boolean.annotate({
    description: "False for a test key: live payments then use the provider's test payments."
  }),
  webhook_endpoint_id: Schema.NullOr(Schema.String).annotate({
    description:
      "The endpoint (`we_…`) Stripe posts this link's events to; null for Mollie, whose payments each name the link's URL."
  }),
  status: Schema.Literals(["active", "retired"]),
  linked_at: Timestamp.Timestamp,
  retired_at: Schema.NullOr(Timestamp.Timestamp)
}).annotate({ identifier: "ProviderLink" })
