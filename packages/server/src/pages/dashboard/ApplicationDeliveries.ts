/**
 * Deliveries (issue #6 §4, specification "Events" rule 7): every webhook delivery with its attempts — response code
 * or error, duration and the start of the receiver's answer. That answer is whatever the receiver sent, so it is shown
 * only as escaped text (the `html` template escapes every value). Resend makes one manual attempt.
 */
import { Delivery, Mode, WebhookEvent } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { type AppFrame, appPage, appPath, noticeBlock, shownUrl } from "./ApplicationShared.ts"
import {
  actionForm,
  anyOf,
  badge,
  filterForm,
  formatTime,
  modeBadge,
  pageHead,
  pager,
  select,
  sentence,
  table
} from "./Components.ts"
import type { AttemptView, DeliveryView } from "./Views.ts"

export interface DeliveryFilter {
  readonly status: string
  readonly event: string
  readonly mode: string
}

/** What the last attempt got: a status code, an error, or nothing yet. */
const outcome = (attempt: AttemptView | undefined): Html => {
  if (attempt === undefined) return html`<span class="muted">not attempted yet</span>`
  if (attempt.response_status !== null) {
    const ok = attempt.response_status >= 200 && attempt.response_status < 300
    return html`<span class="status ${ok ? "succeeded" : "failed"}">HTTP ${attempt.response_status}</span>`
  }
  return html`<span class="status failed">${attempt.error ?? "error"}</span>`
}

export const deliveriesPage = (
  frame: AppFrame,
  view: {
    readonly deliveries: ReadonlyArray<DeliveryView>
    readonly hasMore: boolean
    readonly filter: DeliveryFilter
    readonly notice: string | null
  }
) => {
  const path = appPath(frame, "/deliveries")
  const filtered = view.filter.status !== "" || view.filter.event !== "" || view.filter.mode !== ""
  const rows = view.deliveries.map((delivery) => {
    const last = delivery.attempts.at(-1)
    return html`<tr>
<td><a href="${appPath(frame, `/deliveries/${delivery.id}`)}">${delivery.event}</a></td>
<td>${modeBadge(delivery.mode)}</td>
<td>${badge(delivery.status)}</td>
<td class="num">${delivery.attempts.length}</td>
<td>${outcome(last)}</td>
<td>${delivery.status === "pending" && delivery.next_attempt_at !== null ? formatTime(delivery.next_attempt_at) : html`<span class="muted">—</span>`}</td>
<td>${formatTime(delivery.created_at)}</td>
<td><a href="${appPath(frame, `/payments/${delivery.payment_id}`)}"><code>${delivery.payment_id.slice(0, 8)}…</code></a></td>
</tr>`
  })
  const last = view.deliveries.at(-1)
  const body = html`${pageHead(
    "Deliveries",
    "Every webhook Kassa sent for this application, newest first, with what your receiver answered."
  )}
${noticeBlock(view.notice)}
${filterForm(
  path,
  [
    select({
      name: "status",
      label: "Status",
      value: view.filter.status,
      choices: anyOf(Delivery.DeliveryStatus.literals, "Any status", sentence)
    }),
    select({
      name: "event",
      label: "Event",
      value: view.filter.event,
      choices: anyOf(WebhookEvent.EventName.literals, "Any event", (event) => event)
    }),
    select({
      name: "mode",
      label: "Mode",
      value: view.filter.mode,
      choices: anyOf(Mode.Mode.literals, "Test and live", sentence)
    })
  ],
  filtered,
  { label: "Filter deliveries", wideButton: true }
)}
${table(
  ["Event", "Mode", "Status", "Attempts", "Last answer", "Next attempt", "Created", "Payment"],
  rows,
  filtered
    ? "No deliveries match these filters."
    : "No deliveries yet. They appear when a payment changes status — or send a test event from Webhooks.",
  "Webhook deliveries"
)}
${pager(path, { ...view.filter }, view.hasMore && last !== undefined ? last.id : null)}`
  return appPage(frame, "deliveries", "Deliveries", body)
}

const attemptItem =
  (frame: AppFrame) =>
  (attempt: AttemptView): Html =>
    html`<li>
<strong>Attempt ${attempt.number}</strong> <span class="mode">${attempt.kind}</span> ${outcome(attempt)}
<div class="muted">${formatTime(attempt.started_at)} · ${attempt.duration_ms} ms · ${attempt.url === null ? "no URL" : shownUrl(frame, attempt.url)}</div>
${
  attempt.response_body === null || attempt.response_body.length === 0
    ? html`<div class="hint">No response body.</div>`
    : html`<div class="hint">Start of the response body (at most 1,024 bytes):</div><pre class="body">${attempt.response_body}</pre>`
}
</li>`

export const deliveryPage = (
  frame: AppFrame,
  view: { readonly delivery: DeliveryView; readonly body: string; readonly notice: string | null }
) => {
  const { delivery } = view
  const resend = frame.can("resend_deliveries")
    ? actionForm(frame.viewer, appPath(frame, `/deliveries/${delivery.id}/resend`), "Resend", "primary")
    : ""
  let pretty = view.body
  try {
    pretty = JSON.stringify(JSON.parse(view.body), null, 2)
  } catch {
    // Shown as stored.
  }
  const body = html`${pageHead(
    delivery.event,
    html`Delivery of event <code>${delivery.event_id}</code>. Resend makes one immediate manual attempt of the same event with a fresh signature; the schedule goes on as before.`,
    resend
  )}
${noticeBlock(view.notice)}
<div class="card">
<h2>Delivery</h2>
<dl class="summary">
<dt>Status</dt><dd>${badge(delivery.status)}</dd>
<dt>Mode</dt><dd>${modeBadge(delivery.mode)}</dd>
<dt>Payment</dt><dd><a href="${appPath(frame, `/payments/${delivery.payment_id}`)}"><code>${delivery.payment_id}</code></a></dd>
<dt>Created</dt><dd>${formatTime(delivery.created_at)}</dd>
<dt>Next attempt</dt><dd>${delivery.next_attempt_at === null ? (delivery.status === "pending" ? "—" : "none: the schedule is over") : formatTime(delivery.next_attempt_at)}</dd>
<dt>Attempts</dt><dd>${delivery.attempts.length}</dd>
</dl>
</div>
<div class="card">
<h2>Attempts</h2>
${
  delivery.attempts.length === 0
    ? html`<p class="empty">No attempt yet: the first one is made within seconds.</p>`
    : html`<ol class="timeline">${delivery.attempts.map(attemptItem(frame))}</ol>`
}
</div>
<div class="card">
<details><summary>Event body (what every attempt sends)</summary><pre class="body">${pretty}</pre></details>
</div>`
  return appPage(frame, "deliveries", `Delivery ${delivery.event}`, body)
}
