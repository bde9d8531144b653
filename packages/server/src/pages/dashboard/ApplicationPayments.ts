/**
 * One payment (issue #6 §4) with everything about it — amounts, customer and payer, how it was settled (issue 22 §3),
 * refunds, and the timeline of its events and their deliveries. A live payment that was paid can have a refund
 * requested here (specification: live refunds are requested from the dashboard and confirmed later by the provider);
 * a test payment can be simulated, cancelled and refunded here, as through the API. The list:
 * ApplicationPaymentList.ts.
 */
import { Money, type Payment, PaymentRequests, RefundRules, SettlementSource } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { type AppFrame, appPage, appPath, noticeBlock, subheading } from "./ApplicationShared.ts"
import { badge, field, formatTime, modeBadge, pageHead } from "./Components.ts"
import { csrfField } from "./DashboardLayout.ts"
import { providerSection } from "./OperatorProvider.ts"
import type { ProviderPaymentView, TimelineEntry } from "./Views.ts"

const money = (amount: number, currency: string) => Money.format(amount, currency, "en")

export interface RefundFormState {
  readonly amount: string
  readonly reason: string
  readonly errors: { readonly amount?: string; readonly reason?: string; readonly form?: string }
}

export interface PaymentView {
  readonly payment: Payment.Payment
  readonly timeline: ReadonlyArray<TimelineEntry>
  readonly requesters: ReadonlyMap<string, string>
  readonly notice: string | null
  readonly refundForm?: RefundFormState | undefined
  /** A live payment's checkout at its provider (decisions §10 "Seen by operators"); null for test payments. */
  readonly provider?: ProviderPaymentView | null | undefined
  /** What moved it out of `pending` (null: not recorded), and the member who did, when the audit log knows. */
  readonly settlement: { readonly via: SettlementSource.SettlementSource | null; readonly by: string | null }
  /** A simulation or cancel of this test payment that was refused, in words. */
  readonly actionError?: string | undefined
}

const personRows = (person: Readonly<Record<string, string | null>>, labels: Readonly<Record<string, string>>) =>
  Object.entries(labels).map(
    ([key, label]) => html`<dt>${label}</dt><dd>${person[key] ?? html`<span class="muted">—</span>`}</dd>`
  )

const refundSection = (frame: AppFrame, view: PaymentView): Html => {
  const refused = view.refundForm?.errors.form
  return html`${refused === undefined ? "" : html`<div class="error" role="alert">${refused}</div>`}${refundForm(frame, view)}`
}

