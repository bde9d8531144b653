/**
 * What moved a payment out of `pending` (issue 22 §3): the one list of sources the server records with the status
 * change (`payments.settled_via`, written in the same statement) and the words the payment page says for each.
 * Only the first change is recorded: every later one is a refund, whose own row says who asked (the API's
 * Idempotency-Key, the dashboard user) — and a payment never returns to `pending`.
 */
import { Schema } from "effect"
import type { PaymentStatus } from "../domain/Payment.ts"

export const SettlementSource = Schema.Literals([
  /** The customer's choice at Kassa's hosted (test) checkout. */
  "checkout",
  /** `POST /api/v1/test/payments/{id}/simulate` with a test key. */
  "api_simulate",
  /** A member's simulation on the application dashboard's payment page. */
  "dashboard_simulate",
  /** Created `failed`: the provider (or the simulator, `Kassa-Simulate: provider_error`) refused to open it. */
  "provider_refused",
  /** A provider's event (a Stripe webhook, a Mollie ping), then Kassa's read of the checkout. */
  "provider_event",
  /** Kassa's own read of the checkout at the provider on schedule (the reconciler, a dead create's clean-up). */
  "provider_read",
  /** A read of the checkout an operator asked for ("Read now"). */
  "operator_read",
  /** The provider's answer when Kassa closed a live checkout past its expiry. */
  "provider_expiry",
  /** The background sweeper found it past `expires_at`. */
  "expiry_sweeper",
  /** A read (API, checkout, dashboard, list) found it past `expires_at` first (lazy expiry). */
  "expiry_lazy",
  /** `POST /api/v1/payments/{id}/cancel` (for a live payment: with the provider's answer to the close). */
  "api_cancel",
  /** A member's cancel on the application dashboard's payment page. */
  "dashboard_cancel"
])
export type SettlementSource = typeof SettlementSource.Type

/** The sources a dashboard member causes, whose name the audit log holds. */
export const byDashboardMember: ReadonlySet<SettlementSource> = new Set(["dashboard_simulate", "dashboard_cancel"])

/** The word for where the payment went when it left `pending`, read from its status now (a refund follows a pay). */
const outcomeOf = (status: PaymentStatus): string => {
  switch (status) {
    case "pending":
      return "Pending"
    case "paid":
    case "partially_refunded":
    case "refunded":
      return "Paid"
    case "failed":
      return "Failed"
    case "cancelled":
      return "Cancelled"
    case "expired":
      return "Expired"
  }
}

const phrases: Record<SettlementSource, (provider: string) => string> = {
  checkout: () => "at the hosted checkout (the customer's choice)",
  api_simulate: () => "by a simulation through the API",
  dashboard_simulate: () => "by a simulation from the dashboard",
  provider_refused: () => "when created: the payment provider refused it",
  provider_event: (provider) => `at ${provider} (webhook)`,
  provider_read: (provider) => `at ${provider} (read by Kassa on schedule)`,
  operator_read: (provider) => `at ${provider} (read on an operator's request)`,
  provider_expiry: (provider) => `at ${provider} (its answer when Kassa closed the checkout at its expiry)`,
  expiry_sweeper: () => "at its expiry (the background sweeper)",
  expiry_lazy: () => "at its expiry (found past it when read)",
  api_cancel: () => "on a cancel through the API",
  dashboard_cancel: () => "on a cancel from the dashboard"
}

/**
 * How the payment was settled, in words: "Paid at the hosted checkout (the customer's choice)", "Failed by a
 * simulation from the dashboard by alice@example.com", "Paid at Stripe (webhook)". `provider` is the name of the
 * provider of the payment's link (null for a test payment); `actor` who did it, when the audit log knows.
 */
export const describe = (input: {
  readonly source: SettlementSource | null
  readonly status: PaymentStatus
  readonly provider: string | null
  readonly actor: string | null
}): string => {
  if (input.status === "pending") return "Not settled yet: the payment is pending."
  if (input.source === null) return "Not recorded (settled before Kassa recorded how)."
  const said = `${outcomeOf(input.status)} ${phrases[input.source](input.provider ?? "the payment provider")}`
  return input.actor !== null && byDashboardMember.has(input.source) ? `${said} by ${input.actor}` : said
}
