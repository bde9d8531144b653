/**
 * The operator's page of live payments at their provider (issue 12 §5, decisions §10 and §11 "Seen by operators"):
 * open discrepancies and overdue reads, newest first, each with a "Read from the provider now" button; and the card
 * of one live payment at its provider, named by its link's provider. Templates only: every value (the provider's
 * messages included) goes through `html`, so it is escaped.
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
    "Read from the provider now",
    "secondary",
    target.refundId === null ? { payment_id: target.paymentId } : { refund_id: target.refundId }
  )

/** Kinds operators read on the page, in words (the code stays beside it); a kind this build does not know as it is. */
const kindTitles: Readonly<Record<string, string>> = {
  paid_after_final: "paid after final",
  unpaid_after_paid: "unpaid after paid",
  refund_failed_after_success: "refund failed after success",
  refund_not_recordable: "refund not recordable",
  charged_back: "charged back",
  awaiting_capture: "awaiting capture"
}

/** The one-click full refund at the provider of money a closed payment took (decisions §11, "paid after cancel"). */
const refundAtProvider = (viewer: Viewer, item: DiscrepancyItem) =>
  item.kind === "paid_after_final" && item.provider !== null
    ? actionForm(viewer, `${providerPath}/refund`, `Refund in full at ${item.provider}`, "danger", {
        discrepancy_id: item.id
      })
    : html``

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
<td>${item.provider ?? html`<span class="muted">—</span>`}</td>
<td>${paymentLink(item.applicationId, item.paymentId)}</td>
<td>${item.refundId === null ? html`<span class="muted">—</span>` : html`<code>${item.refundId}</code>`}</td>
<td>${kindTitles[item.kind] ?? item.kind} <code>${item.kind}</code></td>
<td>${item.message}</td>
<td>${readNow(view.viewer, item)}${refundAtProvider(view.viewer, item)}</td>
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
    "At the provider",
    html`${pageHead("At the provider", "Live payments and refunds that their payment provider and Kassa disagree on, or that the provider has not answered for in time, newest first.")}
<h2>Open discrepancies</h2>
${table(["Detected", "Provider", "Payment", "Refund", "Kind", "Message", ""], discrepancies, "No open discrepancies.", "Open discrepancies")}
${pager(providerPath, {}, view.discrepanciesNext, { cursor: "before", label: "Older discrepancies" })}
<h2>Overdue answers</h2>
<p class="muted">Payments and refunds Kassa is waiting on that have had no answer from their provider for over 10 minutes (it reads them every 5): the provider did not answer or refused, or no Kassa process is reading.</p>
${table(["Waiting since", "Kind", "Payment", "Refund", "Last answer", "Next read", ""], overdue, "No overdue reads.", "Overdue answers")}
${pager(providerPath, {}, view.overdueNext, { cursor: "overdue_before", label: "Older overdue reads" })}`,
    view.notice
  )
}

// The provider row's `state` tells whether Kassa opened a checkout there, not how the payment stands (a paid
// payment's checkout stays "open" in that sense): say so in words.
const checkoutState = (state: string, provider: string): string =>
  state === "opening"
    ? `being opened (${provider} has not answered yet)`
    : state === "open"
      ? `opened at ${provider}`
      : state === "not_opened"
        ? "not opened"
        : state

const idOrNone = (id: string | null): Html =>
  id === null ? html`<span class="muted">—</span>` : html`<code>${id}</code>`

/** The "At {provider}" card of a live payment's page. */
export const providerSection = (view: ProviderPaymentView): Html => html`<div class="card">
<h2>At ${view.provider}</h2>
<dl class="summary">
<dt>Checkout</dt><dd>${checkoutState(view.state, view.provider)}</dd>
<dt>Checkout id</dt><dd>${idOrNone(view.checkoutId)}</dd>
<dt>Payment id at ${view.provider}</dt><dd>${idOrNone(view.providerPaymentId)}</dd>
<dt>Status at ${view.provider}</dt><dd>${view.providerStatus === null ? html`<span class="muted">not read yet</span>` : html`<code>${view.providerStatus}</code>`}</dd>
<dt>Checkout expires</dt><dd>${view.expiresAt === null ? html`<span class="muted">—</span>` : formatTime(view.expiresAt)}</dd>
<dt>Last read</dt><dd>${formatTime(view.lastReadAt)}</dd>
<dt>Next read</dt><dd>${view.nextReadAt === null ? html`<span class="muted">none planned</span>` : formatTime(view.nextReadAt)}</dd>
</dl>
${view.lastAnswer === null ? html`<p class="muted">${view.provider} has not been read yet.</p>` : html`<h3>What ${view.provider} said</h3><pre class="body">${view.lastAnswer}</pre>`}
</div>`