const refundForm = (frame: AppFrame, view: PaymentView): Html => {
  const { payment } = view
  const test = payment.mode === "test"
  if (!RefundRules.isRefundable(payment))
    return html`<p class="muted">Only paid or partially refunded payments can be refunded; this one is ${payment.status.replace(/_/g, " ")}.</p>`
  const refundable = RefundRules.refundableAmount(payment)
  if (refundable < 1)
    return html`<p class="muted">Nothing is left to refund: earlier refunds (pending ones included) cover the whole amount.</p>`
  if (!frame.can(test ? "manage_test_payments" : "request_refunds"))
    return html`<p class="muted">Up to ${money(refundable, payment.currency)} can still be refunded. Your role cannot ${test ? "refund test payments" : "request refunds"}.</p>`
  const form = view.refundForm
  const digits = Money.minorUnitDigits(payment.currency)
  const unit = digits === 0 ? `whole ${payment.currency}` : `minor units of ${payment.currency} (1/${10 ** digits})`
  return html`${subheading(test ? "Refund this test payment" : "Request a refund")}
${
  test
    ? html`<p class="muted">A test refund succeeds at once, as through the API (<code>POST /api/v1/payments/${payment.id}/refunds</code>): the payment's status changes and its webhook is sent.</p>`
    : html`<p class="muted">Live refunds are sent to the payment provider and stay <strong>pending</strong> until it confirms them. The payment's status — and its webhook — change only on that confirmation; the request itself sends no event.</p>`
}
<form method="post" action="${appPath(frame, `/payments/${payment.id}/refunds`)}" novalidate>${csrfField(frame.viewer)}
<div class="grid">
${field({
  name: "amount",
  label: "Amount",
  type: "text",
  value: form?.amount ?? "",
  required: true,
  hint: `In ${unit}: ${10 ** digits * 10} is ${money(10 ** digits * 10, payment.currency)}. Up to ${refundable} (${money(refundable, payment.currency)}) can be refunded.`,
  error: form?.errors.amount,
  attributes: html` inputmode="numeric" pattern="[0-9]*" autocomplete="off"`
})}
${field({
  name: "reason",
  label: "Reason (optional)",
  value: form?.reason ?? "",
  hint: "At most 255 characters; returned with the refund.",
  error: form?.errors.reason,
  attributes: html` maxlength="255"`
})}
</div>
<div class="actions"><button type="submit" class="primary">${test ? "Refund" : "Request refund"}</button></div>
</form>`
}

/**
 * A test payment's simulate and cancel (issue 22 §3): the simulate endpoint's outcomes, while it is pending; and a
 * simulate or cancel refused, in words (for a live payment, only that).
 */
const testActions = (frame: AppFrame, view: PaymentView): Html | "" => {
  const { payment } = view
  const refused = view.actionError === undefined ? "" : html`<div class="error" role="alert">${view.actionError}</div>`
  // A live payment is its provider's to decide: only a refused (forged) post shows here.
  if (payment.mode === "live") return refused === "" ? "" : html`<div class="card">${refused}</div>`
  const actions = !frame.can("manage_test_payments")
    ? html`<p class="muted">Your role cannot simulate or cancel test payments.</p>`
    : payment.status !== "pending"
      ? html`<p class="muted">This test payment is ${payment.status.replace(/_/g, " ")}: only pending payments can be simulated or cancelled.</p>`
      : html`<p class="muted">Decide this test payment as the API's simulate and cancel do (<code>POST /api/v1/test/payments/${payment.id}/simulate</code>, <code>POST /api/v1/payments/${payment.id}/cancel</code>): the same status change, event and webhook.</p>
<form method="post" action="${appPath(frame, `/payments/${payment.id}/simulate`)}">${csrfField(frame.viewer)}
<div class="actions">${PaymentRequests.SimulatedOutcome.literals.map(
          (outcome, index) =>
            html`<button type="submit" name="outcome" value="${outcome}" class="${index === 0 ? "primary" : "secondary"}">Simulate ${outcome}</button>`
        )}</div>
</form>
<form method="post" action="${appPath(frame, `/payments/${payment.id}/cancel`)}">${csrfField(frame.viewer)}
<div class="actions"><button type="submit" class="danger">Cancel payment</button></div>
</form>`
  return html`<div class="card">
<h2>Test payment</h2>
${refused}${actions}
</div>`
}

const timelineItem = (frame: AppFrame, entry: TimelineEntry): Html => {
  const delivery = entry.delivery
  const answer =
    delivery === null || delivery.attempts === 0
      ? html`<span class="muted">not attempted yet</span>`
      : delivery.lastStatus !== null
        ? html`last answer HTTP ${delivery.lastStatus}`
        : html`last error ${delivery.lastError ?? "unknown"}`
  return html`<li><strong>${entry.event}</strong> <span class="muted">${formatTime(entry.createdAt)}</span>
<div>${
    delivery === null
      ? html`<span class="muted">no delivery</span>`
      : html`<a href="${appPath(frame, `/deliveries/${delivery.id}`)}">Delivery</a> ${badge(delivery.status)} · ${delivery.attempts} attempt${delivery.attempts === 1 ? "" : "s"} · ${answer}${
          delivery.status === "pending" && delivery.nextAttemptAt !== null
            ? html` · next ${formatTime(delivery.nextAttemptAt)}`
            : ""
        }`
  }</div>
<div class="hint"><code>${entry.eventId}</code></div></li>`
}

export const paymentPage = (frame: AppFrame, view: PaymentView, status = 200) => {
  const { payment } = view
  const refundable = RefundRules.refundableAmount(payment)
  const pending = payment.refunds.reduce((sum, refund) => (refund.status === "pending" ? sum + refund.amount : sum), 0)
  const refunds = payment.refunds.map(
    (refund) => html`<tr>
