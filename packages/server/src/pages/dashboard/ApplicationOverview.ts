/**
 * An application's overview: its status, the last 30 days by mode, their charts (OverviewCharts), where to go next,
 * its settings and members.
 */
import { Money } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { membersTable } from "./ApplicationMembers.ts"
import { type AppFrame, appPage, appPath } from "./ApplicationShared.ts"
import { badge, formatTime, pageHead } from "./Components.ts"
import { type StatsView, statsSections } from "./OverviewCharts.ts"
import type { MemberView } from "./Views.ts"

export interface ModeCounts {
  readonly payments: number
  readonly paid: number
  readonly failedDeliveries: number
  readonly retryingDeliveries: number
}

export interface OverviewView {
  readonly counts: { readonly test: ModeCounts; readonly live: ModeCounts }
  /** The charts of the last 30 days, in one mode. */
  readonly stats: StatsView
  readonly members: ReadonlyArray<MemberView>
  readonly activeKeys: { readonly test: number; readonly live: number }
}

const statusText: Record<string, string> = {
  active: "Active: its keys work in both modes.",
  pending_review: "Pending review: an operator activates it before its keys work.",
  suspended: "Suspended by the operator: its keys are refused for now.",
  disabled: "Disabled: its keys are refused."
}

const stat = (label: string, value: number, href: string, hint: string): Html =>
  html`<div><div class="muted">${label}</div><div class="amount"><a href="${href}" style="color:inherit;text-decoration:none">${value}</a></div><div class="hint">${hint}</div></div>`

const modeCard = (frame: AppFrame, mode: "test" | "live", counts: ModeCounts, keys: number): Html => {
  const failing = counts.failedDeliveries + counts.retryingDeliveries
  return html`<div class="card">
<h2>${mode === "live" ? "Live mode" : "Test mode"}</h2>
<div class="grid">
${stat("Payments, last 30 days", counts.payments, appPath(frame, `/payments?mode=${mode}`), `${counts.paid} paid`)}
${stat(
  "Deliveries failing",
  failing,
  appPath(frame, `/deliveries?mode=${mode}&status=failed`),
  `${counts.failedDeliveries} failed in 30 days, ${counts.retryingDeliveries} being retried`
)}
${stat("Active API keys", keys, appPath(frame, "/keys"), keys === 0 ? `No ${mode} key yet` : `pk_${mode}_ keys`)}
</div>
</div>`
}

export const overviewPage = (frame: AppFrame, view: OverviewView) => {
  const { application } = frame
  const body = html`${pageHead(
    application.name,
    html`${badge(application.status)} ${statusText[application.status] ?? ""}`
  )}
${
  application.webhook_url === null
    ? html`<div class="notice warn">No webhook URL is set, so status changes reach nobody. <a href="${appPath(frame, "/webhooks")}">Set one under Webhooks</a>.</div>`
    : ""
}
${modeCard(frame, "test", view.counts.test, view.activeKeys.test)}
${modeCard(frame, "live", view.counts.live, view.activeKeys.live)}
${statsSections(view.stats, {
  modeHref: (mode) => appPath(frame, `?mode=${mode}`),
  deliveriesHref: appPath(frame, `/deliveries?mode=${view.stats.mode}&status=pending`)
})}
<div class="card">
<h2>Quick links</h2>
<ul>
<li><a href="${appPath(frame, "/keys")}">API keys</a> — create, roll and revoke the keys your servers use.</li>
<li><a href="${appPath(frame, "/webhooks")}">Webhooks</a> — where events go, the signing secret, a test event.</li>
<li><a href="${appPath(frame, "/deliveries")}">Deliveries</a> — every webhook attempt, with the receiver's answer.</li>
<li><a href="${appPath(frame, "/payments")}">Payments</a> — find a payment, follow its events, request a live refund.</li>
<li><a href="${appPath(frame, "/members")}">Members</a> — who may open this dashboard, and with which role.</li>
</ul>
</div>
<div class="card">
<h2>Settings</h2>
<p class="muted">Set by the operator of this Kassa installation; ask them to change these.</p>
<dl class="summary">
<dt>Application id</dt><dd><code>${application.id}</code></dd>
<dt>Methods</dt><dd>${application.methods.join(", ")}</dd>
<dt>Currencies</dt><dd>${application.currencies.join(", ")}</dd>
<dt>Amounts</dt><dd>${application.currencies.length === 0 ? "—" : `${Money.format(application.min_amount, application.currencies[0] ?? "EUR", "en")} to ${Money.format(application.max_amount, application.currencies[0] ?? "EUR", "en")}`}</dd>
<dt>Payment lifetime</dt><dd>${Math.round(application.payment_ttl_seconds / 60)} minutes</dd>
<dt>Return URL host</dt><dd>${application.return_url_host ?? "any (not restricted)"}</dd>
<dt>Rate limit</dt><dd>${application.rate_limit_per_minute} requests a minute per key</dd>
<dt>IP allow-list</dt><dd>${application.ip_allowlist.length === 0 ? "none (any address)" : application.ip_allowlist.join(", ")}</dd>
<dt>Created</dt><dd>${formatTime(application.created_at)}</dd>
</dl>
</div>
<h2>Members</h2>
${membersTable(frame, view.members)}
<p class="muted"><a href="${appPath(frame, "/members")}">${frame.can("manage_members") ? "Add, change or remove members" : "More about members and roles"}</a></p>`
  return appPage(frame, "overview", "Overview", body)
}
