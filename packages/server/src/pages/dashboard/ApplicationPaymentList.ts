/** An application's payments list (issue #6 §4) with its filters, newest first. One payment: ApplicationPayments.ts. */
import { Mode, Money, Payment } from "@kassa/core"
import { html } from "../Html.ts"
import { type AppFrame, appPage, appPath } from "./ApplicationShared.ts"
import {
  anyOf,
  badge,
  field,
  filterForm,
  formatTime,
  modeBadge,
  pageHead,
  pager,
  select,
  sentence,
  table
} from "./Components.ts"
import type { PaymentSummary as PaymentRow } from "./Views.ts"

export interface PaymentFilterView {
  readonly mode: string
  readonly status: string
  readonly order_reference: string
}

const money = (amount: number, currency: string) => Money.format(amount, currency, "en")

export const paymentsPage = (
  frame: AppFrame,
  view: {
    readonly rows: ReadonlyArray<PaymentRow>
    readonly hasMore: boolean
    readonly filter: PaymentFilterView
  }
) => {
  const path = appPath(frame, "/payments")
  const filtered = view.filter.mode !== "" || view.filter.status !== "" || view.filter.order_reference !== ""
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
  const body = html`${pageHead("Payments", "Every payment of this application, newest first. Open one to see its events and refunds.")}
${filterForm(
  path,
  [
    select({
      name: "mode",
      label: "Mode",
      value: view.filter.mode,
      choices: anyOf(Mode.Mode.literals, "Test and live", sentence)
    }),
    select({
      name: "status",
      label: "Status",
      value: view.filter.status,
      choices: anyOf(Payment.PaymentStatus.literals, "Any status", sentence)
    }),
    field({
      name: "order_reference",
      label: "Order reference",
      type: "search",
      value: view.filter.order_reference,
      attributes: html` maxlength="255" placeholder="exact reference"`
    })
  ],
  filtered,
  { label: "Filter payments", wideButton: true }
)}
${table(
  ["Order reference", "Amount", "Status", "Mode", "Customer", "Created"],
  rows,
  filtered ? "No payments match these filters." : "No payments yet. Create one with a test key to see it here.",
  "Payments"
)}
${pager(path, { ...view.filter }, view.hasMore && last !== undefined ? last.id : null)}`
  return appPage(frame, "payments", "Payments", body)
}