<td class="num">${money(refund.amount, payment.currency)}</td>
<td>${badge(refund.status, refund.status === "pending" ? "pending — confirmed by the provider" : refund.status)}</td>
<td>${refund.reason ?? html`<span class="muted">—</span>`}</td>
<td>${formatTime(refund.created_at)}</td>
<td>${formatTime(refund.confirmed_at)}</td>
<td>${view.requesters.get(refund.id) ?? html`<span class="muted">API</span>`}</td>
</tr>`
  )
  const metadata = Object.keys(payment.metadata).length === 0 ? null : JSON.stringify(payment.metadata, null, 2)
  const body = html`${pageHead(
    `${money(payment.amount, payment.currency)} · ${payment.order_reference}`,
    html`${badge(payment.status)} ${modeBadge(payment.mode)} Payment <code>${payment.id}</code>`
  )}
${noticeBlock(view.notice)}
<div class="card">
<h2>Payment</h2>
<dl class="summary">
<dt>Amount</dt><dd>${money(payment.amount, payment.currency)} <span class="muted">(${payment.amount} ${payment.currency} minor units)</span></dd>
<dt>Refunded</dt><dd>${money(payment.refunded_amount, payment.currency)}</dd>
${pending === 0 ? "" : html`<dt>Pending refunds</dt><dd>${money(pending, payment.currency)} <span class="muted">(until the provider confirms them)</span></dd>`}
<dt>Refundable</dt><dd>${money(refundable, payment.currency)}</dd>
<dt>Status</dt><dd>${badge(payment.status)}</dd>
<dt>Mode</dt><dd>${modeBadge(payment.mode)}</dd>
<dt>Method</dt><dd>${payment.method}</dd>
<dt>Order reference</dt><dd>${payment.order_reference}</dd>
<dt>Description</dt><dd>${payment.description ?? html`<span class="muted">—</span>`}</dd>
<dt>Locale</dt><dd>${payment.locale}</dd>
<dt>Return URL</dt><dd>${payment.return_url ?? html`<span class="muted">—</span>`}</dd>
<dt>Checkout</dt><dd><code>${payment.checkout_url}</code></dd>
<dt>Created</dt><dd>${formatTime(payment.created_at)}</dd>
<dt>Expires</dt><dd>${formatTime(payment.expires_at)}</dd>
<dt>Paid</dt><dd>${formatTime(payment.paid_at)}</dd>
<dt>Settled</dt><dd>${SettlementSource.describe({
    source: view.settlement.via,
    status: payment.status,
    provider: view.provider?.provider ?? null,
    actor: view.settlement.by
  })}</dd>
</dl>
${metadata === null ? "" : html`${subheading("Metadata")}<pre class="body">${metadata}</pre>`}
</div>
<div class="card">
<h2>Customer and payer</h2>
<div class="grid">
<div>${subheading("Customer")}<p class="hint">As your application described them.</p><dl class="summary">${personRows(payment.customer, { name: "Name", email: "E-mail", phone: "Phone" })}</dl></div>
<div>${subheading("Payer")}${
    payment.payer === null
      ? html`<p class="muted">Nobody has completed the checkout yet.</p>`
      : html`<p class="hint">Who completed the checkout.</p><dl class="summary">${personRows(payment.payer, { name: "Name", email: "E-mail", phone: "Phone", ip: "IP address", user_agent: "Browser" })}</dl>`
  }</div>
</div>
</div>
${view.provider === undefined || view.provider === null ? "" : providerSection(view.provider)}
${testActions(frame, view)}
<div class="card">
<h2>Refunds</h2>
${
  refunds.length === 0
    ? html`<p class="muted">No refunds.</p>`
    : html`<table><caption class="sr-only">Refunds</caption><thead><tr><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Requested</th><th scope="col">Confirmed</th><th scope="col">By</th></tr></thead><tbody>${refunds}</tbody></table>`
}
${refundSection(frame, view)}
</div>
<div class="card">
<h2>Events and deliveries</h2>
${
  view.timeline.length === 0
    ? html`<p class="muted">No events yet: a payment sends one when its status changes (creating it sends none).</p>`
    : html`<ol class="timeline">${view.timeline.map((entry) => timelineItem(frame, entry))}</ol>`
}
</div>`
  return appPage(frame, "payments", `Payment ${payment.order_reference}`, body, status)
}
