/**
 * The operator's page of live payments at their provider (issue 12 §5, decisions §10 "Seen by operators"): open
 * discrepancies and overdue reads, newest first, each with a "Read from Stripe now" button. Templates only: every
 * value (Stripe's messages included) goes through `html`, so it is escaped.
 */
import { type Html, html } from "../Html.ts"
import { actionForm, formatTime, pageHead, pager, table } from "./Components.ts"
import type { DashboardPage, Viewer } from "./DashboardLayout.ts"
import type { Notice } from "./Notices.ts"
import { operatorPage } from "./OperatorViews.ts"
import type { DiscrepancyItem, OverdueItem, ProviderPaymentView } from "./Views.ts"

export const providerPath = "/dashboard/operator/provider"

const paymentLink = (applicationId: string, paymentId: string) =>
  html`<a href="/dashboard/apps/${applicationId}/payments/${paymentId}"><code>${paymentId}</code></a>`

const readNow = (viewer: Viewer, target: { readonly paymentId: string; readonly refundId: string | null }) =>
  actionForm(
    viewer,
    `${providerPath}/read`,
    "Read from Stripe now",
    "secondary",
    target.refundId === null ? { payment_id: target.paymentId } : { refund_id: target.refundId }
  )

export const providerPage = (view: {
  readonly viewer: Viewer
  readonly notice: Notice | undefined
  readonly discrepancies: ReadonlyArray<DiscrepancyItem>
  readonly discrepanciesNext: string | null
  readonly overdue: ReadonlyArray<OverdueItem>
  readonly overdueNext: string | null
}): DashboardPage => {
  const discrepancies = view.discrepancies.map(
    (item) => html`<tr>
<td>${formatTime(item.detectedAt)}</td>
<td>${paymentLink(item.applicationId, item.paymentId)}</td>
<td>${item.refundId === null ? html`<span class="muted">—</span>` : html`<code>${item.refundId}</code>`}</td>
<td><code>${item.kind}</code></td>
<td>${item.message}</td>
<td>${readNow(view.viewer, item)}</td>
</tr>`
  )
  const overdue = view.overdue.map(
    (item) => html`<tr>
<td>${formatTime(item.waitingSince)}</td>
<td>${item.kind}</td>
<td>${paymentLink(item.applicationId, item.paymentId)}</td>
<td>${item.refundId === null ? html`<span class="muted">—</span>` : html`<code>${item.refundId}</code>`}</td>
<td>${formatTime(item.lastReadAt)}</td>
<td>${formatTime(item.nextReadAt)}</td>
<td>${readNow(view.viewer, item)}</td>
</tr>`
  )
  return operatorPage(
    "provider",
    view.viewer,
    "At Stripe",
    html`${pageHead("At Stripe", "Live payments and refunds that Stripe and Kassa disagree on, or that Stripe has not answered for in time, newest first.")}
<h2>Open discrepancies</h2>
${table(["Detected", "Payment", "Refund", "Kind", "Message", ""], discrepancies, "No open discrepancies.", "Open discrepancies")}
${pager(providerPath, {}, view.discrepanciesNext, { cursor: "before", label: "Older discrepancies" })}
<h2>Overdue answers</h2>
<p class="muted">Payments and refunds Kassa is waiting on that have had no answer from Stripe for over 10 minutes (it reads them every 5): Stripe did not answer or refused, or no Kassa process is reading.</p>
${table(["Waiting since", "Kind", "Payment", "Refund", "Last answer", "Next read", ""], overdue, "No overdue reads.", "Overdue answers")}
${pager(providerPath, {}, view.overdueNext, { cursor: "overdue_before", label: "Older overdue reads" })}`,
    view.notice
  )
}

// The provider row's `state` tells whether Kassa opened a checkout there, not how the payment stands (a paid
// payment's session stays "open" in that sense): say so in words.
const checkoutState: Record<string, string> = {
  opening: "being opened (Stripe has not answered yet)",
  open: "opened at Stripe",
  not_opened: "not opened"
}

/** The "At Stripe" card of a live payment's page. */
export const providerSection = (provider: ProviderPaymentView): Html => html`<div class="card">
<h2>At Stripe</h2>
<dl class="summary">
<dt>Checkout session</dt><dd>${checkoutState[provider.state] ?? provider.state}</dd>
<dt>Session id</dt><dd>${provider.sessionId === null ? html`<span class="muted">—</span>` : html`<code>${provider.sessionId}</code>`}</dd>
<dt>Payment intent id</dt><dd>${provider.paymentIntentId === null ? html`<span class="muted">—</span>` : html`<code>${provider.paymentIntentId}</code>`}</dd>
<dt>Last read</dt><dd>${formatTime(provider.lastReadAt)}</dd>
<dt>Next read</dt><dd>${provider.nextReadAt === null ? html`<span class="muted">none planned</span>` : formatTime(provider.nextReadAt)}</dd>
</dl>
${provider.lastAnswer === null ? html`<p class="muted">Stripe has not been read yet.</p>` : html`<h3>What Stripe said</h3><pre class="body">${provider.lastAnswer}</pre>`}
</div>`
