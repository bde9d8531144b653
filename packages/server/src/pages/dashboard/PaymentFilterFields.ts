/**
 * The payment search's filter fields, shared by an application's payments list and the operator's: the same names,
 * the same rules (dashboard/QueryFilters.paymentFilters reads them), and the "Download CSV" link of the search.
 */
import { Mode, Payment } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { anyOf, field, select, sentence } from "./Components.ts"

/** The payment search's filters as typed, for the form, the pager and the CSV link (every value "" when absent). */
export interface PaymentFilterForm {
  readonly payment_id: string
  readonly order_reference: string
  /** `exact` or `prefix`. */
  readonly match: string
  readonly customer_email: string
  readonly created_from: string
  readonly created_to: string
  readonly currency: string
  readonly amount_min: string
  readonly amount_max: string
  readonly status: string
  readonly mode: string
}

/** Values that were not used as filters, with why, by field. */
export type PaymentFilterErrors = Readonly<Partial<Record<keyof PaymentFilterForm, string>>>

/** The search's fields, in the order a person narrows a search: who and what first, then when and how much. */
export const paymentFilterFields = (form: PaymentFilterForm, errors: PaymentFilterErrors): ReadonlyArray<Html> => [
  field({
    name: "payment_id",
    label: "Payment id",
    value: form.payment_id,
    error: errors.payment_id,
    attributes: html` maxlength="36" spellcheck="false"`
  }),
  field({
    name: "order_reference",
    label: "Order reference",
    type: "search",
    value: form.order_reference,
    attributes: html` maxlength="255"`
  }),
  select({
    name: "match",
    label: "Reference match",
    value: form.match,
    choices: [
      ["exact", "Exactly"],
      ["prefix", "Starts with"]
    ]
  }),
  field({
    name: "customer_email",
    label: "Customer e-mail",
    type: "search",
    value: form.customer_email,
    hint: "The whole address; upper or lower case alike.",
    attributes: html` maxlength="320" spellcheck="false"`
  }),
  field({
    name: "created_from",
    label: "Created from",
    type: "date",
    value: form.created_from,
    error: errors.created_from,
    hint: "Days in UTC, both included."
  }),
  field({ name: "created_to", label: "Created to", type: "date", value: form.created_to, error: errors.created_to }),
  field({
    name: "currency",
    label: "Currency",
    value: form.currency,
    error: errors.currency,
    hint: "Amounts are then in it, like 12.50.",
    attributes: html` maxlength="3" placeholder="EUR" autocapitalize="characters"`
  }),
  field({
    name: "amount_min",
    label: "Amount from",
    value: form.amount_min,
    error: errors.amount_min,
    hint: "Without a currency: in cents (1250).",
    attributes: html` inputmode="decimal" maxlength="20"`
  }),
  field({
    name: "amount_max",
    label: "Amount to",
    value: form.amount_max,
    error: errors.amount_max,
    attributes: html` inputmode="decimal" maxlength="20"`
  }),
  select({
    name: "status",
    label: "Status",
    value: form.status,
    choices: anyOf(Payment.PaymentStatus.literals, "Any status", sentence)
  }),
  select({
    name: "mode",
    label: "Mode",
    value: form.mode,
    choices: anyOf(Mode.Mode.literals, "Test and live", sentence)
  })
]

/** `path?filters` with the filters that are set (the pager's and the export's links). */
export const withFilters = (path: string, filters: Readonly<Record<string, string>>): string => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(filters)) if (value !== "") params.set(name, value)
  const text = params.toString()
  return text === "" ? path : `${path}?${text}`
}

/** The export of the search as shown: every payment it finds, not only this page. */
export const csvLink = (href: string): Html =>
  html`<a class="button secondary" href="${href}" download>Download CSV</a>`
