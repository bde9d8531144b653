import { Schema } from "effect"
import { ApplicationId } from "./Ids.ts"
import { Currency, Locale, Method, NonNegativeAmount } from "./Money.ts"
import { Timestamp } from "./Timestamp.ts"

/** Application statuses (decisions §5): new applications wait for review. */
export const ApplicationStatus = Schema.Literals(["pending_review", "active", "suspended", "disabled"])
export type ApplicationStatus = typeof ApplicationStatus.Type

/** Payment lifetime bounds in seconds (decisions §3). */
export const PaymentTtlSeconds = Schema.Int.check(Schema.isBetween({ minimum: 60, maximum: 604_800 }))

/** The settings that the create and refund rules read. */
export const ApplicationSettings = Schema.Struct({
  methods: Schema.Array(Method),
  currencies: Schema.Array(Currency),
  locale: Locale,
  min_amount: NonNegativeAmount,
  max_amount: NonNegativeAmount,
  return_url_host: Schema.NullOr(Schema.String),
  payment_ttl_seconds: PaymentTtlSeconds
})
export type ApplicationSettings = typeof ApplicationSettings.Type

/** An application as the operator API shows it. */
export const Application = Schema.Struct({
  id: ApplicationId,
  name: Schema.String,
  status: ApplicationStatus,
  ...ApplicationSettings.fields,
  webhook_url: Schema.NullOr(Schema.String),
  ip_allowlist: Schema.Array(Schema.String),
  rate_limit_per_minute: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 })),
  /** The hosted checkout's logo and brand colour (`CheckoutBranding`); null: Kassa's own look. */
  checkout_logo_url: Schema.NullOr(Schema.String),
  checkout_brand_color: Schema.NullOr(Schema.String),
  created_at: Timestamp
}).annotate({ identifier: "Application" })
export type Application = typeof Application.Type

/** Defaults of a new application (decisions §8). */
export const defaults = {
  status: "pending_review",
  methods: ["card"],
  currencies: ["EUR"],
  locale: "en",
  min_amount: 100,
  max_amount: 10_000_000,
  return_url_host: null,
  webhook_url: null,
  ip_allowlist: [],
  payment_ttl_seconds: 3600,
  rate_limit_per_minute: 120,
  checkout_logo_url: null,
  checkout_brand_color: null
} as const satisfies Omit<Application, "id" | "name" | "created_at">
