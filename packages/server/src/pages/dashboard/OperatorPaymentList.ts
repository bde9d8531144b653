/**
 * The operator's payments page (`/dashboard/operator/payments`): every application's payments with the payment
 * search's filters (PaymentFilterFields) and an application filter, newest first, and the export of the search as
 * CSV. Templates only: every value goes through `html`, so it is escaped.
 */
import { Money } from "@kassa/core"
import { html } from "../Html.ts"
import { badge, filterForm, formatTime, modeBadge, pageHead, pager, select, table } from "./Components.ts"
import type { DashboardPage, Viewer } from "./DashboardLayout.ts"
import { type ApplicationChoice, applicationChoices, operatorApplicationLink, operatorPage } from "./OperatorViews.ts"
import {
  csvLink,
  type PaymentFilterErrors,
  type PaymentFilterForm,
  paymentFilterFields,
  withFilters
} from "./PaymentFilterFields.ts"
import type { PaymentSummary } from "./Views.ts"

/** The search's filters with the application's. */
export interface OperatorPaymentFilters extends PaymentFilterForm {
  readonly application: string
}

const path = "/dashboard/operator/payments"

export const paymentsPage = (view: {
  readonly viewer: Viewer
  readonly filters: OperatorPaymentFilters
  readonly errors: PaymentFilterErrors
  /** Whether any filter is set. */
  readonly active: boolean
  readonly applications: ReadonlyArray<ApplicationChoice>
  readonly payments: ReadonlyArray<PaymentSummary>
  readonly next: string | null
}): DashboardPage => {
  const { filters, active } = view
  const rows = view.payments.map(
    (payment) => html`<tr>
<td>${formatTime(payment.createdAt)}</td>
<td><a href="/dashboard/apps/${payment.applicationId}/payments/${payment.id}"><code>${payment.id}</code></a></td>
<td>${payment.orderReference}</td>
<td>${operatorApplicationLink(payment.applicationId, payment.applicationName)}</td>
<td class="num">${Money.format(payment.amount, payment.currency, "en")}${
      payment.refundedAmount > 0
        ? html`<div class="hint">${Money.format(payment.refundedAmount, payment.currency, "en")} refunded</div>`
        : ""
    }</td>
<td>${payment.customerEmail ?? html`<span class="muted">—</span>`}</td>
<td>${payment.method}</td>
<td>${modeBadge(payment.mode)}</td>
<td>${badge(payment.status)}</td>
</tr>`
  )
  return operatorPage(
    "payments",
    view.viewer,
    "Payments",
    html`${pageHead(
      "Payments",
      "Find a payment of any application by its id, order reference, customer, date or amount, newest first.",
      csvLink(withFilters(`${path}.csv`, { ...filters }))
    )}
${filterForm(
  path,
  [
    ...paymentFilterFields(filters, view.errors),
    select({
      name: "application",
      label: "Application",
      value: filters.application,
      choices: applicationChoices(view.applications)
    })
  ],
  active,
  { submit: "Search" }
)}
${table(
  ["Created", "Payment", "Order reference", "Application", "Amount", "Customer", "Method", "Mode", "Status"],
  rows,
  active ? "No payments match this search." : "No payments yet.",
  "Payments"
)}
${pager(path, { ...filters }, view.next)}`
  )
}
