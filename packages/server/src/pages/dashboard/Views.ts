/**
 * The view models the dashboards' read queries produce (dashboard/*Queries.ts, PaymentSearch) and the templates
 * show: plain values, shaped for the page, never a repository's row.
 */
import type {
  Application,
  DashboardAccess,
  Delivery,
  Ids,
  Mode,
  OperatorSchemas,
  Payment,
  WebhookEvent
} from "@kassa/core"
import type { DateTime } from "effect"

/** A row of a payments list. */
export interface PaymentSummary {
  readonly id: Ids.PaymentId
  readonly applicationId: string
  readonly applicationName: string
  readonly mode: Mode.Mode
  readonly status: Payment.PaymentStatus
  readonly amount: number
  readonly refundedAmount: number
  readonly currency: string
  readonly method: string
  readonly orderReference: string
  readonly customerEmail: string | null
  /** For the lazy expiry of the rows shown ({@link expireShown}). */
  readonly expiresAt: Date
  readonly createdAt: Date
}

/** One event of a payment with its delivery and that delivery's latest attempt. */
export interface TimelineEntry {
  readonly eventId: string
  readonly event: WebhookEvent.EventName
  readonly createdAt: DateTime.Utc
  readonly delivery: {
    readonly id: Ids.DeliveryId
    readonly status: Delivery.DeliveryStatus
    readonly attempts: number
    readonly nextAttemptAt: DateTime.Utc | null
    readonly lastStatus: number | null
    readonly lastError: string | null
  } | null
}

export interface ProviderPaymentView {
  /** The provider of the payment's link, as operators read it (`Stripe`). */
  readonly provider: string
  readonly state: string
  /** The provider's checkout, once it opened one. */
  readonly checkoutId: string | null
  /** The provider's payment behind the checkout, once there is one. */
  readonly providerPaymentId: string | null
  /** The provider's own status word at the last read (Mollie's `open`, `paid`…; Stripe's session status). */
  readonly providerStatus: string | null
  /** When the provider closes the checkout (Mollie's `expiresAt`: it chooses, by method). */
  readonly expiresAt: Date | null
  readonly lastReadAt: Date | null
  /** What the provider said, as stored (JSON text); shown escaped. */
  readonly lastAnswer: string | null
  readonly nextReadAt: Date | null
}

export interface DiscrepancyItem {
  readonly id: string
  readonly applicationId: string
  /** The provider the payment went through, as operators read it; null for a payment without a provider row. */
  readonly provider: string | null
  readonly paymentId: string
  readonly refundId: string | null
  readonly kind: string
  readonly message: string
  readonly detectedAt: Date
}

export interface OverdueItem {
  readonly kind: "payment" | "refund"
  readonly applicationId: string
  readonly paymentId: string
  readonly refundId: string | null
  /** The last answer, or when the wait began (the visit, the request) if the provider never answered. */
  readonly waitingSince: Date
  readonly lastReadAt: Date | null
  readonly nextReadAt: Date
}

/** A dashboard user as the pages show them. */
export interface UserView {
  readonly id: string
  readonly email: string
  /** When an operator deactivated the account; null while it is active. */
  readonly deactivatedAt: DateTime.Utc | null
}

/** A member of an application: who, and their role there. */
export interface MemberView {
  readonly user: UserView
  readonly role: DashboardAccess.Role
}

/** An application a user belongs to, with their role there. */
export interface MembershipView {
  readonly applicationId: string
  readonly applicationName: string
  readonly role: DashboardAccess.Role
}

/** An API key as listed: its display form, never the key. */
export interface KeyView {
  readonly id: string
  readonly mode: Mode.Mode
  readonly display: string
  readonly created_at: DateTime.Utc
  readonly last_used_at: DateTime.Utc | null
  readonly revoked_at: DateTime.Utc | null
}

/** A key just issued: shown this once. */
export interface IssuedKeyView extends KeyView {
  readonly key: string
}

/** An application as its pages show it: its settings, and when its webhook secret was last regenerated. */
export interface ApplicationView extends Application.Application {
  readonly webhook_secret_rotated_at: DateTime.Utc | null
}

/** A linked payment-provider account: what identifies it, never its sealed secrets. */
export interface ProviderLinkView {
  /** Its provider, as operators read it (`Stripe`, `Mollie`). */
  readonly provider: string
  readonly status: string
  readonly accountId: string
  readonly keyDisplay: string
  readonly livemode: boolean
  /** Null for a provider whose webhook is named on each payment (Mollie). */
  readonly webhookEndpointId: string | null
  readonly linkedAt: DateTime.Utc
}

/** A webhook delivery with its attempts, in the operator API's wire form. */
export type DeliveryView = typeof OperatorSchemas.DeliveryView.Type
export type AttemptView = typeof OperatorSchemas.DeliveryAttemptView.Type
