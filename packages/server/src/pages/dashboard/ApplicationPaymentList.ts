/**
 * An application's payments list (issue #6 §4) with the payment search's filters (PaymentFilterFields), newest first,
 * and the export of the search as CSV. One payment: ApplicationPayments.ts.
 */
import { Money } from "@kassa/core"
import { html } from "../Html.ts"
import { type AppFrame, appPage, appPath } from "./ApplicationShared.ts"
import { badge, filterForm, formatTime, modeBadge, pageHead, pager, table } from "./Components.ts"
import {
  csvLink,
  type PaymentFilterErrors,
  type PaymentFilterForm,
  paymentFilterFields,
  withFilters
} from "./PaymentFilterFields.ts"
import type { PaymentSummary as PaymentRow } from "./Views.ts"

export type { PaymentFilterForm }

const money = (amount: number, currency: string) => Money.format(amount, currency, "en")

export const paymentsPage = (
  frame: AppFrame,
  view: {
    readonly rows: ReadonlyArray<PaymentRow>
    readonly hasMore: boolean
    readonly filter: PaymentFilterForm
    readonly errors: PaymentFilterErrors
    /** Whether any filter is set. */
    readonly filtered: boolean
  }
) => {
  const path = appPath(frame, "/payments")
  const { filtered } = view
  const rows = view.rows.map(
    (row) => html`<tr>
<td><a href="${appPath(frame, `/payments/${row.id}`)}">${row.orderReference}</a></td>
<td class="num">${money(row.amount, row.currency)}</td>
<td>${badge(row.status)}</td>
<td>${modeBadge(row.mode)}</td>
<td>${row.customerEmail ?? html`<span class="muted">—</span>`}</td>
<td>${formatTime(row.createdAt)}</td>
</tr>`
  )
  const last = view.rows.at(-1)
  const body = html`${pageHead(
    "Payments",
    "Every payment of this application, newest first. Open one to see its events and refunds.",
    csvLink(withFilters(appPath(frame, "/payments.csv"), { ...view.filter }))
  )}
${filterForm(path, paymentFilterFields(view.filter, view.errors), filtered, {
  label: "Filter payments",
  wideButton: true
})}
${table(
  ["Order reference", "Amount", "Status", "Mode", "Customer", "Created"],
  rows,
  filtered ? "No payments match these filters." : "No payments yet. Create one with a test key to see it here.",
  "Payments"
)}
${pager(path, { ...view.filter }, view.hasMore && last !== undefined ? last.id : null)}`
  return appPage(frame, "payments", "Payments", body)
}
